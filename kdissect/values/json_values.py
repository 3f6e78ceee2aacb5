"""JSON values: parsed by orjson, and checked against their JSON Schema (by the jsonschema library) when one names them."""

from __future__ import annotations

from typing import Any

import orjson

from kdissect.values.decoders import Decode, Failure, Result, SchemaInvalid
from kdissect.values.schemas import Schema


def parse_json(data: bytes, start: int) -> Result:
    """The JSON text from `start`; a syntax error names its offset in the key or value."""
    try:
        return Result(orjson.loads(data[start:] if start else data))
    except orjson.JSONDecodeError as exc:
        return Result(failure=Failure("value.malformed", f"JSON: {exc.msg}", start + _byte_offset(data[start:], exc.pos)))


def _byte_offset(data: bytes, position: int) -> int:
    """orjson counts characters; the offset counts bytes."""
    text = data.decode("utf-8", "replace")
    return len(text[:position].encode("utf-8"))


def compile_json_schema(schema: Schema) -> Decode:
    """A decoder that parses the value and says where it breaks its JSON Schema (without jsonschema installed, values
    are parsed and not checked: the reader says so once)."""
    try:
        document = orjson.loads(schema.text)
    except orjson.JSONDecodeError as exc:
        raise SchemaInvalid(f"a JSON Schema that is not JSON: {exc.msg}") from None
    check = _checker(document)

    def decode(data: bytes, start: int, indexes: tuple[int, ...] | None) -> Result:
        parsed = parse_json(data, start)
        if parsed.failure is not None or check is None:
            return parsed
        problem = check(parsed.value)
        if problem is None:
            return parsed
        return Result(parsed.value, None, (Failure("value.schema-mismatch", problem, start),), _title(document))

    return decode


def _title(document: Any) -> str | None:
    return document.get("title") if isinstance(document, dict) and isinstance(document.get("title"), str) else None


def _checker(document: Any) -> Any:
    try:
        from jsonschema import validators
    except ImportError:
        return None
    try:
        cls = validators.validator_for(document)
        cls.check_schema(document)
        validator = cls(document)
    except Exception as exc:  # jsonschema.SchemaError and what a broken $schema raises
        raise SchemaInvalid(f"not a JSON Schema: {str(exc).splitlines()[0]}") from None

    def check(value: Any) -> str | None:
        error = next(iter(validator.iter_errors(value)), None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"JSON Schema: {error.message}" + (f" (at /{where})" if where else "")

    return check
