"""Frozen dataclasses built fast, for values made once per frame, record or exchange.

A frozen dataclass sets each field through object.__setattr__, which costs about 1.1 µs for six fields against
0.25 µs for a plain slotted class. A twin class with the same slots in the same order is built instead, and its
`__class__` set to the frozen class: same layout, so Python allows it, and the result is an ordinary frozen
instance, equal, hashable and picklable like any other.
"""

from __future__ import annotations

from dataclasses import fields, make_dataclass
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def unfrozen_twin(cls: type) -> type:
    """A plain slotted class with the fields of frozen dataclass `cls`, in the same order."""
    return make_dataclass(f"{cls.__name__}Twin", [(f.name, f.type) for f in fields(cls)], slots=True, eq=False, repr=False)


def fast_constructor(cls: type[T]) -> Callable[..., T]:
    """A positional constructor of `cls` that skips the frozen dataclass's per-field setattr."""
    twin = unfrozen_twin(cls)

    def build(*args: Any) -> T:
        obj = twin(*args)
        obj.__class__ = cls
        return obj  # type: ignore[return-value]

    build.__doc__ = f"Build a {cls.__name__} from its fields in order."
    return build
