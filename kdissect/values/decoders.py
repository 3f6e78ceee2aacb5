"""What a value's decoder gives back, whichever format it reads: the value as plain data, where it ended, or why not.

Each format has its module (avro.py, protobuf.py, json_values.py) that turns a `Schema` into a `Decode`, using the
format's own library; a decoder never raises, and a failure names the offset where the bytes stopped making sense.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Failure:
    """Why bytes did not decode: a stable code (values' diagnostics), the library's words, and the offset in the key or
    value where it happened (None when the library cannot say: the offset of the encoded value is given instead)."""

    code: str
    message: str
    offset: int | None = None


@dataclass(frozen=True, slots=True)
class Result:
    value: Any = None
    failure: Failure | None = None
    problems: tuple[Failure, ...] = ()
    """What was odd although the value decoded: bytes after its end, a value its JSON Schema does not allow."""
    name: str | None = None
    """The type the value was read as, when the format names one (a Protobuf message, an Avro record)."""


Decode = Callable[[bytes, int, "tuple[int, ...] | None"], Result]
"""(the key or value, where the encoded value starts, Protobuf message indexes a header gave) -> Result."""


class SchemaInvalid(Exception):
    """A schema its format's library will not compile: the message says why, for a `value.schema-invalid`."""


class LibraryMissing(Exception):
    """The format's library is not installed: the message says what to install."""


def plain(value: Any) -> Any:
    """A decoded value as JSON can hold it: dicts, lists, text, numbers, booleans, null, and bytes (which every view
    writes by the layout's bytes rule). Decimals, times and UUIDs that Avro's logical types give become text."""
    kind = type(value)
    if kind is dict:
        return {str(k): plain(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [plain(v) for v in value]
    if value is None or kind in (str, int, float, bool, bytes):
        return value
    isoformat = getattr(value, "isoformat", None)  # datetime, date, time (Avro's logical types)
    return isoformat() if isoformat is not None else str(value)  # Decimal, UUID
