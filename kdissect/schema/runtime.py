"""Helpers the generated decoders call: the slow, rare paths kept out of the generated code."""

from __future__ import annotations

import struct
from typing import Any, Callable

from kdissect.schema.tree import Partial, Struct, UnknownTag
from kdissect.wire import WireError, read_uvarint

MAX_EMPTY_ELEMENTS = 1 << 16
"""Elements allowed in an array whose elements can take no bytes at all; anything more is a lie."""

TagTable = dict[int, "tuple[str, Callable[[Any, int], tuple[Any, int]]]"]


class ElementsCut(ValueError):
    """A message body's arrays of structs ask for more elements than `Limits.max_elements_message`: decoding stops
    there, the body as far as it was read is kept. Not a WireError: that class is compiled by mypyc, which lets no
    interpreted class derive from it."""

    code = "body.elements-cut"


ERRORS = (struct.error, IndexError, WireError, ElementsCut)
"""What a primitive read raises when the bytes run out or lie, or a bound stops the reading."""


def elements_bound(limit: int) -> Callable[[str, int], None]:
    """What a decoder calls when an array takes the message past `limit` elements of struct arrays."""

    def over(field: str, count: int) -> None:
        raise ElementsCut(
            f"{field} holds {count} elements, past the {limit} a message may hold (max_elements_message); the rest is not read"
        )

    return over


def check_count(count: int, remaining: int, min_size: int, field: str) -> None:
    """Refuse an array count the remaining bytes cannot hold, before anything is allocated for it."""
    if count * min_size > remaining or (min_size == 0 and count > MAX_EMPTY_ELEMENTS):
        raise WireError(f"{field} claims {count} elements, more than the {remaining} remaining bytes can hold")


def read_tags(
    buf: Any, pos: int, count: int, table: TagTable, names: tuple[str, ...], vals: list, spans: list | None
) -> tuple[tuple[str, ...], int]:
    """Read a tagged-field section: known tags decoded by name, unknown ones kept raw."""
    out = list(names)
    try:
        for _ in range(count):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise WireError(f"tagged field {tag} claims {size} bytes past the end of the data")
            entry = table.get(tag)
            if entry is None:
                out.append(f"unknown tag {tag}")
                vals.append(UnknownTag(tag, bytes(buf[pos:end]), pos))
                if spans is not None:
                    spans += (pos, end)
            else:
                name, read = entry
                out.append(name)
                try:
                    value, stop = read(memoryview(buf)[:end], pos)
                except Partial as partial:
                    vals.append(partial.value)
                    if spans is not None:
                        spans += (pos, end)
                    partial.path.insert(0, name)
                    raise
                except ERRORS as exc:
                    raise Partial(name, pos, _reason(exc, name), Struct(tuple(out[: len(vals)]), vals), _code(exc)) from None
                vals.append(value)
                if spans is not None:
                    spans += (pos, end)
                if stop != end:
                    raise Partial(name, stop, f"tagged field {name} holds {size} bytes but its value took {stop - pos}", None)
            pos = end
    except Partial as partial:
        partial.value = Struct(tuple(out[: len(vals)]), vals, spans)
        raise
    except ERRORS as exc:
        raise Partial(
            "(tagged fields)", pos, _reason(exc, "the tagged fields"), Struct(tuple(out[: len(vals)]), vals, spans), _code(exc)
        ) from None
    return tuple(out), pos


def _code(exc: BaseException) -> str:
    return exc.code if isinstance(exc, ElementsCut) else "body.malformed"


def _reason(exc: BaseException, field: str) -> str:
    if isinstance(exc, (struct.error, IndexError)):
        return f"the data ends inside {field}"
    return str(exc)


def fail(
    names: tuple[str, ...],
    groups: dict[int, tuple[tuple[str, int], ...]],
    vals: list,
    spans: list | None,
    buf: Any,
    pos: int,
    exc: BaseException,
) -> Partial:
    """Turn a primitive read failure into a Partial naming the exact field, decoding what still fits."""
    group = groups.get(len(vals))
    if group is not None:
        for fmt, size in group:
            if pos + size > len(buf):
                break
            vals.append(struct.unpack_from(">" + fmt, buf, pos)[0])
            if spans is not None:
                spans += (pos, pos + size)
            pos += size
    field = names[len(vals)] if len(vals) < len(names) else "(tagged fields)"
    return Partial(field, pos, _reason(exc, field), Struct(names[: len(vals)], vals, spans), _code(exc))


def partial_here(partial: Partial, names: tuple[str, ...], vals: list, spans: list | None) -> Partial:
    """A child failed: this level's struct, as far as it was read, becomes the value carried up.

    When the failure was in this level's own tagged fields, `read_tags` already built it, names and all.
    """
    if not (isinstance(partial.value, Struct) and partial.value.values is vals):
        partial.value = Struct(names[: len(vals)], vals, spans)
    return partial
