"""The JSON layout: every value the core and decoders produce, made JSON here and nowhere else.

The layout is versioned (`LAYOUT`) and documented in docs/json.md; scripts rely on it. Bytes are lossless: a
value that is UTF-8 text without control characters is a JSON string, anything else {"base64": "..."}.
Field names are the Kafka specs' own. What kdissect reads into a field (a topic name for a TopicId, the
consumer-protocol struct inside JoinGroup metadata) sits beside the fields under "_kdissect".
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from datetime import datetime, timezone
from typing import IO, Any

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
from kdissect.schema import API_NAMES, error_name
from kdissect.schema.tree import Struct, UnknownTag
from kdissect.views.summary import SASL_TOKEN_LABEL

LAYOUT = 2
"""2: `status` says `error` and `malformed` (1 called every paired exchange `ok`); each side tells its `holes`."""
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def encode_bytes(data: bytes | None) -> str | dict[str, str] | None:
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}
    if _CONTROL.search(text):
        return {"base64": base64.b64encode(data).decode("ascii")}
    return text


def decode_bytes(value: str | dict[str, str] | None) -> bytes | None:
    """The inverse of `encode_bytes`, for scripts and tests."""
    if value is None:
        return None
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return value.encode("utf-8")


def time_text(ts_ns: int) -> str:
    """ISO-8601 UTC with microseconds; a pcapng timestamp past year 9999 (or before 1) says so instead."""
    seconds, ns = divmod(ts_ns, 1_000_000_000)
    try:
        return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ns // 1000:06d}Z"
    except (OverflowError, ValueError, OSError):
        return f"{ts_ns} ns (out of range)"


def value_json(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return encode_bytes(value)
    if isinstance(value, list):
        return [value_json(v) for v in value]
    if isinstance(value, dict):
        return {key: value_json(v) for key, v in value.items()}
    if isinstance(value, Struct):
        return struct_json(value)
    if isinstance(value, RecordSet):
        return records_json(value)
    if isinstance(value, Redacted):
        return {"redacted": True, "size": value.size}
    if dataclasses.is_dataclass(value):
        return {f.name: value_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    raise TypeError(f"no JSON form for {type(value).__name__}")


def struct_json(struct: Struct) -> dict[str, Any]:
    out: dict[str, Any] = {}
    unknown = []
    for name, value in struct.items():
        if isinstance(value, UnknownTag):
            unknown.append({"tag": value.tag, "data": encode_bytes(value.data)})
        else:
            out[name] = value_json(value)
    if unknown:
        out["_unknown_tags"] = unknown
    if struct.annotations:
        out["_kdissect"] = {name: value_json(v) for name, v in struct.annotations.items()}
    return out


def records_json(records: RecordSet) -> dict[str, Any]:
    return {
        "size": records.size,
        "truncated": records.truncated,
        "batches": [batch_json(b) for b in records.batches],
    }


def batch_json(batch: RecordBatch | LegacyMessage) -> dict[str, Any]:
    if isinstance(batch, RecordBatch):
        out = {f.name: getattr(batch, f.name) for f in dataclasses.fields(batch) if f.name not in ("records", "span")}
        out["format"] = "v2"
        out["span"] = list(batch.span)
        out["base_time"] = format_timestamp(batch.base_timestamp)
        out["records"] = [record_json(r) for r in batch.records]
        return out
    return legacy_json(batch)


def record_json(record: Record) -> dict[str, Any]:
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "time": format_timestamp(record.timestamp),
        "offset_delta": record.offset_delta,
        "timestamp_delta": record.timestamp_delta,
        "attributes": record.attributes,
        "key": encode_bytes(record.key),
        "value": encode_bytes(record.value),
        "headers": [{"key": k if isinstance(k, str) else encode_bytes(k), "value": encode_bytes(v)} for k, v in record.headers],
        "control": value_json(record.control),
    }


def legacy_json(message: LegacyMessage) -> dict[str, Any]:
    return {
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
        "time": format_timestamp(message.timestamp) if message.timestamp is not None else None,
        "timestamp_type": message.timestamp_type,
        "key": encode_bytes(message.key),
        "value": None if message.messages else encode_bytes(message.value),
        "compressed_size": message.compressed_size,
        "uncompressed_size": message.uncompressed_size,
        "messages": [legacy_json(m) for m in message.messages],
    }


def diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    return {"code": d.code, "severity": d.severity, "message": d.message, "scope": d.scope, "offset": d.offset, "path": d.path}


def endpoint_json(e: Endpoint) -> dict[str, Any]:
    return {"address": e.address, "port": e.port}


def connection_json(c: ConnectionInfo) -> dict[str, Any]:
    return {"id": c.id, "client": endpoint_json(c.client), "broker": endpoint_json(c.broker)}


def _tagged(fields: tuple[TaggedField, ...]) -> list[dict[str, Any]]:
    return [{"tag": t.tag, "data": encode_bytes(t.data)} for t in fields]


def header_json(header: RequestHeader | ResponseHeader | None) -> dict[str, Any] | None:
    if isinstance(header, RequestHeader):
        return {
            "version": header.version,
            "api_key": header.api_key,
            "api_version": header.api_version,
            "correlation_id": header.correlation_id,
            "client_id": header.client_id,
            "tagged_fields": _tagged(header.tagged),
        }
    if isinstance(header, ResponseHeader):
        return {"version": header.version, "correlation_id": header.correlation_id, "tagged_fields": _tagged(header.tagged)}
    if isinstance(header, SaslTokenHeader):
        return {"sasl_token": True}
    return None


def message_json(message: Message | None) -> dict[str, Any] | None:
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
        "body": struct_json(body.fields) if body and body.fields is not None else None,
        "body_raw": encode_bytes(body.raw) if body and body.raw is not None else None,
        "diagnostics": [diagnostic_json(d) for d in message.diagnostics],
    }


def _side_bodies(exchange: Exchange) -> list[tuple[str, Body]]:
    out = []
    for side, message in (("request", exchange.request), ("response", exchange.response)):
        if message is not None and isinstance(message.body, Body):
            out.append((side, message.body))
    return out


def exchange_json(exchange: Exchange) -> dict[str, Any]:
    bodies = _side_bodies(exchange)
    latency = exchange.latency
    key = exchange.api_key
    return {
        "type": "exchange",
        "layout": LAYOUT,
        "id": exchange.id,
        "status": exchange.status,
        "connection": connection_json(exchange.connection),
        "api_key": key,
        "api_name": API_NAMES.get(key, f"api {key}") if key is not None else SASL_TOKEN_LABEL if exchange.sasl_token else None,
        "api_version": exchange.api_version,
        "correlation_id": exchange.correlation_id,
        "client_id": exchange.client_id,
        "time": time_text(exchange.ts),
        "latency_ms": None if latency is None else latency / 1e6,
        "topics": list(dict.fromkeys(t for _, b in bodies for t in b.topics)),
        "groups": list(dict.fromkeys(g for _, b in bodies for g in b.groups)),
        "errors": [{"side": side, "path": e.path, "code": e.code, "name": error_name(e.code)} for side, b in bodies for e in b.errors],
        "request": message_json(exchange.request),
        "response": message_json(exchange.response),
    }


def streamed_record_json(item: Any) -> dict[str, Any]:
    """One record of `kdissect records --json` (a `views.record_stream.StreamedRecord`)."""
    record, exchange = item.record, item.exchange
    timestamp = -1 if record.timestamp is None else record.timestamp
    return {
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
    }


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
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


class JsonLinesWriter:
    """Writes one compact JSON object per line as each is made; `flush_each` for live sessions, where a line
    must reach the reader at once rather than when a buffer fills."""

    def __init__(self, stream: IO[str], flush_each: bool = False) -> None:
        self._stream = stream
        self._flush_each = flush_each

    def write(self, obj: dict[str, Any]) -> None:
        self._stream.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
        self._stream.write("\n")
        if self._flush_each:
            self._stream.flush()
