"""Latency outliers per API and broker, judged on the broker's own time: the time a request waited in line behind
earlier ones on its connection is left out (a broker takes a connection's requests one at a time: a Metadata request
sent during a 500 ms long poll waits for it), and so are requests held by design: long-poll Fetches (up to their
MaxWaitMs) and JoinGroup/SyncGroup (held for the rebalance)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import broker, fields
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import KEEP_GROUPS, Histogram, Kept, Scope, Sighting, Trail, made, plural, span
from kdissect.events import Exchange
from kdissect.schema import ApiKey

HELD = {ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP}
SLOWEST = 10
"""Slowest exchanges kept per API and broker, as evidence."""

OUTLIERS = Rule(
    "latency.outliers",
    "warning",
    "The broker took far longer on some requests of an API than on the usual ones.",
    "Measured from when the broker could start on a request (after answering the requests ahead of it on the same "
    "connection) to its answer, a p99 many times the median means the broker itself paused on a few: GC, disk "
    "flushes, log segment rolls, a saturated request queue or network thread, replication waits for acks=all. "
    "Clients feel the tail, not the median.",
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

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.histograms: dict[tuple[int, str], Histogram] = {}
        self.slowest: dict[tuple[int, str], list[tuple[int, int, Sighting]]] = {}
        """The slowest exchanges of each (API, broker), as a trail takes them (a Produce's records are not kept)."""
        self.names: dict[tuple[int, str], str | None] = {}
        self.queued: dict[tuple[int, str], int] = {}
        """(API, broker) -> the longest time one of its requests waited in line (left out of the measure)."""
        self.pairs_kept = Kept(KEEP_GROUPS, "API and broker pairs: exchanges not timed")
        self.kept.append(self.pairs_kept)

    def exchange(self, exchange: Exchange) -> None:
        service, key = exchange.service, exchange.api_key
        if service is None or key is None or key in HELD:
            return
        if key == ApiKey.FETCH:
            request = fields(exchange.request)
            wait = request.get("MaxWaitMs") if request is not None else None
            service = max(0, service - max(0, wait if isinstance(wait, int) else 0) * 1_000_000)
        where = (key, broker(exchange))
        if not self.pairs_kept.admits(where):
            return
        made(self.histograms, where, Histogram).add(service)
        if exchange.queued:
            self.queued[where] = max(self.queued.get(where, 0), exchange.queued)
        if self.scope.shown:
            slowest = self.slowest.get(where)
            if slowest is None:
                slowest = self.slowest[where] = []
                self.names[where] = exchange.api_name
            if len(slowest) < SLOWEST or (service, -exchange.id) > slowest[0][:2]:
                item = (service, -exchange.id, Sighting.of(exchange))
                (heapq.heappush if len(slowest) < SLOWEST else heapq.heapreplace)(slowest, item)

    def findings(self) -> Iterator[Finding]:
        ratio, least, count = (self.threshold(OUTLIERS, n) for n in ("threshold", "min_ms", "count"))
        for (key, where), histogram in sorted(self.histograms.items()):
            if histogram.n < count or (key, where) not in self.slowest:
                continue
            p50, p99 = histogram.percentile(50), histogram.percentile(99)
            if p99 < least * 1e6 or p99 < ratio * p50:
                continue
            trail = Trail(Scope(self.scope.filtered, self.scope.text, self.scope.every))  # `slowest` holds shown exchanges only
            for _, _, seen in sorted(self.slowest[(key, where)], key=lambda item: -item[0]):
                trail.add_sighting(seen)
            name = self.names[(key, where)] or f"api {key}"
            waited = self.queued.get((key, where))
            line = f"; up to {span(waited)} in line behind earlier requests left out" if waited else ""
            yield OUTLIERS.finding(
                f"{plural(trail.told, 'slowest ' + name + ' exchange')} on {where}: the broker's own time at p99 {span(p99)} against a "
                f"median of {span(p50)} over {histogram.n} exchanges{line}",
                trail.evidence(),
            )
