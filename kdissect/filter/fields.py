"""The field table: every name a filter or `-e` can use, its kind, and how to read its values.

A field gives a list of values per exchange (empty when absent; several for `topic`, `error` or a path through
arrays). Exchange fields read the core's values; `request.` and `response.` paths walk a decoded body by the
specs' field names, into records fields (`records`, `batches`, record `key`, `value`, `headers`) and into the
consumer-protocol payloads kdissect reads out of JoinGroup, SyncGroup and DescribeGroups.

Fields known from headers alone also have an `early` reader, over (connection, request, response or None),
which says None when the answer needs what is not known yet: the core's hook uses it to skip bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from kdissect.decode.body import Body
from kdissect.events import ConnectionInfo, Exchange, Message, Status
from kdissect.events.exchange import MALFORMED
from kdissect.filter.errors import FilterError, did_you_mean
from kdissect.filter.lexer import Token
from kdissect.records.values import Control, LegacyMessage, Record, RecordBatch, RecordSet
from kdissect.schema import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    ApiKey,
    Catalog,
    Field,
    MessageSpec,
    schema_registry,
)
from kdissect.schema.connect_protocol import CONNECT_ASSIGNMENT, CONNECT_METADATA
from kdissect.schema.streams_assignment import ASSIGNMENT_INFO
from kdissect.schema.tree import Struct

Values = Callable[[Exchange], list]
Early = Callable[[ConnectionInfo, Message, "Message | None"], "list | None"]

INT, FLOAT, TIME, TEXT, BYTES, BOOL, API, ERROR, STATUS, STRUCT = (
    "int",
    "float",
    "time",
    "text",
    "bytes",
    "bool",
    "api",
    "error",
    "status",
    "struct",
)
"""Kinds of values. `api` and `error` are numbers with names (API keys, error codes); `status` is a word;
`float` is milliseconds (latency); `time` nanoseconds since the epoch; `struct` anything with fields under it."""
NUMERIC = frozenset({INT, FLOAT, TIME, API, ERROR})
STATUSES: tuple[str, ...] = get_args(Status)


@dataclass(frozen=True, slots=True)
class Resolved:
    """A field as a filter uses it: its name as written, kinds, and readers."""

    name: str
    kinds: frozenset[str]
    values: Values
    early: Early | None
    """None when the field needs decoded bodies."""
    milliseconds: bool = False
    """A duration in ms (latency_ms, a spec field named *Ms): literals may carry ms, s or us."""
    names: Mapping[int, str] | None = None
    """For an API field, the names of the run's APIs (its catalogue's): how literals and `contains` read its keys."""


@dataclass(frozen=True, slots=True)
class ExchangeField:
    kind: str
    about: str
    values: Values
    early: Early | None = None


def _one(value: Any) -> list:
    return [] if value is None else [value]


def _bodies(exchange: Exchange) -> list[Body]:
    return [m.body for m in (exchange.request, exchange.response) if m is not None and isinstance(m.body, Body)]


def _ms(ns: int | None) -> list:
    return [] if ns is None else [ns / 1e6]


def _latency(exchange: Exchange) -> list:
    return _ms(exchange.latency)


def _early_latency(info: ConnectionInfo, request: Message, response: Message | None) -> list | None:
    return None if response is None else [(response.ts - request.ts) / 1e6]


def _endpoint(side: str, part: str | None) -> ExchangeField:
    """client / broker and their .address and .port: known from the connection."""
    if part is None:
        read: Callable[[ConnectionInfo], Any] = lambda info: str(getattr(info, side))
    else:
        read = lambda info: getattr(getattr(info, side), part)
    about = {None: f"the {side}'s address and port, as 127.0.0.1:9092 or [::1]:9092", "address": f"the {side}'s IP address"}
    return ExchangeField(
        INT if part == "port" else TEXT,
        about.get(part, f"the {side}'s TCP port"),
        lambda ex: [read(ex.connection)],
        lambda info, request, response: [read(info)],
    )


def _header(kind: str, about: str, of_exchange: str, of_header: str) -> ExchangeField:
    """A field of the request header: the exchange's property, and early the header's own attribute."""
    return ExchangeField(
        kind,
        about,
        lambda ex: _one(getattr(ex, of_exchange)),
        lambda info, request, response: _one(getattr(request.header, of_header)),
    )


def _early_status(info: ConnectionInfo, request: Message, response: Message | None) -> list | None:
    """Malformed once a frame or header already says so; ok, error and a body that cannot be read are told only
    by decoding the bodies, so until then the status is unknown."""
    if response is None:
        return None
    if any(d.code in MALFORMED for message in (request, response) for d in message.diagnostics):
        return ["malformed"]
    return None


EXCHANGE_FIELDS: dict[str, ExchangeField] = {
    "api": _header(API, "the API, by name (Fetch) or key (1); contains and matches read the name", "api_key", "api_key"),
    "api_key": _header(INT, "the API key, a number", "api_key", "api_key"),
    "version": _header(INT, "the API version of the request", "api_version", "api_version"),
    "correlation_id": _header(INT, "the correlation id", "correlation_id", "correlation_id"),
    "client_id": _header(TEXT, "the client id of the request header", "client_id", "client_id"),
    "id": ExchangeField(INT, "the exchange's number, as read lists it", lambda ex: [ex.id]),
    "status": ExchangeField(
        STATUS,
        "ok, error, malformed, unanswered, no-response-expected, orphan-response or unreadable",
        lambda ex: [ex.status],
        _early_status,
    ),
    "latency_ms": ExchangeField(
        FLOAT, "milliseconds from the request's last byte to the response's (ms, s, us suffixes)", _latency, _early_latency
    ),
    "queue_ms": ExchangeField(
        FLOAT,
        "milliseconds the request waited behind earlier requests of its connection (a broker takes them one at a time)",
        lambda ex: _ms(ex.queued),
    ),
    "service_ms": ExchangeField(
        FLOAT, "the latency less the time in line: the broker's own time on the request", lambda ex: _ms(ex.service)
    ),
    "queued_behind": ExchangeField(INT, "the exchange this one waited for in line, when it waited", lambda ex: _one(ex.ahead)),
    "time": ExchangeField(
        TIME,
        'when the exchange started: "2026-11-21T13:34:02Z" (UTC), or seconds since the epoch',
        lambda ex: [ex.ts],
        lambda info, request, response: [request.ts],
    ),
    "connection": ExchangeField(
        INT,
        "the connection's number, as the flows table lists it",
        lambda ex: [ex.connection.id],
        lambda info, request, response: [info.id],
    ),
    "client": _endpoint("client", None),
    "client.address": _endpoint("client", "address"),
    "client.port": _endpoint("client", "port"),
    "broker": _endpoint("broker", None),
    "broker.address": _endpoint("broker", "address"),
    "broker.port": _endpoint("broker", "port"),
    "topic": ExchangeField(
        TEXT,
        "the topics the exchange names, each once (topic ids by their names)",
        lambda ex: list(dict.fromkeys(t for b in _bodies(ex) for t in b.topics)),
    ),
    "group": ExchangeField(
        TEXT, "the consumer groups the exchange names, each once", lambda ex: list(dict.fromkeys(g for b in _bodies(ex) for g in b.groups))
    ),
    "error": ExchangeField(
        ERROR,
        "any error code in either body, by name (NOT_LEADER_OR_FOLLOWER) or number (6)",
        lambda ex: [e.code for b in _bodies(ex) for e in b.errors],
    ),
    "diagnostic": ExchangeField(
        TEXT, "any diagnostic code of the exchange (body.malformed, frame.incomplete, ...)", lambda ex: [d.code for d in ex.diagnostics]
    ),
}
ALIASES = {"api_name": "api", "api_version": "version", "key": "record.key", "value": "record.value"}
"""The JSON layout's names for the same fields, and a record's key and value by their own names."""
SIDES = ("request", "response")


# -- paths into bodies: what the specs allow, for checking names and kinds before anything runs ----------------


@dataclass
class PathNode:
    """Every field that can stand at one place of a body, over all APIs and versions."""

    kinds: set[str]
    children: dict[str, PathNode]
    milliseconds: bool = False


def _node(kinds: set[str], children: dict[str, PathNode] | None = None) -> PathNode:
    return PathNode(kinds, children if children is not None else {})


def _records_tree() -> PathNode:
    """What a records field holds, by the JSON layout's names: batches (v2 batches and legacy messages) and
    `records`, every record of every batch (v2 records and legacy messages, wrappers opened)."""
    ints = lambda *names: {name: _node({INT}) for name in names}
    header = {"key": _node({TEXT, BYTES}), "value": _node({BYTES})}
    control = {"version": _node({INT}), "type": _node({INT}), "name": _node({TEXT}), "schema": _node({TEXT}), "value": _node({STRUCT})}
    legacy = {
        **ints("offset", "message_size", "crc", "magic", "attributes", "timestamp", "compressed_size", "uncompressed_size"),
        "crc_valid": _node({BOOL}),
        "codec": _node({TEXT}),
        "timestamp_type": _node({TEXT}),
        "key": _node({BYTES}),
        "value": _node({BYTES}),
    }
    key, value = _internal_readings()
    legacy["key"], legacy["value"] = key, value
    record = {
        **ints("offset", "timestamp", "offset_delta", "timestamp_delta", "attributes"),
        "key": key,
        "value": value,
        "headers": _node({STRUCT}, header),
        "control": _node({STRUCT}, control),
    }
    batch = {
        **legacy,
        **ints(
            "base_offset",
            "batch_length",
            "partition_leader_epoch",
            "last_offset_delta",
            "base_timestamp",
            "max_timestamp",
            "producer_id",
            "producer_epoch",
            "base_sequence",
            "record_count",
        ),
        **{name: _node({BOOL}) for name in ("transactional", "control", "has_delete_horizon")},
        "records": _node({STRUCT}, record),
    }
    batch["messages"] = _node({STRUCT}, batch)  # a legacy wrapper's inner messages, of the same shape
    return _node(
        {STRUCT},
        {
            "size": _node({INT}),
            "truncated": _node({INT}),
            "batches": _node({STRUCT}, batch),
            "records": _node({STRUCT}, {**legacy, **record}),
        },
    )


def _internal_readings() -> tuple[PathNode, PathNode]:
    """A record's key and value, and under them what they hold in Kafka's own topics (records/internal.py): every
    record type's key fields, and its value's version and fields."""
    from kdissect.schema.generated_extras import INTERNAL_TOPICS

    key, value = _node({BYTES}), _node({BYTES}, {"Version": _node({INT})})
    seen: set[tuple[int, int]] = set()
    for topic in INTERNAL_TOPICS.values():
        for kind in topic.types.values():
            for spec in kind.key:
                _merge(key.children, spec.fields, spec.name, _node({STRUCT}), seen, {})
            for spec in kind.value:
                _merge(value.children, spec.fields, spec.name, _node({STRUCT}), seen, {})
    return key, value


def _annotated() -> dict[tuple[int | str, str], tuple[MessageSpec, ...]]:
    """Bytes fields whose reading a path can go into, by (API key, or the payload spec that holds them; field name):
    group payloads in every group protocol kdissect reads, and the payloads inside those."""
    from kdissect.schema.generated_extras import STREAMS_SUBSCRIPTION_INFO

    subscriptions = CONSUMER_PROTOCOL_SUBSCRIPTION + CONNECT_METADATA + schema_registry.IDENTITY
    assignments = CONSUMER_PROTOCOL_ASSIGNMENT + CONNECT_ASSIGNMENT + schema_registry.ASSIGNMENT
    return {
        (ApiKey.JOIN_GROUP, "Metadata"): subscriptions,
        (ApiKey.SYNC_GROUP, "Assignment"): assignments,
        (ApiKey.DESCRIBE_GROUPS, "MemberMetadata"): subscriptions,
        (ApiKey.DESCRIBE_GROUPS, "MemberAssignment"): assignments,
        ("ConsumerProtocolSubscription", "UserData"): STREAMS_SUBSCRIPTION_INFO,
        ("ConsumerProtocolAssignment", "UserData"): ASSIGNMENT_INFO,
        ("ConnectProtocolMetadata", "Allocation"): CONNECT_ASSIGNMENT,
    }


INTS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})


def _kind(f: Field) -> str:
    if f.is_struct or f.type == "records":
        return STRUCT
    if f.type in INTS:
        return ERROR if f.name.endswith("ErrorCode") else INT
    return {"float64": FLOAT, "string": TEXT, "uuid": TEXT, "bytes": BYTES, "bool": BOOL}[f.type]


def _merge(
    into: dict[str, PathNode],
    fields: tuple[Field, ...],
    owner: int | str,
    records: PathNode,
    seen: set[tuple[int, int]],
    annotated: dict[tuple[int | str, str], tuple[MessageSpec, ...]],
) -> None:
    if (id(into), id(fields)) in seen:  # common structs are shared tuples: one visit each per place they stand
        return
    seen.add((id(into), id(fields)))
    for f in fields:
        node = into.setdefault(f.name, _node(set()))
        kind = _kind(f)
        node.kinds.add(kind)
        node.milliseconds = node.milliseconds or (kind == INT and f.name.endswith("Ms"))
        if f.type == "records":
            for name, child in records.children.items():
                node.children.setdefault(name, child)
        elif f.is_struct:
            _merge(node.children, f.fields, owner, records, seen, annotated)
        elif (owner, f.name) in annotated:
            for spec in annotated[(owner, f.name)]:
                _merge(node.children, spec.fields, spec.name, records, seen, annotated)


def body_tree(side: str, catalog: Catalog) -> PathNode:
    """Every path a request (or response) body can hold, over every API and version the catalogue knows; made once
    per catalogue and side."""
    return catalog.derived((body_tree, side), lambda c: _body_tree(side, c))


def _body_tree(side: str, catalog: Catalog) -> PathNode:
    root = _node({STRUCT})
    records = _records_tree()
    annotated = _annotated()
    for api in catalog.apis.values():
        specs: tuple[MessageSpec, ...] = api.requests if side == "request" else api.responses
        seen: set[tuple[int, int]] = set()
        for spec in specs:
            _merge(root.children, spec.fields, api.key, records, seen, annotated)
    return root


# -- reading a path at run time: by the names the decoded values carry ------------------------------------------


def _step(name: str, last: bool) -> Callable[[list], list]:
    """From each node, the values named `name`; lists are flattened. Past the end of a bytes field read by
    kdissect (a consumer-protocol payload), the path goes on in its reading."""
    header_index = {"key": 0, "value": 1}.get(name)

    def step(nodes: list) -> list:
        out: list = []
        for node in nodes:
            kind = type(node)
            if kind is Struct:
                try:
                    value = node.values[node.names.index(name)]
                except ValueError:
                    continue
                if not last and node.annotations and type(node.annotations.get(name)) is Struct:
                    value = node.annotations[name]
            elif kind is RecordSet:
                if name == "records":
                    out.extend(node.records())
                    continue
                value = getattr(node, name, None)
            elif kind is tuple:  # a record header: (key, value)
                if header_index is None:
                    continue
                value = node[header_index]
            elif kind in (Record, RecordBatch, LegacyMessage, Control):
                value = getattr(node, name, None)
                if not last and header_index is not None and kind is not RecordBatch and kind is not Control:
                    reading = node.reading  # a record of Kafka's own topics: the path goes on in what its key or value holds
                    if reading is not None:
                        value = getattr(reading, name)
            else:
                continue
            if value is None:
                continue
            if type(value) is list or type(value) is tuple:
                out.extend(value)
            else:
                out.append(value)
        return out

    return step


def _path_values(side: str, names: list[str]) -> Values:
    steps = [_step(name, i == len(names) - 1) for i, name in enumerate(names)]
    index = SIDES.index(side)

    def values(exchange: Exchange) -> list:
        message = exchange.response if index else exchange.request
        if message is None:
            return []
        body = message.body
        if type(body) is not Body or body.fields is None:
            return []
        nodes: list = [body.fields]
        for step in steps:
            nodes = step(nodes)
            if not nodes:
                break
        return nodes

    return values


def resolve(token: Token, catalog: Catalog, values: Any = None) -> Resolved:
    """The field a word names, in the catalogue's APIs; a FilterError at the word (or the part of the path) that names
    nothing. Record fields read keys and values with `values` (a `values.reader.ValueReader`)."""
    name = ALIASES.get(token.text, token.text)
    if name == "record" or name.startswith("record."):
        from kdissect.filter.record_fields import resolve_record

        return resolve_record(token, name, values)
    known = EXCHANGE_FIELDS.get(name)
    if known is not None:
        names = catalog.names if known.kind == API else None
        return Resolved(token.text, frozenset({known.kind}), known.values, known.early, known.kind == FLOAT, names)
    side, _, rest = name.partition(".")
    if side not in SIDES:
        raise FilterError(f"unknown field {token.text!r}{_suggest(token.text, catalog)}", token.column)
    if not rest:
        raise FilterError(f"{side} is a side, not a field: name a field of its body, such as {side}.{_example(side)}", token.column)
    node = body_tree(side, catalog)
    parts = rest.split(".")
    offset = len(side) + 1
    for i, part in enumerate(parts):
        child = node.children.get(part)
        if child is None:
            where = ".".join([side, *parts[:i]])
            hint = did_you_mean(part, node.children)
            if not node.children:
                raise FilterError(f"{where} has no fields under it", token.column + offset)
            raise FilterError(f"no {side} has a field {part!r} under {where}{hint}", token.column + offset)
        node = child
        offset += len(part) + 1
    return Resolved(token.text, frozenset(node.kinds), _path_values(side, parts), None, milliseconds=node.milliseconds)


def _suggest(word: str, catalog: Catalog) -> str:
    """Near field names; a body field written without its side gets the side."""
    first = word.split(".")[0]
    sides = [f"{side}.{word}" for side in SIDES if first in body_tree(side, catalog).children]
    if sides:
        return " (did you mean " + " or ".join(repr(s) for s in sides) + "?)"
    return did_you_mean(word, [*EXCHANGE_FIELDS, *ALIASES, *(f"{side}." for side in SIDES)])


def _example(side: str) -> str:
    return "Acks" if side == "request" else "ThrottleTimeMs"
