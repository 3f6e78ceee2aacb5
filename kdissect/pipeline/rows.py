"""Events to table rows: the columns of docs/pipeline.md, filled from the core's values.

The JSON column is `views.json_lines.exchange_tree` encoded by `views.json_lines.encode`, the CLI's own
`--json` layout and encoder, with the job's identifiers in place of the per-run counters (`id` is
`exchange_id`, `connection.id` is `connection_id`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

from kdissect.decode.body import Body
from kdissect.diagnostic import Diagnostic
from kdissect.events import ConnectionInfo, Exchange, Notice
from kdissect.records.values import KafkaRecord, LegacyMessage, RecordBatch
from kdissect.schema.tree import Struct
from kdissect.values.reader import plain_format
from kdissect.views.json_lines import decoded_json, encode, encode_value, exchange_tree, value_json

OFFSET_BITS = 20
"""exchange_id = first packet number << 20 | the frame's stream offset mod 2**20: unique within a capture, as
two frames starting in one packet lie less than a packet's length apart."""
CONNECTION_BITS = 16
"""connection_id = first packet number of its 4-tuple in the capture << 16 | which use of the 4-tuple it is."""


NONE = "none"
"""The partition value for rows with no date (file diagnostics) or no API (notices about packets or streams)."""
UNKNOWN = "unknown"
"""The API partition of exchanges whose request (and so API) is not in the capture."""


_DAYS: dict[int, str] = {}
NS_PER_DAY = 86400 * 1_000_000_000
BATCH_ROWS = 4096
BATCH_BYTES = 8 << 20
"""Rows of one table become an Arrow batch once this many are held, or this much of their data (exchanges' JSON,
records' decompressed batches): a capture of large values held rows by the thousand, gigabytes of them."""


def day(ts_ns: int | None) -> str:
    """The UTC date partition; partition values are never null, which pyarrow's dataset reader cannot merge."""
    if ts_ns is None:
        return NONE
    number = ts_ns // NS_PER_DAY
    text = _DAYS.get(number)
    if text is None:
        text = _DAYS[number] = datetime.fromtimestamp(number * 86400, timezone.utc).strftime("%Y-%m-%d")
    return text


def exchange_id(exchange: Exchange) -> int:
    message = exchange.request or exchange.response
    assert message is not None
    frame = message.frame
    return frame.first_packet << OFFSET_BITS | (frame.offset & ((1 << OFFSET_BITS) - 1))


class Columns:
    """Rows of one table held column by column (a list per column of `names`) until they make an Arrow batch: an
    Arrow array is made from each list at once, not a row's dict at a time."""

    __slots__ = ("names", "columns", "dates", "apis", "size", "weight")

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.columns: dict[str, list[Any]] = {name: [] for name in self.names}
        self.dates: list = []
        self.apis: list = []
        self.size = 0
        self.weight = 0
        """Bytes of data the rows hold, about: what `full` weighs besides their number."""

    def add(self, row: dict[str, Any], date: str | None, api: str | None, weight: int = 0) -> None:
        """One row (a dict by column name; a missing key is a null) holding about `weight` bytes of data."""
        self.put(row)
        self.dates.append(date)
        self.apis.append(api)
        self.size += 1
        self.weight += weight

    def put(self, row: dict[str, Any]) -> None:
        """A row's values appended to the columns, its partition values left to `grown`."""
        get = row.get
        for name, column in self.columns.items():
            column.append(get(name))

    def grown(self, rows: int, date: str | None, api: str | None) -> None:
        """`rows` rows were appended to every column, sharing their partition values (one exchange's records)."""
        self.dates += [date] * rows
        self.apis += [api] * rows
        self.size += rows

    def __len__(self) -> int:
        return self.size

    def full(self) -> bool:
        """Whether the rows held are to become an Arrow batch now (`BATCH_ROWS`, `BATCH_BYTES`)."""
        return self.size >= BATCH_ROWS or self.weight >= BATCH_BYTES

    def take(self) -> tuple[dict[str, list[Any]], tuple[list, list]]:
        out = self.columns, (self.dates, self.apis)
        self.columns, self.dates, self.apis, self.size, self.weight = {name: [] for name in self.names}, [], [], 0, 0
        return out

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows as dicts by column name."""
        columns = self.columns
        for values in zip(*columns.values()):
            yield dict(zip(columns, values))


def _endpoints(connection: ConnectionInfo | None) -> dict[str, Any]:
    if connection is None:
        return {}
    return {
        "client_address": connection.client.address,
        "client_port": connection.client.port,
        "broker_address": connection.broker.address,
        "broker_port": connection.broker.port,
    }


def _diagnostic(d: Diagnostic) -> dict[str, Any]:
    """The columns every diagnostic has, in tables.DIAGNOSTIC's order."""
    return {"code": d.code, "severity": d.severity, "message": d.message, "scope": d.scope, "scope_offset": d.offset, "path": d.path}


def _bodies(exchange: Exchange) -> list[tuple[str, Body]]:
    out = []
    for side, message in (("request", exchange.request), ("response", exchange.response)):
        if message is not None and isinstance(message.body, Body):
            out.append((side, message.body))
    return out


def unresolved_topic_ids(exchange: Exchange, missed: set[str]) -> list[str]:
    """Topic ids in the exchange's bodies that the connection could not name (`missed` by its decoder)."""
    found: dict[str, None] = {}
    for _, body in _bodies(exchange):
        if body.fields is not None:
            _walk_ids(body.fields, missed, found)
    return list(found)


def _walk_ids(struct: Struct, missed: set[str], found: dict[str, None]) -> None:
    names = struct.names
    if "TopicId" in names:
        value = struct.values[names.index("TopicId")]
        if value in missed and not (struct.annotations and "TopicId" in struct.annotations):
            found[value] = None
    for value in struct.values:
        if isinstance(value, Struct):
            _walk_ids(value, missed, found)
        elif isinstance(value, list) and value and isinstance(value[0], Struct):
            for item in value:
                _walk_ids(item, missed, found)


def topic_id_at(fields: Struct | None, path: str) -> str | None:
    """The TopicId of the nearest struct holding the records field at `path` ("Responses[0].Partitions[1].Records")."""
    found = None
    node: Any = fields
    for part in path.split(".")[:-1]:
        if not isinstance(node, Struct):
            return found
        if "TopicId" in node.names:
            found = node.values[node.names.index("TopicId")]
        name, _, index = part.partition("[")
        node = node.get(name)
        if index:
            try:
                node = node[int(index.rstrip("]"))]
            except (TypeError, IndexError, ValueError):
                return found
    if isinstance(node, Struct) and "TopicId" in node.names:
        found = node.values[node.names.index("TopicId")]
    return found


def exchange_row(
    exchange: Exchange,
    capture: str,
    xid: int,
    cid: int,
    missed: set[str],
    records: int,
    ahead: int | None = None,
    values: Any = None,
) -> dict[str, Any]:
    """The exchanges-table row, given the exchange's record count (its rows in `records`) and the exchange_id of the
    exchange it waited behind (`Exchange.ahead`), if it waited.

    Its errors, topics and groups are the JSON tree's own lists (`exchange_tree`), made once for both."""
    request, response = exchange.request, exchange.response
    document = exchange_tree(exchange, values)
    errors = document["errors"]
    document["id"] = xid
    document["queued_behind"] = ahead
    document["connection"] = {**document["connection"], "id": cid}  # the tree's connection object is shared
    diagnostics: list[dict[str, Any]] = []
    for side, message in (("request", request), ("response", response)):
        if message is not None and message.diagnostics:
            diagnostics.extend({"side": side, **_diagnostic(d)} for d in message.diagnostics)
    latency = exchange.latency
    key = exchange.api_key
    return {
        "capture": capture,
        "exchange_id": xid,
        "connection_id": cid,
        **_endpoints(exchange.connection),
        "status": exchange.status,
        "time": exchange.ts // 1000,
        "ts_ns": exchange.ts,
        "request_ts_ns": request.ts if request else None,
        "response_ts_ns": response.ts if response else None,
        "latency_ms": None if latency is None else latency / 1e6,
        "queue_ms": None if exchange.queued is None else exchange.queued / 1e6,
        "service_ms": None if latency is None else (latency - (exchange.queued or 0)) / 1e6,
        "api_key": key,
        "api_name": exchange.api_name or f"api {key}" if key is not None else None,
        "api_version": exchange.api_version,
        "correlation_id": exchange.correlation_id,
        "client_id": exchange.client_id,
        "errors": errors,
        "error_names": list(dict.fromkeys(e["name"] for e in errors)) if errors else [],
        "topics": document["topics"],
        "groups": document["groups"],
        "request_size": request.size if request else None,
        "response_size": response.size if response else None,
        "request_packets": [request.frame.first_packet, request.frame.last_packet] if request else None,
        "response_packets": [response.frame.first_packet, response.frame.last_packet] if response else None,
        "records": records,
        "diagnostics": diagnostics,
        "json": encode(document)[:-1],
        "unresolved_topic_ids": unresolved_topic_ids(exchange, missed) if missed else [],
    }


def _header_key(key: str | bytes) -> str:
    return key if isinstance(key, str) else key.decode("utf-8", "backslashreplace")


DIRECTION = {"request": "produce", "response": "fetch"}
"""A record's direction as `kdissect records` says it (views/record_stream.DIRECTIONS): produced in a request,
fetched in a response."""


_COMMON = ("capture", "exchange_id", "connection_id", "direction", "api_key", "api_version", "topic", "topic_id", "partition", "field")
"""The records table's columns that a records field's rows share."""
_READ = ("key_format", "key_schema_id", "key_decoded", "value_format", "value_schema_id", "value_decoded")
"""The records table's columns of what a key and value say (`_read`)."""


_UNREAD = (None, None)
"""What a reader says of a record's key and value when it has nothing to say (or reads none)."""


def _read(key: bytes | None, value: bytes | None, decoded: tuple[Any, Any]) -> tuple[str | None, ...]:
    """The records table's columns of what a key and value say (`values.record`'s `decoded`), in `_READ`'s order:
    format (avro, protobuf, json, unknown, text, bytes; null for a null), the schema id as text (an id, a GUID, a
    global id), the decoded value as the JSON layout writes it; for the key, then for the value."""
    out: list[str | None] = []
    for data, d in zip((key, value), decoded):
        if d is None or d.plain:
            out += (None if data is None else plain_format(data), None, None)
        else:
            decoded_text = encode_value(decoded_json(d)["value"]).decode() if d.ok else None
            out += (d.format, None if d.schema_id is None else str(d.schema_id), decoded_text)
    return tuple(out)


def record_rows(exchange: Exchange, capture: str, xid: int, cid: int, values: Any = None) -> Iterator[dict[str, Any]]:
    """One row per record of every records field in the exchange (Produce requests, Fetch responses), with what each
    key and value say when `values` (a `values.reader.ValueReader`) reads them: `add_records`'s rows as dicts."""
    from kdissect.pipeline.tables import RECORDS

    out = Columns(RECORDS.names)
    add_records(out, exchange, capture, xid, cid, values)
    yield from out.rows()


def add_records(out: Columns, exchange: Exchange, capture: str, xid: int, cid: int, values: Any = None) -> int:
    """The records-table rows of every records field in the exchange appended to `out`'s columns (tables.RECORDS),
    a batch's records a column at a time; how many (their partition values are the caller's to add)."""
    added = 0
    for side, body in _bodies(exchange):
        ordinal = 0
        for placed in body.records:
            common = (
                *(capture, xid, cid, DIRECTION[side], exchange.api_key, exchange.api_version),
                *(placed.topic, topic_id_at(body.fields, placed.path), placed.partition, placed.path),
            )
            for batch in placed.records.batches:
                if isinstance(batch, RecordBatch):
                    n = _batch_columns(out.columns, common, batch, ordinal, values, placed.records)
                    out.weight += max(batch.uncompressed_size, batch.batch_length)
                else:
                    n = _legacy_columns(out, common, batch, ordinal, values, placed.records)
                    out.weight += max(batch.uncompressed_size, batch.message_size)
                ordinal += n
                added += n
    return added


def _batch_columns(c: dict[str, list[Any]], common: tuple, batch: RecordBatch, ordinal: int, values: Any, field: Any) -> int:
    """A v2 batch's records appended to the records table's columns `c`, each column at once; how many."""
    records = batch.records
    n = len(records)
    if not n:
        return 0
    for name, value in zip(_COMMON, common):
        c[name] += [value] * n
    c["ordinal"] += range(ordinal, ordinal + n)
    c["record_offset"] += [r.offset for r in records]
    stamps = [r.timestamp for r in records]
    c["timestamp"] += stamps
    c["time"] += [t * 1000 if t >= 0 else None for t in stamps]
    keys, values_ = [r.key for r in records], [r.value for r in records]
    c["key"] += keys
    c["value"] += values_
    headers = [r.headers for r in records]  # (key, value) pairs: Arrow makes them the header structs as they are
    if any(type(k) is not str for pairs in headers for k, _ in pairs):
        headers = [tuple((_header_key(k), v) for k, v in pairs) for pairs in headers]
    c["headers"] += headers
    for name in ("timestamp_type", "magic", "codec", "producer_id", "producer_epoch", "transactional", "control"):
        c[name] += [getattr(batch, name)] * n
    base = batch.base_sequence
    c["sequence"] += [base + r.offset_delta for r in records] if base >= 0 else [-1] * n
    c["control_type"] += [None if r.control is None else r.control.name for r in records]
    c["reading"] += [None if r.reading is None else _reading(r.reading) for r in records]
    if values is None:
        decoded = [_UNREAD] * n
    else:
        topic, read = common[_COMMON.index("topic")], values.record
        decoded = [read(topic, r.key, r.value, r.headers, field) if r.control is None else _UNREAD for r in records]
    if decoded.count(_UNREAD) == n:  # plain keys and values, as most are: only their formats to say
        c["key_format"] += [None if k is None else plain_format(k) for k in keys]
        c["value_format"] += [None if v is None else plain_format(v) for v in values_]
        for name in ("key_schema_id", "key_decoded", "value_schema_id", "value_decoded"):
            c[name] += [None] * n
    else:
        for name, column in zip(_READ, zip(*map(_read, keys, values_, decoded))):
            c[name] += column
    return n


def _legacy_columns(out: Columns, common: tuple, message: LegacyMessage, ordinal: int, values: Any, field: Any) -> int:
    """A legacy message's leaf messages appended to the records table's columns, a row at a time; how many."""
    n = 0
    for codec, m in _legacy(message, None):
        ts = m.timestamp
        row: dict[str, Any] = dict(zip(_COMMON, common))
        row.update(
            {
                "ordinal": ordinal + n,
                "record_offset": m.offset,
                "timestamp": ts,
                "time": ts * 1000 if ts is not None and ts >= 0 else None,
                "timestamp_type": m.timestamp_type,
                "key": m.key,
                "value": m.value,
                "headers": [],
                "magic": m.magic,
                "codec": codec,
                "transactional": False,
                "control": False,
                "reading": _reading(m.reading),
            }
        )
        decoded = values.record(row["topic"], m.key, m.value, (), field) if values is not None else _UNREAD
        row.update(zip(_READ, _read(m.key, m.value, decoded)))
        out.put(row)
        n += 1
    return n


def _reading(reading: KafkaRecord | None) -> str | None:
    """A record of one of Kafka's own topics: what its key and value hold, as the JSON layout writes it."""
    return None if reading is None else json.dumps(value_json(reading), ensure_ascii=False, separators=(",", ":"))


def _legacy(message: LegacyMessage, codec: str | None) -> Iterator[tuple[str, LegacyMessage]]:
    """Leaf messages with the codec of the wrapper that carried them ("none" when none did), as
    `RecordSet.records()` walks them."""
    if message.codec == "none":
        yield codec or "none", message
    for inner in message.messages:
        yield from _legacy(inner, codec or message.codec)


def exchange_diagnostic_rows(exchange: Exchange, capture: str, xid: int, cid: int) -> Iterator[dict[str, Any]]:
    base = {"capture": capture, "exchange_id": xid, "connection_id": cid, **_endpoints(exchange.connection)}
    key = exchange.api_key
    base["api_name"] = exchange.api_name or f"api {key}" if key is not None else None
    for side, message in (("request", exchange.request), ("response", exchange.response)):
        if message is None:
            continue
        for d in message.diagnostics:
            yield {
                **base,
                "source": side,
                "packet": message.frame.first_packet,
                "time": message.ts // 1000,
                "ts_ns": message.ts,
                **_diagnostic(d),
            }


def notice_row(notice: Notice, capture: str, cid: int | None) -> dict[str, Any]:
    d = notice.diagnostic
    return {
        "capture": capture,
        "source": "stream" if notice.connection is not None else "packet",
        "connection_id": cid,
        **_endpoints(notice.connection),
        "packet": notice.packet or None,
        "time": notice.ts // 1000 if notice.ts else None,
        "ts_ns": notice.ts or None,
        **_diagnostic(d),
    }


def file_row(d: Diagnostic, capture: str) -> dict[str, Any]:
    return {
        "capture": capture,
        "source": "file",
        **_diagnostic(d),
    }
