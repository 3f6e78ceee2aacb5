"""What kdissect read inside a payload, as the group families see it: the annotation beside a bytes field, when it
is a struct (a Connect payload, a consumer-protocol payload and the Kafka Streams user data inside it)."""

from __future__ import annotations

from typing import Any

from kdissect.schema.tree import Struct


def reading(struct: Struct | None, field: str) -> Struct | None:
    """The struct kdissect read out of `struct.field`, if any."""
    if struct is None or not struct.annotations:
        return None
    found = struct.annotations.get(field)
    return found if isinstance(found, Struct) else None


def integer(struct: Struct | None, field: str) -> int | None:
    value: Any = struct.get(field) if struct is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(struct: Struct | None, field: str) -> str | None:
    value: Any = struct.get(field) if struct is not None else None
    return value if isinstance(value, str) else None
