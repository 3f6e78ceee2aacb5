"""Structs back to bytes, driven by the same schema tables the decoders are compiled from.

`kdissect anonymize` writes the bodies it rewrote with it; tests use it for round trips over every API key and
version. It walks the schema rather than compiling it: it needs to be right, not fast, and it shares no code with
the decoder, so a round trip checks one reading of the tables against another.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Callable

from kdissect.schema.model import Field
from kdissect.schema.tree import Struct, UnknownTag
from kdissect.wire import write_uvarint

FIXED = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "float64": "d"}

RecordsEncoder = Callable[[Any], bytes]


class Encoder:
    """Encodes Structs whose names and values follow a definition at one version."""

    def __init__(self, records: RecordsEncoder = bytes) -> None:
        self._records = records

    def encode(self, fields: tuple[Field, ...], version: int, flexible: bool, value: Struct) -> bytes:
        out = bytearray()
        self._struct(out, fields, version, flexible, value)
        return bytes(out)

    def _struct(self, out: bytearray, fields: tuple[Field, ...], version: int, flexible: bool, value: Struct) -> None:
        present = [f for f in fields if version in f.versions]
        for f in present:
            if version not in f.tagged:
                self._field(out, f, version, flexible, value[f.name])
        if not flexible:
            return
        tagged: list[tuple[int, bytes]] = []
        for f in present:
            if version in f.tagged and f.name in value:
                assert f.tag is not None, "a tagged field has its tag"
                data = bytearray()
                self._field(data, f, version, flexible, value[f.name])
                tagged.append((f.tag, bytes(data)))
        for item in value.values:
            if isinstance(item, UnknownTag):
                tagged.append((item.tag, item.data))
        tagged.sort(key=lambda t: t[0])
        out += write_uvarint(len(tagged))
        for tag, raw in tagged:
            out += write_uvarint(tag) + write_uvarint(len(raw)) + raw

    def _field(self, out: bytearray, f: Field, version: int, flexible: bool, value: Any) -> None:
        compact = flexible if f.flexible is None else version in f.flexible
        if f.array:
            if value is None:
                out += b"\x00" if compact else struct.pack(">i", -1)
                return
            out += write_uvarint(len(value) + 1) if compact else struct.pack(">i", len(value))
            for item in value:
                if f.is_struct:
                    self._struct(out, f.fields, version, flexible, item)
                else:
                    self._value(out, f.type, compact, item)
            return
        if f.is_struct:
            if version in f.nullable:
                if value is None:
                    out += b"\xff"
                    return
                out += b"\x01"
            self._struct(out, f.fields, version, flexible, value)
            return
        self._value(out, f.type, compact, value)

    def _value(self, out: bytearray, type_: str, compact: bool, value: Any) -> None:
        if type_ in FIXED:
            out += struct.pack(">" + FIXED[type_], value)
        elif type_ == "uuid":
            out += uuid.UUID(value).bytes
        else:
            if type_ == "records" and value is not None and not isinstance(value, (bytes, bytearray)):
                value = self._records(value)
            data = value.encode("utf-8") if isinstance(value, str) else value
            if data is None:
                out += b"\x00" if compact else struct.pack(">h" if type_ == "string" else ">i", -1)
                return
            if compact:
                out += write_uvarint(len(data) + 1)
            else:
                out += struct.pack(">h" if type_ == "string" else ">i", len(data))
            out += data
