"""Bounded bookkeeping for the rules: evidence as it accumulates, counts over a sliding window, latency
percentiles from a histogram. Each holds a fixed amount whatever the length of the capture."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from kdissect.doctor.finding import Evidence
from kdissect.events import ConnectionInfo, Exchange

KEEP = 10
"""Evidence lists keep the first this many of each kind."""

K = TypeVar("K")
V = TypeVar("V")


def made(table: dict[K, V], key: K, make: Callable[..., V], *args: Any) -> V:
    """`table[key]`, made by `make(*args)` the first time: `setdefault` would make (and throw away) one at
    every call, and the rules call it for every exchange."""
    value = table.get(key)
    if value is None:
        value = table[key] = make(*args)
    return value


class Scope:
    """What the engine tells every trail about the exchange being looked at: whether `-Y` shows it."""

    __slots__ = ("shown", "filtered", "connections", "every")

    def __init__(self, filtered: bool, every: bool = False) -> None:
        self.shown = True
        self.filtered = filtered
        self.every = every
        """Keep every piece of evidence, not only the first `KEEP` of each kind (`doctor -w`)."""
        self.connections: set[int] = set()
        """Connections with a shown exchange, kept only under a filter: they carry capture findings."""


class Trail:
    """The evidence of one finding as it comes: every occurrence counts, only those the filter shows are kept."""

    __slots__ = (
        "scope",
        "ids",
        "count",
        "shown",
        "connections",
        "clients",
        "groups",
        "partitions",
        "first_ts",
        "last_ts",
        "every_id",
        "every_connection",
    )

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.ids: list[int] = []
        self.every_id: list[int] = []
        self.every_connection: list[int] = []
        """Filled only when the scope asks for every piece of evidence."""
        self.count = 0
        self.shown = 0
        self.connections: list[int] = []
        self.clients: list[str] = []
        self.groups: list[str] = []
        self.partitions: list[tuple[str, int | None]] = []
        self.first_ts: int | None = None
        self.last_ts: int | None = None

    def add(self, exchange: Exchange, group: str | None = None, topic: str | None = None, partition: int | None = None) -> None:
        self.count += 1
        if not self.scope.shown:
            return
        self.shown += 1
        if len(self.ids) < KEEP:
            self.ids.append(exchange.id)
        if self.scope.every:
            self.every_id.append(exchange.id)
        self._note(self.connections, exchange.connection.id)
        client_id = exchange.client_id
        if client_id:
            self._note(self.clients, client_id)
        if group is not None:
            self._note(self.groups, group)
        if topic is not None:
            self._note(self.partitions, (topic, partition))
        self.when(exchange.ts, exchange.response.ts if exchange.response is not None else exchange.ts)

    def connection(self, info: ConnectionInfo, first_ts: int, last_ts: int) -> None:
        """Evidence that is a connection, not an exchange (what the capture lost, for example)."""
        if not self.scope.filtered or info.id in self.scope.connections:
            self._note(self.connections, info.id)
            self.when(first_ts, last_ts)
            if self.scope.every:
                self.every_connection.append(info.id)

    def when(self, first_ts: int, last_ts: int) -> None:
        if self.first_ts is None or first_ts < self.first_ts:
            self.first_ts = first_ts
        if self.last_ts is None or last_ts > self.last_ts:
            self.last_ts = last_ts

    @staticmethod
    def _note(items: list, item: object) -> None:
        if len(items) < KEEP and item not in items:
            items.append(item)

    def __bool__(self) -> bool:
        """Whether there is anything to show: an exchange, or a connection the filter lets through."""
        return bool(self.shown or self.connections)

    def evidence(self) -> Evidence:
        return Evidence(
            tuple(self.ids),
            self.shown,
            tuple(self.connections),
            tuple(self.clients),
            tuple(self.groups),
            tuple(self.partitions),
            self.first_ts,
            self.last_ts,
            tuple(self.every_id),
            tuple(self.every_connection),
        )


class Window:
    """How many events fell within the last `span_ns`, counted in ten buckets; and the most there ever were."""

    __slots__ = ("width", "buckets", "total", "peak", "peak_ts", "count")

    def __init__(self, span_ns: int) -> None:
        self.width = max(1, span_ns // 10)
        self.buckets: deque[list[int]] = deque()
        self.total = 0
        self.peak = 0
        self.peak_ts = 0
        self.count = 0

    def add(self, ts: int) -> int:
        """Count an event at `ts` (in capture order); returns how many the window now holds."""
        index = ts // self.width
        buckets = self.buckets
        if buckets and buckets[-1][0] == index:
            buckets[-1][1] += 1
        else:
            buckets.append([index, 1])
        self.total += 1
        self.count += 1
        while buckets[0][0] <= index - 10:
            self.total -= buckets.popleft()[1]
        if self.total > self.peak:
            self.peak, self.peak_ts = self.total, ts
        return self.total


class Histogram:
    """Latencies in logarithmic buckets, eight per doubling: percentiles within 9 %, in constant memory."""

    __slots__ = ("counts", "n")

    STEPS = 8

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.n = 0

    def add(self, ns: int) -> None:
        bucket = int(math.log2(ns) * self.STEPS) if ns > 0 else 0
        self.counts[bucket] = self.counts.get(bucket, 0) + 1
        self.n += 1

    def percentile(self, q: float) -> int:
        """Nearest rank, as the bucket's upper bound in nanoseconds."""
        rank = max(1, math.ceil(q / 100 * self.n))
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return int(2 ** ((bucket + 1) / self.STEPS))
        return 0


def span(ns: float) -> str:
    """A duration for a title: 850 ms, 4.2 s, 3.5 min."""
    if ns < 10_000_000:
        return f"{ns / 1e6:.1f} ms"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.0f} ms"
    if ns < 120_000_000_000:
        return f"{ns / 1e9:.1f} s"
    return f"{ns / 6e10:.1f} min"


def where(topic: str | None, partition: int | None) -> str:
    return f"{topic or '?'}/{'?' if partition is None else partition}"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"
