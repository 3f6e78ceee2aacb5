"""The shape of the schema tables: what the generator writes and the decoder compiles.

These classes hold facts of the Kafka protocol (names, types, version ranges, tags), nothing about how to
render them. The spec reader (specs.py) makes them, for the generator and for users' spec files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

OPEN = 0x7FFF
"""Upper bound of an open range ("3+"): above any version a client can put in an int16."""

Kind = Literal["request", "response", "header", "data", "metadata", "coordinator-key", "coordinator-value"]
"""What a spec defines: an API's request or response, a header, a data schema (a payload inside a field), or a
record of one of Kafka's own topics (a KRaft-style metadata record, a coordinator's record key or value)."""
Framing = Literal["coordinator", "metadata"]
"""How a Kafka-internal topic's records carry their type and version (`InternalTopic`)."""


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; empty when lo > hi (the specs' "none")."""

    lo: int
    hi: int

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def __bool__(self) -> bool:
        return self.lo <= self.hi

    def __str__(self) -> str:
        if not self:
            return "none"
        if self.hi == OPEN:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Read the specs' notation: "none", "3", "3+", "3-7"."""
        text = text.strip()
        if text == "none":
            return NEVER
        if text.endswith("+"):
            return cls(int(text[:-1]), OPEN)
        lo, _, hi = text.partition("-")
        return cls(int(lo), int(hi or lo))


NEVER = Versions(1, 0)


@dataclass(frozen=True, slots=True)
class KafkaError:
    """One of Kafka's error codes: its name, whether clients retry it by themselves, and what it means."""

    code: int
    name: str
    retriable: bool
    meaning: str


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message or struct.

    `type` is a primitive name (bool, int8, int16, uint16, int32, uint32, int64, float64, uuid, string, bytes,
    records) or the name of a struct; `array` marks the specs' ``[]T``. For a struct, `fields` holds its
    fields, the same tuple object for every use of a common struct.
    """

    name: str
    type: str
    versions: Versions
    array: bool = False
    nullable: Versions = NEVER
    tagged: Versions = NEVER
    tag: int | None = None
    flexible: Versions | None = None
    """Overrides the message's flexible versions for this field (the request header's client id)."""
    default: str | None = None
    map_key: bool = False
    entity: str | None = None
    ignorable: bool = False
    fields: tuple[Field, ...] = ()
    secret: bool = False
    """It carries a credential (schema/secrets.py): redacted in every output unless --show-secrets."""
    config_value: bool = False
    """A config's value beside its `Name` (schema/secrets.py): redacted when the name says it holds a credential
    (sasl.jaas.config, ssl.keystore.password: decode/redaction.py's `secret_config`) or `IsSensitive` says so."""

    @property
    def is_struct(self) -> bool:
        return bool(self.fields) or self.type not in PRIMITIVES


@dataclass(frozen=True, slots=True)
class StructSpec:
    """A named struct shared by several fields of one message (the specs' commonStructs)."""

    name: str
    versions: Versions
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """One JSON definition: a request, a response, a header, or a data schema, from one spec snapshot."""

    name: str
    kind: Kind
    api_key: int | None
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...]
    common_structs: tuple[StructSpec, ...] = ()
    source: str = "trunk"
    """Which snapshot defined it: "trunk", or "3.9" for versions Kafka 4 removed; for a user's spec, its file."""
    latest_unstable: bool = False


def data_schema(name: str, valid: Versions, fields: tuple[Field, ...]) -> tuple[MessageSpec, ...]:
    """A payload Kafka writes without a spec, declared by hand (Connect's, Streams' AssignmentInfo, Schema Registry's
    JSON), as the tables hold a data schema: its one definition, never flexible."""
    return (MessageSpec(name, "data", None, valid, NEVER, fields),)


def pick(definitions: tuple[MessageSpec, ...], version: int) -> MessageSpec | None:
    """The definition that covers `version`: trunk first, then the older snapshot."""
    for message in definitions:
        if version in message.valid:
            return message
    return None


def version_set(message: MessageSpec) -> set[int]:
    return set(range(message.valid.lo, message.valid.hi + 1)) if message.valid else set()


def union(definitions: list[MessageSpec] | tuple[MessageSpec, ...]) -> tuple[MessageSpec, ...]:
    """Newest first; an older definition only if it has versions the newer ones lack (what `pick` relies on)."""
    kept: list[MessageSpec] = []
    covered: set[int] = set()
    for message in definitions:
        versions = version_set(message)
        if versions - covered:
            kept.append(message)
            covered |= versions
    return tuple(kept)


def all_versions(definitions: tuple[MessageSpec, ...]) -> tuple[int, ...]:
    return tuple(sorted(set().union(*(version_set(m) for m in definitions))))


def nearest_version(known: tuple[int, ...], version: int) -> int:
    """The closest known version: the newest for a future client, the oldest for anything older."""
    if version > known[-1]:
        return known[-1]
    if version < known[0]:
        return known[0]
    return max(v for v in known if v <= version)


@dataclass(frozen=True, slots=True)
class Api:
    """An API key with its request and response definitions across the snapshots."""

    key: int
    name: str
    requests: tuple[MessageSpec, ...]
    responses: tuple[MessageSpec, ...]
    versions: tuple[int, ...]
    """Every version any snapshot defines, ascending."""

    @property
    def min_version(self) -> int:
        return self.versions[0]

    @property
    def max_version(self) -> int:
        return self.versions[-1]

    def request(self, version: int) -> MessageSpec | None:
        return pick(self.requests, version)

    def response(self, version: int) -> MessageSpec | None:
        return pick(self.responses, version)

    def flexible(self, version: int) -> bool:
        message = pick(self.requests, version)
        return message is not None and version in message.flexible


PRIMITIVES = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes", "records"})


@dataclass(frozen=True, slots=True)
class RecordType:
    """One kind of record of a Kafka-internal topic: its type number, its name, and the definitions of its key and
    value (no key for metadata-framed records, whose key is null)."""

    type: int
    name: str
    key: tuple[MessageSpec, ...]
    value: tuple[MessageSpec, ...]


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """A topic Kafka writes itself (`__consumer_offsets`, `__transaction_state`, ...) and the records it holds.

    `framing` says how a record tells its type and version. "coordinator" (the group, transaction and share
    coordinators' logs): the key is an int16 record type then the key's fields; the value an int16 version then
    the value's fields, and a null value deletes the key (a tombstone). "metadata" (KRaft's metadata records and
    the remote log metadata topic): the value is an unsigned varint frame version (1), the record type and its
    version as unsigned varints, then the record's fields.
    """

    name: str
    framing: Framing
    types: Mapping[int, RecordType]
