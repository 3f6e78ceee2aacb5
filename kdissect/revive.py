"""Typed values to JSON and back by their type hints: what the cache keeps of a browse (findings, flows, the
groups' rounds, connections) comes back as the dataclasses and named tuples it was made of. Never pickle: a cache
file is data, and one that does not fit the types is refused (ValueError, TypeError), not run.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections import Counter
from typing import Any, Literal, Union

import orjson

PLAIN = (str, int, float, bool)


def dumps(value: Any) -> bytes:
    """`value` as JSON: a dataclass as an object, a named tuple, a tuple or a set as an array."""
    return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS)


def _default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not kept as JSON")


def revived(kind: Any, value: Any) -> Any:
    """`value`, read from JSON, made again as the type `kind` (a type hint) says."""
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        return _one_of(typing.get_args(kind), value)
    if origin is Literal:
        if value not in typing.get_args(kind):
            raise ValueError(f"{value!r} is not one of {kind}")
        return value
    if kind is Any:
        return value
    if kind in PLAIN:
        if type(value) is not kind and not (kind is float and type(value) is int):
            raise TypeError(f"{value!r} is not {kind.__name__}")
        return value
    if origin is not None:
        return _container(origin, typing.get_args(kind), value)
    return _record(kind, value)


def _one_of(choices: tuple[Any, ...], value: Any) -> Any:
    if value is None and type(None) in choices:
        return None
    kinds = [c for c in choices if c is not type(None)]
    if len(kinds) != 1:
        raise TypeError(f"{choices}: only one type, or it and None, is kept")
    return revived(kinds[0], value)


def _container(origin: Any, args: tuple[Any, ...], value: Any) -> Any:
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(revived(args[0], v) for v in _list(value))
        if len(_list(value)) != len(args):
            raise ValueError(f"{args} are {len(args)} values")
        return tuple(revived(a, v) for a, v in zip(args, value))
    if origin in (list, set, frozenset):
        return origin(revived(args[0], v) for v in _list(value))
    if origin in (dict, Counter):
        key, item = (args[0], args[1]) if origin is dict else (args[0], int)
        if not isinstance(value, dict):
            raise TypeError(f"{value!r} is not an object")
        return origin({revived(key, int(k) if key is int else k): revived(item, v) for k, v in value.items()})
    raise TypeError(f"{origin} is not kept as JSON")


def _record(kind: Any, value: Any) -> Any:
    """A dataclass (from an object) or a named tuple (from an array)."""
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = _hints(kind)
        return kind(**{f.name: revived(hints[f.name], value[f.name]) for f in dataclasses.fields(kind) if f.init})
    if isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields"):
        hints = _hints(kind)
        if len(_list(value)) != len(kind._fields):
            raise ValueError(f"{kind.__name__} has {len(kind._fields)} fields")
        return kind(*(revived(hints[name], v) for name, v in zip(kind._fields, value)))
    raise TypeError(f"{kind} is not kept as JSON")


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{value!r} is not an array")
    return value


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)
