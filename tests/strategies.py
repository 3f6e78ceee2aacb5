"""Hypothesis strategies built from kdissect's schema tables, and the comparison that goes with them.

`body(api_key, version, direction)` draws a `Struct` that is valid for that definition: every regular field
present with a value of its type, tagged fields present or absent, unknown tags in flexible versions, records
as null, empty or a small real batch. Names follow what the decoder produces: regular fields in spec order,
then every tagged field (known or unknown) in ascending tag order, unknown ones named "unknown tag N".

`normal(value)` turns a decoded or generated value into a plain, typed form so that two readings can be
compared exactly: a bool never equals the int 1, -0.0 never equals 0.0, an UnknownTag is compared by tag and
bytes (its offset is checked against the buffer instead), and generated records bytes compare with the
RecordSet the records decoder makes of them.
"""

from __future__ import annotations

import struct
import sys
from functools import cache
from typing import Any

from hypothesis import strategies as st

from kdissect.records import RecordSet, decode_records
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import BUILTIN, Field, MessageSpec, pick
from kdissect.schema.tree import Struct, UnknownTag

DIRECTIONS = ("request", "response")
TRIPLES: tuple[tuple[int, int, str], ...] = tuple(
    (key, version, direction) for key in sorted(BUILTIN.apis) for version in BUILTIN.apis[key].versions for direction in DIRECTIONS
)
"""Every (API key, version, direction) the tables define: 368 versions, each a request and a response."""

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
FLOAT_EDGES = [0.0, -0.0, 1.0, -1.5, float("inf"), float("-inf"), sys.float_info.max, -sys.float_info.max, sys.float_info.min, 5e-324]
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
MAX_UNKNOWN_TAG = 300
"""Unknown tags are drawn below this, so some need a two-byte varint."""


class RecordsBytes(bytes):
    """Bytes generated for a records field: the encoder writes them as they are, `normal` decodes them."""


def definition(api_key: int, version: int, direction: str) -> MessageSpec:
    api = BUILTIN.apis[api_key]
    found = pick(api.requests if direction == "request" else api.responses, version)
    assert found is not None, (api_key, version, direction)
    return found


def flexible(api_key: int, version: int, direction: str) -> bool:
    return version in definition(api_key, version, direction).flexible


# ---------------------------------------------------------------------------------------------- values

texts = st.text(max_size=12) | st.sampled_from(["", "é", "日本語", "topic-1", "\U0001f600 emoji", "a\x00b"])
floats = st.sampled_from(FLOAT_EDGES) | st.floats(allow_nan=False)
uuids = st.just(ZERO_UUID) | st.uuids().map(str)
payloads = st.none() | st.binary(max_size=8)
drafts = st.builds(
    Draft,
    key=payloads,
    value=payloads,
    headers=st.lists(st.tuples(st.sampled_from(["sw8", "trace", "é"]), payloads), max_size=2).map(tuple),
    timestamp=st.integers(0, 2**41),
)
small_batches = st.lists(drafts, min_size=1, max_size=3).map(lambda rs: RecordsBytes(encode_batch(rs)))


def primitive(type_: str) -> st.SearchStrategy[Any]:
    if type_ == "bool":
        return st.booleans()
    if type_ in INT_RANGES:
        lo, hi = INT_RANGES[type_]
        return st.integers(lo, hi) | st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1])
    if type_ == "float64":
        return floats
    if type_ == "uuid":
        return uuids
    if type_ == "string":
        return texts
    if type_ == "bytes":
        return st.binary(max_size=12)
    if type_ == "records":
        return st.just(RecordsBytes(b"")) | small_batches
    raise AssertionError(f"no strategy for type {type_}")


def field_value(f: Field, version: int, flex: bool) -> st.SearchStrategy[Any]:
    """A value for field `f` at `version`: arrays of 0-3 elements, nulls where the field allows them."""
    if f.is_struct:
        element: st.SearchStrategy[Any] = struct_of(f.fields, version, flex)
    else:
        element = primitive(f.type)
    if f.array:
        out: st.SearchStrategy[Any] = st.lists(element, max_size=3)
    else:
        out = element
    if version in f.nullable and (f.array or f.is_struct or f.type in ("string", "bytes", "records")):
        out = st.none() | out
    return out


ABSENT = object()


@cache
def struct_of(fields: tuple[Field, ...], version: int, flex: bool) -> st.SearchStrategy[Struct]:
    """A Struct for `fields` at `version`, named and ordered as the decoder names and orders them."""
    present = [f for f in fields if version in f.versions]
    regular = [f for f in present if version not in f.tagged]
    tagged = sorted((f for f in present if version in f.tagged), key=lambda f: f.tag)  # type: ignore[arg-type, return-value]
    regular_values = st.tuples(*(field_value(f, version, flex) for f in regular))
    if not flex:
        names = tuple(f.name for f in regular)
        return regular_values.map(lambda values: Struct(names, list(values)))
    known = {f.tag for f in tagged}
    tagged_values = st.tuples(*(st.just(ABSENT) | field_value(f, version, flex) for f in tagged))
    unknown = st.lists(
        st.tuples(st.integers(0, MAX_UNKNOWN_TAG).filter(lambda t: t not in known), st.binary(max_size=6)),
        max_size=2,
        unique_by=lambda t: t[0],
    )

    def build(parts: tuple[tuple[Any, ...], tuple[Any, ...], list[tuple[int, bytes]]]) -> Struct:
        values, tag_values, extra = parts
        tags: list[tuple[int, str, Any]] = [
            (f.tag, f.name, value)
            for f, value in zip(tagged, tag_values)
            if value is not ABSENT  # type: ignore[misc]
        ]
        tags += [(tag, f"unknown tag {tag}", UnknownTag(tag, data, -1)) for tag, data in extra]
        tags.sort(key=lambda t: t[0])
        return Struct(tuple(f.name for f in regular) + tuple(n for _, n, _ in tags), list(values) + [v for _, _, v in tags])

    return st.tuples(regular_values, tagged_values, unknown).map(build)


@cache
def body(api_key: int, version: int, direction: str) -> st.SearchStrategy[Struct]:
    """A random valid body for (api_key, version, direction)."""
    message = definition(api_key, version, direction)
    return struct_of(message.fields, version, version in message.flexible)


# ------------------------------------------------------------------------------------------ comparison


def normal(value: Any, buf: bytes | None = None) -> Any:
    """A typed, exactly comparable form of a decoded or generated value.

    With `buf`, an UnknownTag's offset must point at its bytes in it (decoded values); without, the offset
    is ignored (generated values carry -1).
    """
    if value is None:
        return None
    if isinstance(value, Struct):
        return ("struct", tuple((name, normal(v, buf)) for name, v in value.items()))
    if isinstance(value, list):
        return ("list", tuple(normal(v, buf) for v in value))
    if isinstance(value, UnknownTag):
        if buf is not None:
            assert bytes(buf[value.offset : value.offset + len(value.data)]) == value.data, value
        return ("unknown tag", value.tag, value.data)
    if isinstance(value, RecordsBytes):
        return ("records", decode_records(bytes(value)))
    if isinstance(value, RecordSet):
        return ("records", value)
    if isinstance(value, float):
        return ("float", struct.pack(">d", value))
    if isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    raise AssertionError(f"unexpected value {value!r}")


def records_hook(buf: Any, start: int, end: int) -> RecordSet:
    """The CompiledBodies records hook the round trips use: the project's records decoder, on the field's bytes."""
    return decode_records(buf[start:end])


def raw_records_hook(buf: Any, start: int, end: int) -> bytes:
    """A records hook that keeps the field's bytes: for oracles, which write records as opaque bytes."""
    return bytes(buf[start:end])


# ------------------------------------------------------------------------------------ filled examples


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


def _filled_value(type_: str, n: int) -> Any:
    if type_ == "bool":
        return n % 2 == 1
    if type_ in INT_RANGES:
        lo, hi = INT_RANGES[type_]
        return max(lo, min(hi, n))
    if type_ == "float64":
        return n + 0.5
    if type_ == "uuid":
        return f"{n:08x}-0000-4000-8000-{n:012x}"
    if type_ == "string":
        return f"name-{n}-é"
    if type_ == "bytes":
        return bytes([n % 256]) * 3
    if type_ == "records":
        return RecordsBytes(encode_batch([Draft(b"k%d" % n, b"v%d" % n, (("sw8", b"x"),), 1_700_000_000_000 + n)]))
    raise AssertionError(type_)


def filled_struct(fields: tuple[Field, ...], version: int, flex: bool, counter: _Counter | None = None, width: int = 2) -> Struct:
    """Every field present and non-null, arrays of `width` elements, every tagged field set: the richest body."""
    counter = counter or _Counter()
    present = [f for f in fields if version in f.versions]
    regular = [f for f in present if version not in f.tagged]
    tagged = sorted((f for f in present if version in f.tagged), key=lambda f: f.tag)  # type: ignore[arg-type, return-value]

    def one(f: Field) -> Any:
        if f.is_struct:
            return filled_struct(f.fields, version, flex, counter, width)
        return _filled_value(f.type, counter.next())

    values = [[one(f) for _ in range(width)] if f.array else one(f) for f in regular + tagged]
    return Struct(tuple(f.name for f in regular + tagged), values)


def filled(api_key: int, version: int, direction: str, width: int = 2) -> Struct:
    message = definition(api_key, version, direction)
    return filled_struct(message.fields, version, version in message.flexible, width=width)
