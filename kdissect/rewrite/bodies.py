"""A Kafka frame anonymized: its header's client id and its body's names mapped to pseudonyms, its records' keys,
values and header values replaced (a record of Kafka's own topics written again by its schemas, its names mapped),
its secrets removed, and the body written again from the spec tables.

What a field holds is told by the specs' entity types (topicName, groupId, transactionalId) and otherwise by its name
(`STRINGS`, `BYTES`); some names depend on a field beside them (a ResourceName is a topic when its ResourceType says
so). Free text (error messages, reasons, config values) keeps its words, with the names and addresses it mentions
replaced. Bytes no schema explains (an unknown tagged field, a body no spec reads, an embedded payload in no format
`BYTES` names) become zeros of the same length. A body that did not decode whole cannot be written again
from its fields: everything after its header becomes zeros, so it reads back as the same kind of damage.
"""

from __future__ import annotations

import struct
from typing import Any

from kdissect.decode.body import Body
from kdissect.decode.redaction import Redacted
from kdissect.events import Message, RequestHeader
from kdissect.records.values import KafkaRecord, RecordSet
from kdissect.rewrite.pseudonyms import Pseudonyms
from kdissect.rewrite.record_sets import Fill, Unwritable, anonymized_records
from kdissect.schema import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, Catalog, MessageSpec, pick
from kdissect.schema.connect_protocol import CONNECT_ASSIGNMENT, CONNECT_METADATA
from kdissect.schema.encoder import Encoder
from kdissect.schema.generated_extras import STREAMS_SUBSCRIPTION_INFO
from kdissect.schema.model import OPEN, Field, Versions, nearest_version
from kdissect.schema.streams_assignment import ASSIGNMENT_INFO
from kdissect.schema.tree import Struct, UnknownTag
from kdissect.schema.versioned import version_width
from kdissect.wire import write_uvarint

ENTITIES = {"topicName": "topic", "groupId": "group", "transactionalId": "txn"}
STRINGS: dict[str, str] = {
    "ClientId": "client",
    "GroupId": "group",
    "Topics": "topic",
    "SubscribedTopicNames": "topic",
    "MemberId": "member",
    "Leader": "member",
    "GroupInstanceId": "instance",
    "InstanceId": "instance",
    "Host": "host",
    "HostName": "host",
    "V0Host": "host",
    "ClientHost": "host",
    "HostFilter": "host",
    "Rack": "rack",
    "RackId": "rack",
    "Principal": "principal",
    "PrincipalName": "principal",
    "OwnerPrincipalName": "principal",
    "TokenRequesterPrincipalName": "principal",
    "PrincipalFilter": "principal",
    "User": "principal",
    "SubscribedTopicRegex": "pattern",
    "SourceTopicRegex": "pattern",
    "TransactionalIdPattern": "pattern",
    "Url": "name",
    "LeaderUrl": "name",
    "Connector": "name",
    "Group": "group",
    "Topic": "topic",
    "TransactionalId": "txn",
    "topic": "topic",
    "host": "host",
    "namedTopology": "name",
    "ProcessId": "name",
    "Stores": "name",
    "Successors": "name",
    "SubtopologyId": "name",
    "ErrorMessage": "text",
    "AcknowledgeErrorMessage": "text",
    "BatchIndexErrorMessage": "text",
    "StatusDetail": "text",
    "Reason": "text",
    "Value": "text",
    "LogDir": "text",
    "Path": "text",
    "CommittedMetadata": "fill",
    "Metadata": "fill",
    "TokenId": "fill",
    "ResourceName": "resource",
    "ResourceNameFilter": "resource",
    "EntityName": "entity",
    "CoordinatorKeys": "coordinator",
}
"""Strings without an entity type that hold the owner's names or words, by field name; any other string (config and
feature names, states, protocol and mechanism names, the cluster id) says nothing of the owner and is kept."""
SUBSCRIPTIONS = (CONSUMER_PROTOCOL_SUBSCRIPTION, CONNECT_METADATA)
ASSIGNMENTS = (CONSUMER_PROTOCOL_ASSIGNMENT, CONNECT_ASSIGNMENT)
BYTES = {
    "Metadata": SUBSCRIPTIONS,
    "MemberMetadata": SUBSCRIPTIONS,
    "Assignment": ASSIGNMENTS,
    "MemberAssignment": ASSIGNMENTS,
    "Allocation": (CONNECT_ASSIGNMENT,),
    "UserData": (STREAMS_SUBSCRIPTION_INFO, ASSIGNMENT_INFO),
}
"""Bytes that carry a group's payload in a format declared as spec tables, by the group's protocol type (decode/
embedded.py reads it): the consumer protocol (and in a Kafka Streams group its user data, Streams' own), or Kafka
Connect's (a worker's metadata holds its allocation, an assignment). Written again from the struct read, with its
names mapped; which format it is the struct's own fields say. Any other bytes field (a plain consumer's user data,
Schema Registry's JSON, HMACs, salts, telemetry, an envelope's request) becomes zeros."""
RESOURCE_TYPES = {2: "topic", 3: "group", 5: "txn", 6: "name", 7: "principal"}
"""ACL and config resource types whose names are the owner's; brokers (4, 8) are named by their ids."""
ENTITY_TYPES = {"user": "principal", "client-id": "client", "ip": "host"}
COORDINATOR_TYPES = {0: "group", 1: "txn"}
KEPT_TRAILING = 8
"""Bytes after a body that are kept as they were (librdkafka writes 3 after its Metadata v12 requests, which Wireshark
reads); more could carry anything, and become zeros."""
_I16 = struct.Struct(">h")
ANY_VERSION = Versions(0, OPEN)
JSON_NAMES = {"master": "Leader"}
"""JSON members named otherwise than the spec fields of the same meaning: Schema Registry's leader is its `master`."""


class Anonymizer:
    """Frames in, anonymized frames out, all with one set of pseudonyms."""

    def __init__(self, catalog: Catalog, names: Pseudonyms, fill: Fill) -> None:
        self.catalog = catalog
        self.names = names
        self.fill = fill
        self.encoder = Encoder()
        self._guessed = {api.name + "Response": api.key for api in catalog.apis.values()}
        """The API key of each response schema, for orphan responses read by the schema they were found to fit."""

    def request(self, message: Message) -> bytes:
        """A request frame, size prefix included."""
        header = message.header
        data = message.frame.data
        if not isinstance(header, RequestHeader):
            return _framed(bytes(len(data)))
        head = data[: header.length]
        if header.version >= 1:
            length = _I16.unpack_from(data, 8)[0]
            end = 10 + max(length, 0)
            client = None if header.client_id is None else self.names.name("client", header.client_id).encode()
            head = data[:8] + (_I16.pack(-1) if client is None else _I16.pack(len(client)) + client) + data[end : header.length]
        return _framed(head + self._body(message, header.api_key, "request"))

    def response(self, message: Message, request: Message | None) -> bytes:
        """A response frame: its header as it was, its body anonymized by the schema its request names (an orphan's
        by the one its bytes were found to read whole as, if any)."""
        header, body = message.header, message.body
        data = message.frame.data
        if header is None:
            return _framed(bytes(len(data)))
        if request is not None and isinstance(request.header, RequestHeader):
            return _framed(data[: header.length] + self._body(message, request.header.api_key, "response"))
        guessed = self._guessed.get(body.schema) if isinstance(body, Body) and body.fields is not None else None
        rest = self._body(message, guessed, "response", True) if guessed is not None else bytes(len(data) - header.length)
        return _framed(data[: header.length] + rest)

    def _body(self, message: Message, api_key: int, direction: str, guessed: bool = False) -> bytes:
        """The body written again, by the definition of the version it was read at; zeros as long as it was when it
        cannot be (an unknown API, a newer version than the specs', a body read only in part)."""
        header, body = message.header, message.body
        assert header is not None
        size = len(message.frame.data) - header.length
        api = self.catalog.api(api_key)
        if api is None or not isinstance(body, Body) or body.fields is None or (not guessed and (body.assumed or body.raw is not None)):
            return bytes(size)
        definition = api.request(body.version) if direction == "request" else api.response(body.version)
        if definition is None:
            return bytes(size)
        if any(d.severity == "error" or d.code == "body.array-cut" for d in message.diagnostics):
            if {d.code for d in message.diagnostics if d.severity == "error"} == {"body.malformed"} and definition.fields:
                return b""  # a body cut short reads back cut short (zeros could read as a whole one and more)
            return bytes(size)
        at = next((d.offset for d in message.diagnostics if d.code == "body.trailing-bytes" and d.offset), len(message.frame.data))
        trailing = message.frame.data[at:]
        try:
            self._struct(definition.fields, body.version, body.fields)
            out = self.encoder.encode(definition.fields, body.version, body.version in definition.flexible, body.fields)
        except Unwritable:
            return bytes(size)
        return out + (trailing if len(trailing) <= KEPT_TRAILING else bytes(len(trailing)))

    def _struct(self, fields: tuple[Field, ...], version: int, value: Struct) -> None:
        for f in fields:
            if version not in f.versions or f.name not in value.names:
                continue
            i = value.names.index(f.name)
            value.values[i] = self._field(f, version, value.values[i], value)
        for i, item in enumerate(value.values):
            if isinstance(item, UnknownTag):
                value.values[i] = UnknownTag(item.tag, bytes(len(item.data)), item.offset)

    def _field(self, f: Field, version: int, value: Any, holder: Struct) -> Any:
        if value is None:
            return None
        if isinstance(value, Redacted):
            return None if version in f.nullable else ("" if f.type == "string" else bytes(value.size))
        if f.is_struct:
            for item in value if f.array else (value,):
                if isinstance(item, Struct):
                    self._struct(f.fields, version, item)
            return value
        if f.type == "string":
            return [self._string(f, s, holder) for s in value] if f.array else self._string(f, value, holder)
        if f.type == "bytes":
            return self._bytes(f, value, holder)
        if f.type == "records" and isinstance(value, RecordSet):
            return anonymized_records(value, self.fill, self._internal)
        return value

    def _string(self, f: Field, value: str | None, holder: Struct) -> str | None:
        if value is None:
            return None
        kind = ENTITIES.get(f.entity or "") or STRINGS.get(f.name) or STRINGS.get(f.name[:1].upper() + f.name[1:])
        if f.name == "Key":  # FindCoordinator's key, a group or a transactional id as its KeyType says; or a quota's key
            kind = "coordinator" if "KeyType" in holder.names else "known"
        if kind == "resource":
            kind = RESOURCE_TYPES.get(holder.get("ResourceType") or holder.get("ResourceTypeFilter") or 0)
            if kind is None:
                return self.names.known(value) or value
        elif kind == "entity":
            kind = ENTITY_TYPES.get(holder.get("EntityType") or "", "name")
        elif kind == "coordinator":
            kind = COORDINATOR_TYPES.get(holder.get("KeyType") or 0, "group")
        if kind is None:
            return value
        if kind == "known":
            return self.names.known(value) or value
        if kind == "text":
            return self.names.text(value)
        if kind == "fill":
            return "m" * len(value)
        if kind == "principal" and ":" in value:
            prefix, _, name = value.partition(":")
            return f"{prefix}:{self.names.name(kind, name)}"
        return self.names.name(kind, value)

    def _bytes(self, f: Field, value: bytes, holder: Struct) -> bytes:
        embedded = holder.annotations.get(f.name) if holder.annotations else None
        if isinstance(embedded, Struct) and not (embedded.annotations and "problem" in embedded.annotations):
            for schema in BYTES.get(f.name, ()):
                read = _read_as(schema, embedded)
                if read is not None:
                    return self._embedded(schema, embedded, *read)
            if value[:1] == b"{":
                return self._json(value)
        return bytes(len(value))

    def _internal(self, reading: KafkaRecord, value: bytes | None) -> tuple[bytes, bytes | None] | None:
        """A record of one of Kafka's own topics (records/internal.py) written again from its reading, its names
        mapped: a coordinator's key (record type, then fields) and value (version, then fields), or a metadata record's
        framed value; None when its reading is not whole."""
        found = _internal_type(reading)
        if found is None:
            return None
        framing, record_type = found
        if framing == "metadata":
            if reading.value is None or not reading.value.names or reading.value.names[0] != "Version":
                return None
            version = reading.value.values[0]
            definition = pick(record_type.value, version)
            if definition is None:
                return None
            fields = Struct(reading.value.names[1:], reading.value.values[1:])
            self._struct(definition.fields, version, fields)
            body = self.encoder.encode(definition.fields, version, version in definition.flexible, fields)
            return b"", write_uvarint(1) + write_uvarint(reading.type) + write_uvarint(version) + body
        key_definition = pick(record_type.key, 0)
        if reading.key is None or key_definition is None:
            return None
        self._struct(key_definition.fields, 0, reading.key)
        key = _I16.pack(reading.type) + self.encoder.encode(key_definition.fields, 0, 0 in key_definition.flexible, reading.key)
        if value is None:
            return key, None  # a tombstone
        if reading.value is None:
            return None
        read = _read_as(record_type.value, reading.value)
        if read is None:
            return None
        return key, self._embedded(record_type.value, reading.value, *read)

    def _json(self, value: bytes) -> bytes:
        """A payload read as a JSON object (Schema Registry's identities and assignments) written again as compact
        JSON, its hosts mapped to pseudonyms and its other members kept (ports, schemes, versions, flags)."""
        import json

        def mapped(item: Any, key: str | None = None) -> Any:
            if isinstance(item, dict):
                return {k: mapped(v, k) for k, v in item.items()}
            if isinstance(item, list):
                return [mapped(v) for v in item]
            if isinstance(item, str) and key is not None:
                name = JSON_NAMES.get(key) or key[:1].upper() + key[1:]  # Schema Registry's camelCase
                return self._string(Field(name, "string", ANY_VERSION), item, Struct((), [])) if name in STRINGS else item
            return item

        try:
            found = json.loads(value)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return bytes(len(value))
        return json.dumps(mapped(found), separators=(",", ":")).encode()

    def _embedded(self, schema: tuple[MessageSpec, ...], value: Struct, used: int, width: int, in_band: bool) -> bytes:
        """A group's payload written again: its version first (its struct's first field, or `width` bytes before
        it), then its struct at the version read."""
        definition = pick(schema, used)
        assert definition is not None
        fields = value if in_band else Struct(value.names[1:], value.values[1:])
        fields.annotations = value.annotations
        self._struct(definition.fields, used, fields)
        encoded = self.encoder.encode(definition.fields, used, used in definition.flexible, fields)
        return encoded if in_band else value.values[0].to_bytes(width, "big", signed=True) + encoded


def _internal_type(reading: KafkaRecord) -> tuple[str, Any] | None:
    """(framing, record type) of the internal topic whose record type `reading` was read as."""
    from kdissect.schema.generated_extras import INTERNAL_TOPICS

    for topic in INTERNAL_TOPICS.values():
        record_type = topic.types.get(reading.type)
        if record_type is not None and record_type.name == reading.record:
            return topic.framing, record_type
    return None


def _read_as(schema: tuple[MessageSpec, ...], value: Struct) -> tuple[int, int, bool] | None:
    """(the version to write at, the bytes the version takes, whether it is the definition's first field) when
    `value` is what reading a payload of `schema` makes (`versioned.read_payload`: its version, then the fields of
    that version in order); None when it is not."""
    width, in_band = version_width(schema[0])
    if not value.names or not isinstance(value.values[0], int) or value.names[0] != (schema[0].fields[0].name if in_band else "Version"):
        return None
    known = tuple(sorted({v for d in schema for v in range(d.valid.lo, d.valid.hi + 1)}))
    used = nearest_version(known, value.values[0])
    definition = pick(schema, used)
    if definition is None:
        return None
    names = [f.name for f in definition.fields if used in f.versions and used not in f.tagged]
    read = [n for n, v in zip(value.names, value.values) if not isinstance(v, UnknownTag)]
    return (used, width, in_band) if read == (names if in_band else ["Version", *names]) else None


def filler(drop: bool) -> Fill:
    """What replaces record keys, values and header values: bytes of the same length (`k`, `v`, `h` repeated), or
    nothing at all; null stays null."""
    letters = {"key": b"k", "value": b"v", "header": b"h"}

    def fill(data: bytes | None, kind: str) -> bytes | None:
        if data is None:
            return None
        return b"" if drop else letters[kind] * len(data)

    return fill


def _framed(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame
