"""The JSON layout: every value the core and decoders produce, made JSON here and nowhere else.

The layout is versioned (`LAYOUT`) and documented in docs/json.md; scripts rely on it. Bytes are lossless: a
value that is UTF-8 text without control characters is a JSON string, anything else {"base64": "..."}.
Field names are the Kafka specs' own. What kdissect reads into a field (a topic name for a TopicId, the
consumer-protocol struct inside JoinGroup metadata) sits beside the fields under "_kdissect".
"""

from __future__ import annotations

import binascii
import dataclasses
import json
from datetime import datetime, timezone
from operator import attrgetter
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator

import orjson

from kdissect.decode.body import Body
from kdissect.decode.redaction import Redacted
from kdissect.diagnostic import Diagnostic
from kdissect.events import (
    ConnectionEnd,
    ConnectionInfo,
    Endpoint,
    Exchange,
    Message,
    Notice,
    RequestHeader,
    ResponseHeader,
    SaslTokenHeader,
    TaggedField,
)
from kdissect.records.values import LegacyMessage, Record, RecordBatch, RecordSet, format_timestamp
from kdissect.schema import error_name
from kdissect.schema.tree import Struct, UnknownTag
from kdissect.values.plain import CANDIDATES as _CANDIDATES
from kdissect.values.plain import SCHEMAS_TOPIC, maybe_more, named_by_header
from kdissect.views.summary import SASL_TOKEN_LABEL

if TYPE_CHECKING:
    from kdissect.doctor.engine import Report
    from kdissect.doctor.finding import Finding
    from kdissect.values.reader import Decoded, ValueReader

LAYOUT = 3
"""3: a finding's evidence says `count`, `unit` and `filter` (2 had `exchange_count`), and reports end with a
verdict object. 2: `status` says `error` and `malformed` (1 called every paired exchange `ok`); each side tells
its `holes`."""
_CONTROL = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
"""The control characters a text value may not hold (tab, newline and carriage return it may)."""
_BASE64 = binascii.b2a_base64
MEMO = 4096
"""Entries each memo keeps before it starts again: a capture's timestamps move on, its connections end."""


def encode_bytes(data: bytes | None) -> str | dict[str, str] | None:
    if data is None:
        return None
    if len(data.translate(None, _CONTROL)) == len(data):  # UTF-8 spells a control character as that byte alone
        try:
            return data.decode()
        except UnicodeDecodeError:
            pass
    return {"base64": _BASE64(data, newline=False).decode("ascii")}


def decode_bytes(value: str | dict[str, str] | None) -> bytes | None:
    """The inverse of `encode_bytes`, for scripts and tests."""
    if value is None:
        return None
    if isinstance(value, dict):
        return binascii.a2b_base64(value["base64"])
    return value.encode("utf-8")


_seconds: dict[int, str] = {}


def time_text(ts_ns: int) -> str:
    """ISO-8601 UTC with microseconds; a pcapng timestamp past year 9999 (or before 1) says so instead.

    Each second is formatted once (the capture's packets share them) and extended with the fraction."""
    seconds, ns = divmod(ts_ns, 1_000_000_000)
    prefix = _seconds.get(seconds)
    if prefix is None:
        try:
            prefix = datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.")
        except (OverflowError, ValueError, OSError):
            return f"{ts_ns} ns (out of range)"
        if len(_seconds) >= MEMO:
            _seconds.clear()
        _seconds[seconds] = prefix
    return f"{prefix}{ns // 1000:06d}Z"


_record_seconds: dict[int, str] = {}


def record_time(ms: int | None) -> str:
    """`format_timestamp` (Kafka's millisecond timestamps), each second formatted once."""
    if ms is None or ms == -1:
        return "none"
    seconds, millis = divmod(ms, 1000)
    prefix = _record_seconds.get(seconds)
    if prefix is None:
        whole = format_timestamp(seconds * 1000)
        if not whole.endswith(".000Z"):
            return format_timestamp(ms)
        if len(_record_seconds) >= MEMO:
            _record_seconds.clear()
        prefix = _record_seconds[seconds] = whole[:-4]
    return f"{prefix}{millis:03d}Z"


class Exact:
    """A float whose digits orjson would spell differently from json.dumps (exponent notation, nan, inf): it
    sends the line it is in to json.dumps, which writes it as kdissect always has."""

    __slots__ = ("value",)

    def __init__(self, value: float) -> None:
        self.value = value


def json_float(value: float) -> float | Exact:
    """`value` as the fast encoder may take it: floats that orjson and json.dumps spell alike pass as they are."""
    if value == 0 or 1e-4 <= abs(value) < 1e16:
        return value
    return Exact(value)


def _json_floats(value: Any) -> Any:
    """A value with its floats, or its array's, made safe for the fast encoder."""
    if type(value) is float:
        return json_float(value)
    if type(value) is list and value and type(value[0]) is float:
        return [json_float(v) for v in value]
    return value


class _Inexact(Exception):
    """Raised inside orjson's hook: this line holds an `Exact`."""


def _tree(value: Any) -> Any:
    """One level of JSON for a value the encoder does not know, its children left as they are.

    orjson calls it for each such value it meets (bytes, a Struct, a RecordSet...); `value_json` calls it to
    make a plain tree. The layout lives here and in the builders below, once for both."""
    cls = type(value)
    if cls is bytes:
        return encode_bytes(value)
    if cls is Struct:
        return _struct_tree(value)
    if cls is RecordSet:
        return _records_tree(value)
    if cls is Exact:
        return value.value
    if cls is Redacted:
        return {"redacted": True, "size": value.size}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _json_floats(getattr(value, f.name)) for f in dataclasses.fields(value)}
    raise TypeError(f"no JSON form for {cls.__name__}")


def _native(value: Any) -> Any:
    """orjson's hook: `_tree`, except that an `Exact` float hands the whole line to json.dumps."""
    if type(value) is Exact:
        raise _Inexact
    return _tree(value)


def value_json(value: Any) -> Any:
    """A plain tree of dicts, lists and scalars (what `json.loads` of the line gives, floats and all)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [value_json(v) for v in value]
    if isinstance(value, dict):
        return {key: value_json(v) for key, v in value.items()}
    return value_json(_tree(value))


def _plain(values: list[Any]) -> bool:
    """Whether a struct's values can go to the encoder as they are: no unknown tag to gather, no float (nor
    array of floats) whose spelling `json_float` must check."""
    kinds = set(map(type, values))
    if float in kinds or UnknownTag in kinds:
        return False
    return list not in kinds or not any(type(v) is list and v and type(v[0]) is float for v in values)


def _struct_tree(struct: Struct) -> dict[str, Any]:
    if _plain(struct.values):
        out = dict(zip(struct.names, struct.values))
    else:
        out = {}
        unknown = []
        for name, value in struct.items():
            if type(value) is UnknownTag:
                unknown.append({"tag": value.tag, "data": value.data})
            else:
                out[name] = _json_floats(value)
        if unknown:
            out["_unknown_tags"] = unknown
    if struct.annotations:
        out["_kdissect"] = struct.annotations
    return out


def _records_tree(records: RecordSet) -> dict[str, Any]:
    if _reading.on:
        _reading.enter(records)
    return {"size": records.size, "truncated": records.truncated, "batches": [_batch_tree(b) for b in records.batches]}


_BATCH_FIELDS = tuple(f.name for f in dataclasses.fields(RecordBatch) if f.name not in ("records", "span"))
_batch_values = attrgetter(*_BATCH_FIELDS)


def _batch_tree(batch: RecordBatch | LegacyMessage, records: bool = True) -> dict[str, Any]:
    """A batch's JSON object; without `records`, all but its records (which the streaming writer adds)."""
    if type(batch) is RecordBatch:
        out = dict(zip(_BATCH_FIELDS, _batch_values(batch)))
        out["format"] = "v2"
        out["span"] = list(batch.span)
        out["base_time"] = record_time(batch.base_timestamp)
        if _reading.field is not None:
            _reading.batch(batch.records)
        if records:
            out["records"] = [_record_tree(r) for r in batch.records]
        return out
    return _legacy_tree(batch)


def _record_tree(record: Record) -> dict[str, Any]:
    timestamp = record.timestamp
    headers = record.headers
    key = record.key
    value = record.value
    out = {
        "offset": record.offset,
        "timestamp": timestamp,
        "time": record_time(timestamp),
        "offset_delta": record.offset_delta,
        "timestamp_delta": record.timestamp_delta,
        "attributes": record.attributes,
        "key": encode_bytes(key),
        "value": encode_bytes(value),
        "headers": [{"key": k if isinstance(k, str) else encode_bytes(k), "value": encode_bytes(v)} for k, v in headers] if headers else [],
        "control": record.control,
    }
    if record.reading is not None:
        out["_kdissect"] = record.reading
    if (value and value[0] in _looked_at) or (key and key[0] in _looked_at):
        _with_decoded(out, key, value, headers)  # what they say: a plain key and value cost a look at their first bytes
    return out


def _legacy_tree(message: LegacyMessage, messages: bool = True) -> dict[str, Any]:
    out = {
        "format": f"v{message.magic}",
        "offset": message.offset,
        "span": list(message.span),
        "message_size": message.message_size,
        "crc": message.crc,
        "crc_valid": message.crc_valid,
        "magic": message.magic,
        "attributes": message.attributes,
        "codec": message.codec,
        "timestamp": message.timestamp,
        "time": record_time(message.timestamp) if message.timestamp is not None else None,
        "timestamp_type": message.timestamp_type,
        "key": encode_bytes(message.key),
        "value": None if message.messages else encode_bytes(message.value),
        "compressed_size": message.compressed_size,
        "uncompressed_size": message.uncompressed_size,
    }
    if message.reading is not None:
        out["_kdissect"] = message.reading
    if messages:
        out["messages"] = [_legacy_tree(m) for m in message.messages]
    if not message.messages:
        key, value = message.key, message.value
        if (value and value[0] in _looked_at) or (key and key[0] in _looked_at):
            _with_decoded(out, key, value, ())
    return out


class _Reading:
    """What the encoder needs to read the keys and values of the exchange being made JSON (`exchange_tree`): it meets
    records inside their RecordSet, which `_records_tree` marks as the records field being encoded. The field's topic
    is looked up only when a record is read, or, in an exchange that names `_schemas`, when the field is entered."""

    __slots__ = ("values", "record", "on", "bodies", "schemas", "topics", "field", "in_field")

    def __init__(self) -> None:
        self.values: ValueReader | None = None
        self.record: Callable[..., tuple[Decoded | None, Decoded | None]] | None = None
        """`values.record`, taken once per reader (a lazy reader is made at its first use, not at each record's)."""
        self.on = False
        """The keys and values of the exchange being encoded are read: a reader, and records placed in its bodies."""
        self.bodies: tuple[Body | None, Body | None] = (None, None)
        self.schemas = False
        """The exchange names the registry's `_schemas` topic: its fields' topics are looked up as they are entered."""
        self.topics: dict[int, str | None] | None = None
        """The topic of each records field of the exchange by the id of its RecordSet, made when first asked."""
        self.field: RecordSet | None = None
        """The records field being encoded; None when no key or value is read (no reader, no records placed)."""
        self.in_field = False
        """The field is the registry's `_schemas` topic, which teaches schemas: all its records are read."""

    def start(self, values: ValueReader | None, sent: Body | None, got: Body | None, topics: list[str]) -> None:
        global _looked_at
        _looked_at = _NOTHING
        if values is not self.values:
            self.values, self.record = values, None
        self.on = on = values is not None and bool((sent is not None and sent.records) or (got is not None and got.records))
        self.bodies = (sent, got)
        self.schemas = on and SCHEMAS_TOPIC in topics
        self.topics, self.field, self.in_field = None, None, False

    def enter(self, records: RecordSet) -> None:
        """A records field begins (the encoder calls it only in an exchange whose keys and values are read)."""
        global _looked_at
        self.field = records
        self.in_field = self.schemas and self.topic() == SCHEMAS_TOPIC
        _looked_at = _EVERY_BYTE if self.in_field else _CANDIDATES

    def batch(self, records: tuple[Record, ...]) -> None:
        """A v2 batch begins: its first record's headers say whether its records name their schemas in headers."""
        global _looked_at
        headers = records[0].headers if records else ()
        _looked_at = _EVERY_BYTE if self.in_field or (headers and named_by_header(headers)) else _CANDIDATES

    def topic(self) -> str | None:
        """The topic of the field being encoded."""
        topics = self.topics
        if topics is None:
            topics = self.topics = {id(p.records): p.topic for body in self.bodies if body is not None for p in body.records}
        return topics.get(id(self.field))


_reading = _Reading()
_NOTHING: frozenset[int] = frozenset()
_EVERY_BYTE = frozenset(range(256))
_looked_at = _NOTHING
"""The first bytes whose key or value the encoder reads in the records field being encoded: none without a reader,
every one in a `_schemas` field or a batch whose schemas are named in headers, else `plain.CANDIDATES`."""


def _with_decoded(out: dict[str, Any], key: bytes | None, value: bytes | None, headers: tuple) -> None:
    """A record's `key_decoded` and `value_decoded`; the encoder asks only for a record whose first bytes or headers
    may say more than bytes (a record of plain text or bytes costs that look and nothing more). A key and value that
    are plainly text or bytes without a header naming a schema (`values.plain`) are not handed to the reader at all,
    which would say nothing of them; a `_schemas` record always is, as it teaches the reader its schema."""
    reading = _reading
    if not (reading.in_field or (headers and named_by_header(headers)) or (key and maybe_more(key)) or (value and maybe_more(value))):
        return
    record = reading.record
    if record is None:
        record = reading.record = reading.values.record  # type: ignore[union-attr]
    read_key, read_value = record(reading.topic(), key, value, headers, reading.field)
    if read_key is not None and not read_key.plain:
        out["key_decoded"] = decoded_json(read_key)
    if read_value is not None and not read_value.plain:
        out["value_decoded"] = decoded_json(read_value)


def decoded_json(d: Decoded) -> dict[str, Any]:
    """A key's or value's reading: its framing, format, schema (id, subject, version, type) and decoded value."""
    schema = d.schema
    return {
        "framing": d.framing,
        "format": d.format,
        "schema_id": d.schema_id,
        "subject": d.subject,
        "version": schema.version if schema else None,
        "type": d.name,
        "start": d.start,
        "why": d.why,
        "value": _exact_floats(d.value) if d.ok else None,
        "diagnostics": [diagnostic_json(x) for x in d.diagnostics],
    }


def _exact_floats(value: Any) -> Any:
    """A decoded value with each float made safe for the fast encoder (`json_float`), at any depth."""
    kind = type(value)
    if kind is float:
        return json_float(value)
    if kind is dict:
        return {k: _exact_floats(v) for k, v in value.items()}
    if kind is list:
        return [_exact_floats(v) for v in value]
    return value


def diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    return {"code": d.code, "severity": d.severity, "message": d.message, "scope": d.scope, "offset": d.offset, "path": d.path}


def endpoint_json(e: Endpoint) -> dict[str, Any]:
    return {"address": e.address, "port": e.port}


def connection_json(c: ConnectionInfo) -> dict[str, Any]:
    out = {"id": c.id, "client": endpoint_json(c.client), "broker": endpoint_json(c.broker)}
    if c.tls is not None:
        out["tls"] = {f.name: value_json(getattr(c.tls, f.name)) for f in dataclasses.fields(c.tls)}
    if c.taps:
        out["taps"] = list(c.taps)
    return out


def _tagged(fields: tuple[TaggedField, ...]) -> list[dict[str, Any]]:
    return [{"tag": t.tag, "data": encode_bytes(t.data)} for t in fields]


def header_json(header: RequestHeader | ResponseHeader | SaslTokenHeader | None) -> dict[str, Any] | None:
    if isinstance(header, RequestHeader):
        return {
            "version": header.version,
            "api_key": header.api_key,
            "api_version": header.api_version,
            "correlation_id": header.correlation_id,
            "client_id": header.client_id,
            "tagged_fields": _tagged(header.tagged) if header.tagged else [],
        }
    if isinstance(header, ResponseHeader):
        return {
            "version": header.version,
            "correlation_id": header.correlation_id,
            "tagged_fields": _tagged(header.tagged) if header.tagged else [],
        }
    if isinstance(header, SaslTokenHeader):
        return {"sasl_token": True}
    return None


def message_tree(message: Message | None) -> dict[str, Any] | None:
    """A message's JSON object, its body and raw bytes left for the encoder (`_tree`)."""
    if message is None:
        return None
    frame = message.frame
    body = message.body if isinstance(message.body, Body) else None
    return {
        "time": time_text(frame.ts),
        "ts_ns": frame.ts,
        "size": frame.size + 4,
        "captured": frame.size + 4 - frame.lost,
        "holes": [list(hole) for hole in frame.holes()],
        "stream_offset": frame.offset,
        "packets": [frame.first_packet, frame.last_packet],
        "header": header_json(message.header),
        "schema": body.schema if body and body.schema else None,
        "schema_version": body.version if body and body.schema else None,
        "assumed_version": body.assumed if body else False,
        "body": body.fields if body else None,
        "body_raw": body.raw if body else None,
        "diagnostics": [diagnostic_json(d) for d in message.diagnostics] if message.diagnostics else [],
    }


_connections: dict[int, tuple[ConnectionInfo, dict[str, Any]]] = {}


def _connection(c: ConnectionInfo) -> dict[str, Any]:
    """`connection_json`, made once per connection: every exchange of a connection carries the same object."""
    known = _connections.get(id(c))
    if known is not None and known[0] is c:
        return known[1]
    if len(_connections) >= MEMO:
        _connections.clear()
    out = connection_json(c)
    _connections[id(c)] = (c, out)
    return out


def exchange_tree(exchange: Exchange, values: ValueReader | None = None) -> dict[str, Any]:
    """An exchange's JSON object as the writer encodes it: bodies, records and bytes are left as they are and
    made JSON by the encoder where it meets them (`_tree`); `exchange_json` is the same made plain. With `values`, a
    record's key and value carry what they say (`key_decoded`, `value_decoded`), read now: encode the tree next."""
    request, response = exchange.request, exchange.response
    sent = request.body if request is not None and isinstance(request.body, Body) else None
    got = response.body if response is not None and isinstance(response.body, Body) else None
    latency = exchange.latency
    key = exchange.api_key
    if sent and got:
        topics = list(dict.fromkeys(sent.topics + got.topics))
        groups = list(dict.fromkeys(sent.groups + got.groups))
    else:
        body = sent or got
        topics = list(dict.fromkeys(body.topics)) if body else []
        groups = list(dict.fromkeys(body.groups)) if body else []
    _reading.start(values, sent, got, topics)
    errors = []
    for side, body in (("request", sent), ("response", got)):
        if body is not None and body.errors:
            errors += [{"side": side, "path": e.path, "code": e.code, "name": error_name(e.code)} for e in body.errors]
    tree = {
        "type": "exchange",
        "layout": LAYOUT,
        "id": exchange.id,
        "status": exchange.status,
        "connection": _connection(exchange.connection),
        "api_key": key,
        "api_name": (exchange.api_name or f"api {key}") if key is not None else SASL_TOKEN_LABEL if exchange.sasl_token else None,
        "api_version": exchange.api_version,
        "correlation_id": exchange.correlation_id,
        "client_id": exchange.client_id,
        "time": time_text(exchange.ts),
        "latency_ms": None if latency is None else json_float(latency / 1e6),
        "queue_ms": None if exchange.queued is None else json_float(exchange.queued / 1e6),
        "service_ms": None if latency is None else json_float((latency - (exchange.queued or 0)) / 1e6),
        "queued_behind": exchange.ahead,
        "topics": topics,
        "groups": groups,
        "errors": errors,
        "request": message_tree(request),
        "response": message_tree(response),
    }
    if exchange.vantage is not None:
        tree["broker_ms"] = json_float(exchange.vantage.broker / 1e6)
        tree["network_ms"] = json_float(exchange.vantage.network / 1e6)
    return tree


STREAM_RECORDS = 4096
"""An exchange holding more records than this, or a frame larger than `STREAM_BYTES` (a body with a long array), is
written in pieces (`exchange_pieces`): its records and long arrays are made JSON a few at a time, so what one
exchange holds in memory while it is written does not grow with it."""
STREAM_BYTES = 1 << 20
PIECE = 512
"""Records, or elements of an array of scalars or flat structs, made JSON at a time."""
PIECE_BYTES = 1 << 20
"""... or fewer: a piece ends once its records' keys and values pass this many bytes, and a batch or wrapper
whose records decompressed past it is walked into, so that a batch of large values (a compressed wrapper's 50 MiB
of them) is not made JSON at once."""
FLUSH = 1 << 16
"""Pieces are gathered up to this many bytes before they are handed to the stream."""


def _large(exchange: Exchange) -> bool:
    """Whether an exchange's frames, or what their records decompressed to, pass `STREAM_BYTES`, or its bodies
    hold more than `STREAM_RECORDS` records (legacy messages nested in compressed wrappers counted at every
    depth): a frame of 500 kB can hold 90 MiB of values."""
    left, inflated = STREAM_RECORDS, 0
    for message in (exchange.request, exchange.response):
        if message is None:
            continue
        if message.frame.size > STREAM_BYTES:
            return True
        body = message.body if isinstance(message.body, Body) else None
        batches = [b for placed in body.records for b in placed.records.batches] if body is not None else []
        while batches:
            batch = batches.pop()
            inflated += batch.uncompressed_size
            if type(batch) is RecordBatch:
                left -= len(batch.records)
            else:
                left -= 1
                batches += batch.messages
            if left < 0 or inflated > STREAM_BYTES:
                return True
    return False


def exchange_pieces(exchange: Exchange, values: ValueReader | None = None) -> Iterator[bytes]:
    """An exchange's NDJSON line, newline included, in pieces whose concatenation is `encode(exchange_tree(...))`
    byte for byte: whole for most exchanges, a few records or elements at a time for a large one."""
    tree = exchange_tree(exchange, values)
    if _large(exchange):
        yield from streamed(tree)
    else:
        yield encode(tree)


def streamed(obj: dict[str, Any]) -> Iterator[bytes]:
    """`encode(obj)` in pieces of about `FLUSH` bytes, made as they go."""
    held = bytearray()
    for piece in _pieces(obj):
        held += piece
        if len(held) >= FLUSH:
            yield bytes(held)
            held.clear()
    held += b"\n"
    yield bytes(held)


def _encoded(value: Any) -> bytes:
    """One value's JSON as `encode` spells it within a line: orjson, or json.dumps where orjson would differ."""
    try:
        return orjson.dumps(value, default=_native, option=orjson.OPT_PASSTHROUGH_DATACLASS)
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_tree).encode()


_NESTS = (list, tuple, dict, RecordSet)


def _heavy(value: Any) -> bool:
    """Whether a value may hold many others: walked into by `_pieces` rather than encoded whole. A batch, or a
    wrapper of plain messages, of at most `PIECE` is one piece."""
    cls = type(value)
    if cls is Struct:
        return any(type(v) in _NESTS or type(v) is Struct for v in value.values)
    if cls is RecordBatch:
        return len(value.records) > PIECE or value.uncompressed_size > PIECE_BYTES
    if cls is LegacyMessage:
        messages = value.messages
        return len(messages) > PIECE or value.uncompressed_size > PIECE_BYTES or any(m.messages for m in messages)
    return cls in _NESTS


def _weight(value: Any) -> int:
    """Bytes of a record's or a message's key and value (what its JSON grows with); 0 for other values."""
    if type(value) is Record or type(value) is LegacyMessage:
        return len(value.key or b"") + len(value.value or b"")
    return 0


_RECORDS: dict[type, Callable[[Any], dict[str, Any]]] = {Record: _record_tree, RecordBatch: _batch_tree, LegacyMessage: _legacy_tree}
"""What the encoder meets only inside a `RecordSet`, which `_tree` makes JSON whole: the streaming writer meets them
on their own."""


def _leaf(value: Any) -> Any:
    made = _RECORDS.get(type(value))
    return value if made is None else made(value)


def _pieces(value: Any) -> Iterator[bytes]:
    """`value`'s JSON, walked down to where its bulk is: records and long arrays go out `PIECE` at a time."""
    cls = type(value)
    if not _heavy(value):
        yield _encoded(_leaf(value))
    elif cls is dict:
        sep = b"{"
        for key, item in value.items():
            yield sep + _encoded(key) + b":"
            yield from _pieces(item)
            sep = b","
        yield b"{}" if sep == b"{" else b"}"
    elif cls is Struct:
        yield from _pieces(_struct_tree(value))
    elif cls is RecordSet:
        if _reading.on:
            _reading.enter(value)
        yield from _pieces({"size": value.size, "truncated": value.truncated, "batches": value.batches})
    elif cls is RecordBatch:
        tree = _batch_tree(value, records=False)
        tree["records"] = value.records
        yield from _pieces(tree)
    elif cls is LegacyMessage:
        tree = _legacy_tree(value, messages=False)
        tree["messages"] = value.messages
        yield from _pieces(tree)
    elif not value:
        yield b"[]"
    elif _heavy(value[0]):
        sep = b"["
        for item in value:
            yield sep
            yield from _pieces(item)
            sep = b","
        yield b"]"
    else:
        sep, part, weight = b"[", [], 0
        for item in value:
            part.append(_leaf(item))
            weight += _weight(item)
            if len(part) >= PIECE or weight >= PIECE_BYTES:
                yield sep + _encoded(part)[1:-1]
                sep, part, weight = b",", [], 0
        yield (sep + _encoded(part)[1:-1] if part else b"") + b"]"


def encode_value(value: Any) -> bytes:
    """One value's compact JSON as every line spells it (a decoded record value for `records -f`)."""
    return _encoded(value)


def exchange_json(exchange: Exchange, values: ValueReader | None = None) -> dict[str, Any]:
    return value_json(exchange_tree(exchange, values))


def streamed_record_json(item: Any) -> dict[str, Any]:
    """One record of `kdissect records --json` (a `decode.streamed.StreamedRecord`), with what its key and value
    say when it carries them (`StreamedRecord.decoded`)."""
    record, exchange = item.record, item.exchange
    timestamp = -1 if record.timestamp is None else record.timestamp
    out = {
        "type": "record",
        "layout": LAYOUT,
        "exchange": exchange.id,
        "direction": item.direction,
        "client_id": exchange.client_id,
        "topic": item.topic,
        "partition": item.partition,
        "offset": record.offset,
        "timestamp": timestamp,
        "time": format_timestamp(timestamp),
        "key": encode_bytes(record.key),
        "value": encode_bytes(record.value),
        "headers": [{"key": k if isinstance(k, str) else encode_bytes(k), "value": encode_bytes(v)} for k, v in record.headers],
        **({"_kdissect": value_json(record.reading)} if record.reading is not None else {}),
    }
    key, value = item.decoded
    if key is not None and not key.plain:
        out["key_decoded"] = decoded_json(key)
    if value is not None and not value.plain:
        out["value_decoded"] = decoded_json(value)
    return out


def notice_json(notice: Notice) -> dict[str, Any]:
    return {
        "type": "notice",
        "layout": LAYOUT,
        "connection": connection_json(notice.connection) if notice.connection else None,
        "time": time_text(notice.ts) if notice.ts else None,
        "packet": notice.packet or None,
        "diagnostic": diagnostic_json(notice.diagnostic),
    }


def connection_end_json(end: ConnectionEnd) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "connection", "layout": LAYOUT, "connection": connection_json(end.connection)}
    for f in dataclasses.fields(end):
        if f.name != "connection":
            value = getattr(end, f.name)
            if f.name == "tls":
                if value is not None:  # only TLS connections have it
                    out["tls"] = value_json(value)
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


FAST = frozenset({"exchange", "notice", "connection", "record"})
"""The objects this module builds, whose floats went through `json_float`: orjson may encode them. Any other
object (stats tables) goes to json.dumps, whose output is the layout's reference."""
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_APPEND_NEWLINE


def encode(obj: dict[str, Any]) -> bytes:
    """One NDJSON line, newline included: what `json.dumps(value_json(obj), ensure_ascii=False,
    separators=(",", ":"))` writes, made by orjson where its bytes are the same (docs/json.md's layout, byte for
    byte) and by json.dumps where they would not be (a float orjson spells otherwise, an integer past 64 bits)."""
    if obj.get("type") in FAST:
        try:
            return orjson.dumps(obj, default=_native, option=_OPTIONS)
        except orjson.JSONEncodeError:
            pass
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_tree) + "\n").encode()


def finding_json(finding: Finding) -> dict[str, Any]:
    e = finding.evidence
    return {
        "type": "finding",
        "layout": LAYOUT,
        "id": finding.id,
        "severity": finding.severity,
        "title": finding.title,
        "explanation": finding.explanation,
        "advice": finding.advice,
        "caused_by": list(finding.caused_by),
        "software": finding.software,
        "evidence": {
            "filter": e.filter,
            "count": e.count,
            "unit": e.unit,
            "exchanges": list(e.exchanges),
            "connections": list(e.connections),
            "client_ids": list(e.client_ids),
            "groups": list(e.groups),
            "partitions": [{"topic": t, "partition": p} for t, p in e.partitions],
            "first": None if e.first_ts is None else time_text(e.first_ts),
            "last": None if e.last_ts is None else time_text(e.last_ts),
        },
    }


def verdict_json(report: Report) -> dict[str, Any]:
    """The doctor's one line: how many problems of each severity, what the capture held, and all that in words."""
    census = report.census
    return {
        "type": "verdict",
        "layout": LAYOUT,
        "verdict": report.verdict,
        "errors": sum(f.severity == "error" for f in report.findings),
        "warnings": sum(f.severity == "warning" for f in report.findings),
        "info": sum(f.severity == "info" for f in report.findings),
        "span_ms": census.span_ns / 1e6,
        "connections": census.connections,
        "exchanges": census.exchanges,
        "clients": len(census.client_ids),
        "groups": len(census.groups),
    }


class JsonLinesWriter:
    """Writes one compact JSON object per line as each is made; `flush_each` for live sessions, where a line
    must reach the reader at once rather than when a buffer fills.

    A UTF-8 text stream is written through its byte buffer, so lines go out as the encoder made them; the
    writer then owns the stream (nothing else may write to it in between)."""

    def __init__(self, stream: IO[str], flush_each: bool = False, values: ValueReader | None = None) -> None:
        self._stream = stream
        self._flush_each = flush_each
        self._values = values
        self._bytes: Any = None
        buffer = getattr(stream, "buffer", None)
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if buffer is not None and encoding == "utf8":
            stream.flush()
            self._bytes = buffer

    def write(self, obj: dict[str, Any]) -> None:
        self.raw(encode(obj))

    def write_exchange(self, exchange: Exchange) -> None:
        """`write(exchange_tree(exchange))`, a large exchange in pieces (`exchange_pieces`)."""
        for piece in exchange_pieces(exchange, self._values):
            self._put(piece)
        if self._flush_each:
            self._stream.flush()

    def raw(self, data: bytes) -> None:
        """Encoded lines as they are: a worker's for one exchange (`read --jobs`)."""
        self._put(data)
        if self._flush_each:
            self._stream.flush()

    def _put(self, data: bytes) -> None:
        if self._bytes is not None:
            self._bytes.write(data)
        else:
            self._stream.write(data.decode())
