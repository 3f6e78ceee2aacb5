"""Bounded memory for a tap that runs for days: what the tap remembers by a name from the wire is kept while it is
in use and let go when it has been idle, and there is never more of it than a budget.

`Recent` is a dict with that rule. `Budget` gives a kind of label value (client ids, topics, groups, ...) its own
label for the first `top` values seen and `other` for the rest, until an admitted value goes idle and frees its
slot: first come, not busiest, since a label once given cannot move to another value without breaking the counters
it names. The first value turned away is told once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from kdissect.printable import printable

K = TypeVar("K")
V = TypeVar("V")

OTHER = "other"
"""The label of the values past a budget (and of every label of a series past its metric's most)."""
LONGEST = 200
"""Characters of a label value kept: a client id of a megabyte is a name, not a payload."""


class Recent(Generic[K, V]):
    """At most `most` entries, each with when it was last used; `sweep` lets go of the idle ones. Past `most`, new
    keys are refused (`put` returns False): what is already known stays right."""

    __slots__ = ("most", "_items")

    def __init__(self, most: int) -> None:
        self.most = most
        self._items: dict[K, list] = {}

    def get(self, key: K, now: int) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        item[1] = now
        return item[0]

    def put(self, key: K, value: V, now: int) -> bool:
        item = self._items.get(key)
        if item is not None:
            item[0], item[1] = value, now
            return True
        if len(self._items) >= self.most:
            return False
        self._items[key] = [value, now]
        return True

    def pop(self, key: K) -> V | None:
        item = self._items.pop(key, None)
        return None if item is None else item[0]

    def sweep(self, before: int) -> int:
        """Forget what was last used before `before` (ns); how many went."""
        idle = [key for key, item in self._items.items() if item[1] < before]
        for key in idle:
            del self._items[key]
        return len(idle)

    def items(self) -> Iterator[tuple[K, V]]:
        for key, item in self._items.items():
            yield key, item[0]

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items


class Budget:
    """The label values of one kind: the first `top` get their own label (escaped as `printable` escapes captured
    text, at most `LONGEST` characters), the rest are `other`."""

    __slots__ = ("kind", "_values", "turned_away", "told")

    def __init__(self, kind: str, top: int) -> None:
        self.kind = kind
        self._values: Recent[str, str] = Recent(top)
        self.turned_away = 0
        """Measurements whose value was counted as `other`."""
        self.told: str | None = None
        """Set once, when the first value is turned away: the line that says so (the caller prints it)."""

    def label(self, value: str | None, now: int) -> str:
        if not value:
            return ""
        label = self._values.get(value, now)
        if label is not None:
            return label
        label = printable(value)[:LONGEST]
        if self._values.put(value, label, now):
            return label
        self.turned_away += 1
        if self.told is None:
            self.told = (
                f"more than {self._values.most} {self.kind} at once: the rest are counted as '{OTHER}' until one goes idle "
                f"(--metrics-top; kdissect_metrics_overflow_total counts them)"
            )
        return OTHER

    def sweep(self, before: int) -> int:
        return self._values.sweep(before)

    def __len__(self) -> int:
        return len(self._values)
