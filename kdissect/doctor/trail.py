"""Bounded bookkeeping for the rules: evidence as it accumulates, counts over a sliding window, latency
percentiles from a histogram, each of a fixed size whatever the length of the capture; and the bounds on the tables
the rules keep per client id, partition, group or connection (`Kept`), whose keys a capture chooses: past them,
events are counted, not followed, and the doctor says so once (engine.py's `doctor.bounds`)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from kdissect.doctor.finding import Evidence, Unit
from kdissect.events import ConnectionInfo, Exchange

KEEP = 10
"""Evidence lists keep the first this many of each kind for people to open."""
ID_CAP = 5000
"""Exchange (and connection) ids a trail keeps for its filter when no expression says what its evidence is."""
KEEP_CLIENTS = 10_000
"""Client ids a family keeps tables for; a normal capture names dozens, a hostile one a new id per request."""
KEEP_MANY = 50_000
"""Keys that come many to a client: (client, topic, partition) lags (a consumer of every partition of a large
cluster, not a Fetch of 300 000 made-up ones)."""
KEEP_GROUPS = 10_000
"""Open transactions, (API, broker) pairs and (client, broker) throttles followed, each."""
KEEP_WAITING_ALL = 100_000
"""Unanswered requests kept across all connections until a later answer or their connection's end says why."""

K = TypeVar("K")
V = TypeVar("V")


class Sighting(NamedTuple):
    """What a trail takes from an exchange: a rule that holds evidence for later (latency's slowest) keeps this, not
    the exchange, whose bodies may hold megabytes of records."""

    id: int
    connection: int
    client_id: str | None
    ts: int
    end: int
    """When its response came (its request's time when none did)."""

    @classmethod
    def of(cls, exchange: Exchange) -> Sighting:
        end = exchange.response.ts if exchange.response is not None else exchange.ts
        return cls(exchange.id, exchange.connection.id, exchange.client_id, exchange.ts, end)


def made(table: dict[K, V], key: K, make: Callable[..., V], *args: Any) -> V:
    """`table[key]`, made by `make(*args)` the first time: `setdefault` would make (and throw away) one at
    every call, and the rules call it for every exchange."""
    value = table.get(key)
    if value is None:
        value = table[key] = make(*args)
    return value


class Kept:
    """The keys a family keeps per-key tables for: at most `most`, the first ones to come. Events of the other keys
    are counted (`past`), not followed, so the tables stop growing with the capture; `told` says it."""

    __slots__ = ("most", "what", "keys", "past")

    def __init__(self, most: int, what: str) -> None:
        self.most = most
        self.what = what
        """What the keys are and what was not followed of the rest: "client ids: exchanges not followed per client"."""
        self.keys: set[Any] = set()
        self.past = 0

    def admits(self, key: Any) -> bool:
        """Whether `key` has tables (making it one of the kept keys while there is room); else one more event past."""
        keys = self.keys
        if key in keys:
            return True
        if len(keys) < self.most:
            keys.add(key)
            return True
        self.past += 1
        return False

    def release(self, key: Any) -> None:
        """The tables let go of `key`: room for another."""
        self.keys.discard(key)

    def told(self) -> str:
        name, _, then = self.what.partition(": ")
        return f"{self.past} {then} past the first {self.most} {name}"


class Scope:
    """What the engine tells every trail about the exchange being looked at: whether `-Y` shows it."""

    __slots__ = ("shown", "filtered", "connections", "text", "every")

    def __init__(self, filtered: bool, text: str = "", every: bool = False) -> None:
        self.shown = True
        self.filtered = filtered
        self.text = text
        """The display filter's own text: an evidence filter is `(the rule's) and (this)`."""
        self.every = every
        """Keep every piece of evidence, not only the first `KEEP` of each kind (`doctor -w`)."""
        self.connections: set[int] = set()
        """Connections with a shown exchange, kept only under a filter: they carry capture findings."""


class Trail:
    """The evidence of one finding as it comes: every occurrence counts, only those the filter shows are kept.

    `expr` is the display filter that selects exactly what the rule adds (the reconciliation test in
    tests/test_doctor.py runs it on every capture); without one the trail's own ids make the filter."""

    __slots__ = (
        "scope",
        "expr",
        "ids",
        "count",
        "shown",
        "connections",
        "clients",
        "groups",
        "partitions",
        "first_ts",
        "last_ts",
        "_last_id",
        "every_connection",
    )

    def __init__(self, scope: Scope, expr: str | None = None) -> None:
        self.scope = scope
        self.expr = expr
        self.ids: list[int] = []
        """The evidence exchanges the filter shows: the first `ID_CAP`, or every one when the scope asks for every
        piece of evidence (`doctor -w`)."""
        self.every_connection: list[int] = []
        """Connections that are evidence by themselves, filled only when the scope asks for every piece of evidence."""
        self.count = 0
        self.shown = 0
        self.connections: list[int] = []
        self.clients: list[str] = []
        self.groups: list[str] = []
        self.partitions: list[tuple[str, int | None]] = []
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self._last_id = 0

    def add(self, exchange: Exchange, group: str | None = None, topic: str | None = None, partition: int | None = None) -> None:
        """One more piece of evidence; an exchange added again (for another partition, say) counts once."""
        self.add_sighting(Sighting.of(exchange), group, topic, partition)

    def add_sighting(self, seen: Sighting, group: str | None = None, topic: str | None = None, partition: int | None = None) -> None:
        """`add`, of what a rule kept of an exchange."""
        if seen.id == self._last_id:
            if self.scope.shown:
                self._name(group, topic, partition)
            return
        self._last_id = seen.id
        self.count += 1
        if not self.scope.shown:
            return
        self.shown += 1
        if len(self.ids) < ID_CAP or self.scope.every:
            self.ids.append(seen.id)
        if len(self.connections) < ID_CAP:
            self._note(self.connections, seen.connection, ID_CAP)
        if seen.client_id:
            self._note(self.clients, seen.client_id)
        self._name(group, topic, partition)
        self.when(seen.ts, seen.end)

    def absorb(self, other: Trail) -> None:
        """Take another trail's evidence as this one's (the safety net takes the claims of a rule that told nothing)."""
        self.count += other.count
        self.shown += other.shown
        self.ids += other.ids if self.scope.every else other.ids[: ID_CAP - len(self.ids)]
        self.every_connection += other.every_connection
        for mine, theirs, most in (
            (self.connections, other.connections, ID_CAP),
            (self.clients, other.clients, KEEP),
            (self.groups, other.groups, KEEP),
            (self.partitions, other.partitions, KEEP),
        ):
            for item in theirs:
                self._note(mine, item, most)
        if other.first_ts is not None and other.last_ts is not None:
            self.when(other.first_ts, other.last_ts)

    def _name(self, group: str | None, topic: str | None, partition: int | None) -> None:
        if group is not None:
            self._note(self.groups, group)
        if topic is not None:
            self._note(self.partitions, (topic, partition))

    def connection(self, info: ConnectionInfo, first_ts: int, last_ts: int) -> None:
        """Evidence that is a connection, not an exchange (what the capture lost, for example)."""
        self.count += 1
        if not self.scope.filtered or info.id in self.scope.connections:
            self._note(self.connections, info.id, ID_CAP)
            self.when(first_ts, last_ts)
            if self.scope.every:
                self.every_connection.append(info.id)

    def when(self, first_ts: int, last_ts: int) -> None:
        if self.first_ts is None or first_ts < self.first_ts:
            self.first_ts = first_ts
        if self.last_ts is None or last_ts > self.last_ts:
            self.last_ts = last_ts

    @staticmethod
    def _note(items: list, item: object, most: int = KEEP) -> None:
        if len(items) < most and item not in items:
            items.append(item)

    def __bool__(self) -> bool:
        """Whether there is anything to show: an exchange, or a connection the filter lets through."""
        return bool(self.shown or self.connections)

    @property
    def told(self) -> int:
        """What the finding's title counts: its evidence exchanges the filter shows, or its connections."""
        return self.shown if self.shown else len(self.connections)

    def evidence(self, connections: bool = False) -> Evidence:
        """The finding's evidence; `connections`: it is about connections, whatever exchanges it names."""
        unit: Unit = "connection" if connections or not self.shown and self.connections else "exchange"
        if self.expr is not None:
            chosen = self.expr
        elif unit == "connection":
            chosen = f"connection in {{{numbers(self.connections)}}}"
        else:
            chosen = f"id in {{{numbers(self.ids[:ID_CAP])}}}"
        return Evidence(
            tuple(self.ids[:KEEP]),
            len(self.connections) if unit == "connection" else self.shown,
            tuple(self.connections[:KEEP]),
            tuple(self.clients),
            tuple(self.groups),
            tuple(self.partitions),
            self.first_ts,
            self.last_ts,
            f"({chosen}) and ({self.scope.text})" if self.scope.filtered else chosen,
            unit,
            tuple(self.ids),
            tuple(self.every_connection),
        )


def numbers(values: list[int]) -> str:
    """Ids for a filter's set, runs of consecutive ones as ranges: 3, 7..12, 20."""
    out, ordered = [], sorted(set(values))
    start = prev = None
    for value in [*ordered, None]:
        if value is not None and prev is not None and value == prev + 1:
            prev = value
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}..{prev}")
        start = prev = value
    return ", ".join(out)


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
    """A duration for a title: 850 ms, 4.2 s, 3.5 min, 2.1 h, 12.4 days."""
    if ns < 10_000_000:
        return f"{ns / 1e6:.1f} ms"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.0f} ms"
    if ns < 120_000_000_000:
        return f"{ns / 1e9:.1f} s"
    if ns < 7_200_000_000_000:
        return f"{ns / 6e10:.1f} min"
    if ns < 172_800_000_000_000:
        return f"{ns / 3.6e12:.1f} h"
    return f"{ns / 8.64e13:.1f} days"


def where(topic: str | None, partition: int | None) -> str:
    return f"{topic or '?'}/{'?' if partition is None else partition}"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"
