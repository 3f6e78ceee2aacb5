"""Avro values, read by fastavro's schemaless reader with the writer's schema (a registry's schema is the writer's)."""

from __future__ import annotations

import io
from typing import Any

import orjson

from kdissect.values.decoders import Decode, Failure, LibraryMissing, Result, SchemaInvalid, plain
from kdissect.values.schemas import Book, Schema


def _as_is(value: Any) -> Any:
    return value


def compile_avro(schema: Schema, book: Book) -> Decode:
    """A decoder for values written with `schema`; named types it references (by subject and version) are parsed first."""
    try:
        import fastavro
    except ImportError:
        raise LibraryMissing("Avro needs fastavro: pip install 'kdissect[values]'") from None
    named: dict[str, Any] = {}
    try:
        for reference in schema.references:
            referenced = book.by_version(reference.subject, reference.version)
            if referenced is not None:
                fastavro.parse_schema(orjson.loads(referenced.text), named_schemas=named)
        parsed = fastavro.parse_schema(orjson.loads(schema.text), named_schemas=named)
    except Exception as exc:  # fastavro raises SchemaParseException, ValueError, KeyError... for a bad schema
        raise SchemaInvalid(f"not an Avro schema fastavro can parse: {exc}") from None
    reader = fastavro.schemaless_reader
    name = parsed.get("name") if isinstance(parsed, dict) else None
    made = plain if "logicalType" in schema.text else _as_is  # only logical types give values JSON cannot hold

    def decode(data: bytes, start: int, indexes: tuple[int, ...] | None) -> Result:
        stream = io.BytesIO(data)
        stream.seek(start)
        try:
            value = reader(stream, parsed, None)
        except Exception as exc:  # EOFError, StopIteration, UnicodeDecodeError, IndexError (a bad union branch)...
            reason = str(exc) or type(exc).__name__
            return Result(failure=Failure("value.malformed", f"Avro: {reason}", stream.tell()))
        end = stream.tell()
        problems: tuple[Failure, ...] = ()
        if end < len(data):
            problems = (Failure("value.trailing-bytes", f"{len(data) - end} bytes follow the Avro value", end),)
        return Result(made(value), None, problems, name)

    return decode
