"""Latency outliers per API and broker: the slowest responses against the usual ones. Requests held by
design are left out: long-poll Fetches (up to their MaxWaitMs) and JoinGroup/SyncGroup (held for the
rebalance)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from kdissect.doctor.facts import broker, fields
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import KEEP_GROUPS, Histogram, Kept, Scope, Seen, Trail, made, span
from kdissect.events import Exchange
from kdissect.schema import API_NAMES

FETCH, JOIN_GROUP, SYNC_GROUP, CONSUMER_GROUP_HEARTBEAT = 1, 11, 14, 68
HELD = {JOIN_GROUP, SYNC_GROUP}
SLOWEST = 10
"""Slowest exchanges kept per API and broker, as evidence."""

OUTLIERS = Rule(
    "latency.outliers",
    "warning",
    "Some responses of an API took far longer than the usual ones.",
    "A p99 many times the median means most requests are fast and a few wait: a broker pausing (GC, disk "
    "flushes, log segment rolls), a saturated request queue or network thread, replication waits for "
    "acks=all, or a congested network. Clients feel the tail, not the median.",
    "Look at the brokers in the evidence at those times: request queue time and GC in the broker metrics, "
    "the ISR for acks=all Produce, disk latency. Fetches are measured beyond their MaxWaitMs only.",
    (
        Threshold("threshold", 10, "times the median", "a p99 at least this many times the median"),
        Threshold("min_ms", 100, "ms", "and at least this many milliseconds"),
        Threshold("count", 20, "exchanges", "over at least this many exchanges of the API on the broker"),
    ),
)


class Latency(Family):
    RULES = (OUTLIERS,)

    def __init__(self, settings: Settings, scope: Scope) -> None:
        super().__init__(settings, scope)
        self.histograms: dict[tuple[int, str], Histogram] = {}
        self.slowest: dict[tuple[int, str], list[tuple[int, int, Seen]]] = {}
        self.pairs_kept = Kept(KEEP_GROUPS, "API and broker pairs: exchanges not timed")
        self.kept.append(self.pairs_kept)

    def exchange(self, exchange: Exchange) -> None:
        latency, key = exchange.latency, exchange.api_key
        if latency is None or key is None or key in HELD:
            return
        if key == FETCH:
            request = fields(exchange.request)
            wait = request.get("MaxWaitMs") if request is not None else None
            latency -= max(0, wait if isinstance(wait, int) else 0) * 1_000_000
            latency = max(latency, 0)
        where = (key, broker(exchange))
        if not self.pairs_kept.admits(where):
            return
        made(self.histograms, where, Histogram).add(latency)
        if self.scope.shown:
            slowest = self.slowest.setdefault(where, [])
            rank = (latency, -exchange.id)
            if len(slowest) < SLOWEST:
                heapq.heappush(slowest, (*rank, Seen.of(exchange)))
            elif rank > slowest[0][:2]:
                heapq.heapreplace(slowest, (*rank, Seen.of(exchange)))

    def findings(self) -> Iterator[Finding]:
        ratio, least, count = (self.threshold(OUTLIERS, n) for n in ("threshold", "min_ms", "count"))
        for (key, where), histogram in sorted(self.histograms.items()):
            if histogram.n < count or (key, where) not in self.slowest:
                continue
            p50, p99 = histogram.percentile(50), histogram.percentile(99)
            if p99 < least * 1e6 or p99 < ratio * p50:
                continue
            trail = Trail(Scope(filtered=False))  # `slowest` holds shown exchanges only
            for _, _, exchange in sorted(self.slowest[(key, where)], key=lambda item: -item[0]):
                trail.add(exchange)
            name = API_NAMES.get(key, f"api {key}")
            yield OUTLIERS.finding(
                f"{name} on {where}: p99 {span(p99)} against a median of {span(p50)} over {histogram.n} exchanges", trail.evidence()
            )
