"""`kdissect records`: every produced and fetched record, one per line, as kcat prints what it consumes.

A line is made from a format string in kcat's spirit (`-f`): %t topic, %p partition, %o offset, %k key, %K key
length, %s value, %S value length, %T timestamp (ms since the epoch), %h headers (k=v,k=v), plus kdissect's own
%Z the timestamp in ISO-8601 UTC, %d direction (produce or fetch) and %e the exchange number `read` lists; %%
is a percent sign; \\n, \\t, \\r and \\\\ are escapes. With -f, keys, values, topics and header keys are written as
sent, byte for byte (-1 lengths and empty text for nulls, as kcat): that is raw data on request, for a pipe, and
shown on a terminal it acts as the writer of the record chose. Without -f, a line for people: times in UTC, text
in quotes with every control character escaped (`kdissect.printable`), binary in hex, nulls as null.

A key or value that a schema or JSON reads (docs/values.md) is written for people as compact JSON followed by what
read it, `(avro confluent schema 7)`; with -f, as sent unless `--decode` asks for the JSON (kcat's `-s value=avro`).

Control records (transaction markers) carry no data: they are left out, as a consumer never sees them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

from kdissect.decode.streamed import StreamedRecord
from kdissect.printable import printable
from kdissect.records.values import LegacyMessage, Record, format_timestamp
from kdissect.views.json_lines import value_json
from kdissect.views.output import FormatError as OutputFormatError

HUMAN = "%Z %d %t [%p] @%o  key %k  value %s%h\\n"
"""The line printed without -f."""


class FormatError(OutputFormatError):
    """A format string with an unknown %-token; the message is one line for the user."""


def _raw(data: bytes | None) -> bytes:
    return b"" if data is None else data


def _shown(data: bytes | None) -> bytes:
    """For people: null, "text" (JSON-quoted, every control character escaped), or 0x… for bytes that are not text."""
    if data is None:
        return b"null"
    try:
        return printable(json.dumps(data.decode("utf-8"), ensure_ascii=False)).encode()
    except UnicodeDecodeError:
        return b"0x" + data.hex().encode()


def _shown_part(record: Record | LegacyMessage, part: str) -> bytes:
    """For people, a record of one of Kafka's own topics: what its key (after the record's kind) or value holds, as
    compact JSON, every control character escaped; any other record's bytes as `_shown` writes them."""
    reading, data = record.reading, getattr(record, part)
    held = getattr(reading, part) if reading is not None else None
    if reading is None or held is None:
        return _shown(data)
    text = printable(json.dumps(value_json(held), ensure_ascii=False, separators=(",", ":")))
    return (f"{reading.record} {text}" if part == "key" else text).encode()


def _length(data: bytes | None) -> bytes:
    return b"-1" if data is None else str(len(data)).encode()


def _timestamp(record: Record | LegacyMessage) -> int:
    return -1 if record.timestamp is None else record.timestamp


def _text(value: Any) -> bytes:
    return str(value).encode("utf-8", "backslashreplace")


def _safe(value: Any) -> bytes:
    """A name from the wire (a topic, a header key) in a line for people: its control characters escaped."""
    return printable(str(value)).encode("utf-8", "backslashreplace")


def _decoded_json(decoded: Any) -> bytes | None:
    """A decoded key or value as compact JSON (bytes inside it by the JSON layout's rule); None when it did not decode."""
    if decoded is None or not decoded.ok:
        return None
    from kdissect.views.json_lines import decoded_json, encode_value

    return encode_value(decoded_json(decoded)["value"])


def _tagged(decoded: Any) -> bytes:
    """For people: what read the value, after it (format, framing, schema)."""
    if decoded is None or decoded.plain:
        return b""
    schema = f" schema {decoded.schema_id}" if decoded.schema_id is not None else ""
    framing = f" {decoded.framing}" if decoded.framing != "none" else ""
    problems = "".join(f" {d.code}" for d in decoded.diagnostics)
    return _text(f" ({decoded.format}{framing}{schema}{problems})")


def compile_format(fmt: str, human: bool = False, decode: bool = False) -> Callable[[StreamedRecord], bytes]:
    """The format string as a function from a record to its line's bytes; `human` quotes keys and values and writes
    decoded ones as JSON with what read them; `decode` writes %k and %s as JSON where a schema or JSON reads them."""
    name = _safe if human else _text

    def side(index: int, part: str) -> Callable[[StreamedRecord], bytes]:
        """%k (`part` "key") or %s ("value"): a record of Kafka's own topics as kdissect reads it, for people."""
        plain: Callable[[StreamedRecord], bytes] = (
            (lambda r: _shown_part(r.record, part)) if human else (lambda r: _raw(getattr(r.record, part)))
        )
        if not (human or decode):
            return plain

        def one(r: StreamedRecord) -> bytes:
            decoded = r.decoded[index]
            made = _decoded_json(decoded)
            if made is not None and human:
                made = printable(made.decode()).encode()  # orjson escapes control characters, not bidi marks
            shown = plain(r) if made is None else made
            return shown + _tagged(decoded) if human else shown

        return one

    headers = (
        (lambda r: b"".join(b"  " + _safe(k) + b"=" + _shown(v) for k, v in r.record.headers))
        if human
        else (lambda r: b",".join(_text(k) + b"=" + _raw(v) for k, v in r.record.headers))
    )
    tokens: dict[str, Callable[[StreamedRecord], bytes]] = {
        "t": lambda r: name(r.topic if r.topic is not None else "?"),
        "p": lambda r: _text(r.partition if r.partition is not None else "?"),
        "o": lambda r: _text(r.record.offset),
        "k": side(0, "key"),
        "K": lambda r: _length(r.record.key),
        "s": side(1, "value"),
        "S": lambda r: _length(r.record.value),
        "T": lambda r: _text(_timestamp(r.record)),
        "Z": lambda r: _text(format_timestamp(_timestamp(r.record))),
        "h": headers,
        "d": lambda r: r.direction.encode(),
        "e": lambda r: _text(r.exchange.id),
    }
    escapes = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\"}
    parts: list[bytes | Callable[[StreamedRecord], bytes]] = []
    i = 0
    while i < len(fmt):
        char = fmt[i]
        following = fmt[i + 1] if i + 1 < len(fmt) else ""
        if char == "%":
            if following == "%":
                parts.append(b"%")
            elif following in tokens:
                parts.append(tokens[following])
            else:
                raise FormatError(f"-f {fmt!r}: unknown token %{following} (known: {' '.join('%' + t for t in tokens)} and %%)")
            i += 2
        elif char == "\\" and following in escapes:
            parts.append(escapes[following])
            i += 2
        else:
            parts.append(char.encode())
            i += 1

    def line(record: StreamedRecord) -> bytes:
        return b"".join(part if isinstance(part, bytes) else part(record) for part in parts)

    return line


class RecordLines:
    """Writes records as lines of bytes on a text stream's binary buffer (keys and values exactly as sent)."""

    def __init__(self, stream: IO[str], fmt: str | None, decode: bool = False) -> None:
        self._line = compile_format(HUMAN, human=True) if fmt is None else compile_format(fmt, decode=decode)
        stream.flush()
        self._out = stream.buffer  # type: ignore[attr-defined]  # standard output or a file opened as text: a TextIOWrapper

    def write(self, record: StreamedRecord) -> None:
        self._out.write(self._line(record))

    def flush(self) -> None:
        self._out.flush()
