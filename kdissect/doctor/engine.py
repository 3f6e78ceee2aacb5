"""The doctor: every family of rules watching one stream of events, the accounting of every exchange that went
wrong, and the findings they add up to, linked where one explains another and advised in each client's dialect.

It reads the core's events and nothing else, so `doctor`, `read`, `stats` and `live` feed it the same way. A
display filter (`-Y`) restricts the evidence, not what the rules see: a rebalance storm is one whether or not its
JoinGroups are shown, and a finding none of whose evidence is shown is left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from kdissect.doctor import ledger
from kdissect.doctor.admin import Admin
from kdissect.doctor.capture import Capture
from kdissect.doctor.clients import Clients
from kdissect.doctor.connect import Connect
from kdissect.doctor.connections import Connections
from kdissect.doctor.consumers import Consumers
from kdissect.doctor.dialects import worded
from kdissect.doctor.family import Family
from kdissect.doctor.finding import SEVERITIES, Evidence, Finding
from kdissect.doctor.groups import Groups
from kdissect.doctor.latency import Latency
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.next_groups import NextGroups
from kdissect.doctor.producers import Producers
from kdissect.doctor.protocol import Protocol
from kdissect.doctor.rebalances import Rebalances
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.streams import Streams
from kdissect.doctor.trail import Scope, plural, span
from kdissect.doctor.values import Values
from kdissect.events import ConnectionEnd, Exchange
from kdissect.filter import EVERYTHING, Filter

FAMILIES: tuple[type[Family], ...] = (
    Groups,
    Connect,
    Streams,
    NextGroups,
    Consumers,
    Producers,
    Connections,
    Protocol,
    Values,
    Admin,
    Latency,
    Capture,
)
"""In the order findings of the same severity are told."""
BOUNDS = Rule(
    "doctor.bounds",
    "info",
    "The doctor held its bookkeeping or its report to their bounds.",
    "What the doctor keeps per client id, partition and connection is bounded, so that a capture naming a new "
    "client id in every request, or 300 000 partitions, costs it a fixed amount of memory: events past those bounds "
    "are counted, not followed one by one, and the rules about them see less. A report tells a bounded number of "
    "findings of each rule; the title counts the others. No filter selects what was counted: the count is all there is.",
    "Look at what the capture holds that is so numerous (`kdissect stats`); a capture of fewer clients or connections is followed in full.",
    (Threshold("threshold", 100, "findings", "findings told of each rule; the others are counted in this one's title"),),
)
RULES: dict[str, Rule] = {rule.id: rule for rules in (*(f.RULES for f in FAMILIES), ledger.RULES, (BOUNDS,)) for rule in rules}
MOST_NAMES = 10_000
"""Client ids and groups the census counts one by one; past it, more are counted as more."""


@dataclass(frozen=True, slots=True)
class Cause:
    """A finding that explains another when their evidence shares `what` (client ids, groups or connections)."""

    effect: str
    cause: str
    what: str


CAUSES = (
    Cause("producer.not-idempotent", "producer.init-producer-id-refused", "client_ids"),
    Cause("producer.sequence-refused", "producer.duplicate-send", "client_ids"),
    Cause("producer.duplicate-send", "protocol.unanswered", "client_ids"),
    Cause("producer.duplicate-send", "protocol.client-gave-up", "client_ids"),
    Cause("protocol.client-gave-up", "latency.outliers", "connections"),
    Cause("protocol.connection-churn", "producer.duplicate-send", "client_ids"),
    Cause("protocol.connection-churn", "protocol.broker-closed", "client_ids"),
    Cause("protocol.connection-churn", "protocol.malformed", "client_ids"),
    Cause("protocol.metadata-storm", "producer.unknown-topic", "client_ids"),
    Cause("protocol.metadata-storm", "producer.not-leader", "client_ids"),
    Cause("group.rebalance-storm", "group.member-removed", "groups"),
    Cause("group.commit-failed", "group.member-removed", "groups"),
    Cause("group.commit-failed", "group.rebalance-storm", "groups"),
    Cause("protocol.unanswered", "capture.lost-segments", "connections"),
)


class Census:
    """What a capture held, for the verdict: its time span, connections, exchanges, clients and groups."""

    __slots__ = ("first_ts", "last_ts", "exchanges", "connections", "client_ids", "groups")

    def __init__(self) -> None:
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.exchanges = self.connections = 0
        self.client_ids: set[str] = set()
        """Up to MOST_NAMES (+1, which says there were more)."""
        self.groups: set[str] = set()

    def exchange(self, exchange: Exchange) -> None:
        self.exchanges += 1
        ts = exchange.ts
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        end = exchange.response.ts if exchange.response is not None else ts
        if self.last_ts is None or end > self.last_ts:
            self.last_ts = end
        client_id = exchange.client_id
        if client_id and len(self.client_ids) <= MOST_NAMES:
            self.client_ids.add(client_id)
        for message in (exchange.request, exchange.response):
            for group in getattr(getattr(message, "body", None), "groups", ()):
                if len(self.groups) <= MOST_NAMES:
                    self.groups.add(group)

    def connection(self, end: ConnectionEnd) -> None:
        self.connections += 1
        if self.first_ts is None or end.first_ts < self.first_ts:
            self.first_ts = end.first_ts
        if self.last_ts is None or end.last_ts > self.last_ts:
            self.last_ts = end.last_ts

    @property
    def span_ns(self) -> int:
        return self.last_ts - self.first_ts if self.first_ts is not None and self.last_ts is not None else 0

    def __str__(self) -> str:
        took = span(self.span_ns) if self.first_ts is not None else "no time"
        parts = [plural(self.connections, "connection"), plural(self.exchanges, "exchange")]
        for names, word in ((self.client_ids, "client"), (self.groups, "group")):
            parts.append(f"more than {MOST_NAMES} {word}s" if len(names) > MOST_NAMES else plural(len(names), word))
        return f"{took}: {', '.join(parts)}"


@dataclass(frozen=True, slots=True)
class Report:
    """The doctor's answer: the findings, worst first, and the one line that sums them up."""

    findings: tuple[Finding, ...]
    census: Census

    @property
    def problems(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity != "info")

    @property
    def verdict(self) -> str:
        problems = self.problems
        if not problems:
            return f"nothing wrong in {self.census}"
        errors = sum(f.severity == "error" for f in problems)
        kinds = ", ".join(plural(n, s) for n, s in ((errors, "error"), (len(problems) - errors, "warning")) if n)
        ids = ", ".join(dict.fromkeys(f.id for f in problems))
        return f"{plural(len(problems), 'problem')} ({kinds}) in {self.census}: {ids}"


class Doctor:
    def __init__(
        self,
        changes: Iterable[str] = (),
        wanted: Filter = EVERYTHING,
        clients: Clients | None = None,
        values: Any = None,
        every: bool = False,
    ) -> None:
        """`changes`: `ID.threshold=VALUE` settings (a `SettingError` names a bad one); `wanted`: the display
        filter, whose text every evidence filter adds; `clients`: what an earlier doctor learnt of the clients'
        software, for one that takes over from it on the same traffic (a tap's next window); `values`: the run's
        `values.reader.ValueReader` (the one of --schemas, --schema-registry and the capture); `every`: keep every
        piece of evidence, not only the first few of each kind (`doctor -w` cuts them into a capture)."""
        self.settings = Settings(RULES, tuple(changes))
        self.scope = Scope(filtered=wanted.active, text=wanted.text, every=every)
        self.shown = wanted.matches if wanted.active else None
        self.ledger = Ledger(self.scope)
        self.clients = Clients() if clients is None else clients
        self.census = Census()
        self.families = [family(self.settings, self.scope, self.ledger, self.clients) for family in FAMILIES]
        for family in self.families:
            if isinstance(family, Values) and values is not None:
                family.reader = values

    def add(self, event: object) -> None:
        if isinstance(event, Exchange):
            scope = self.scope
            scope.shown = self.shown is None or self.shown(event)
            if scope.filtered and scope.shown:
                scope.connections.add(event.connection.id)
            self.census.exchange(event)
            self.clients.exchange(event)
            self.ledger.open(event)
            for family in self.families:
                family.exchange(event)
            self.ledger.close(event)
        elif isinstance(event, ConnectionEnd):
            self.census.connection(event)
            for family in self.families:
                family.ended(event)
            self.clients.ended(event.connection.id)

    @property
    def rebalances(self) -> Rebalances:
        """The groups' generations, rebalances and commits, as the groups family follows them."""
        return next(f.rebalances for f in self.families if isinstance(f, Groups))

    def findings(self, stopped: Callable[[], bool] = lambda: False) -> list[Finding]:
        """Worst first; within a severity, in the families' order (the safety net last). At most
        `doctor.bounds.threshold` of each rule, and a `doctor.bounds` finding when that or the bookkeeping's bounds
        left anything out. `stopped` is asked between findings: asked to stop during this pass, the findings so far
        are the answer (a run stopped before this pass gets them all, which the bounds keep quick to make)."""
        found: list[Finding] = []
        before = stopped()
        for family in self.families:
            for finding in family.findings():
                found.append(finding)
                if not before and stopped():
                    return self._sorted([self._worded(self._linked(f, found)) for f in found])
        told = {f.id for f in found if f.severity != "info" or RULES[f.id].expected}
        found += self.ledger.findings(told)
        found = [self._worded(self._linked(f, found)) for f in found]
        most = int(self.settings(BOUNDS, "threshold"))
        counted: Counter[str] = Counter()
        kept = []
        for finding in found:
            counted[finding.id] += 1
            if counted[finding.id] <= most:
                kept.append(finding)
        past = [(n - most, f"{n - most} more {rule} findings not told") for rule, n in counted.items() if n > most]
        past += [said for family in self.families for said in family.bounds()]
        if past:
            total = sum(n for n, _ in past)
            title = f"{total} counted past the doctor's bounds: {'; '.join(said for _, said in past)}"
            kept.append(BOUNDS.finding(title, Evidence(count=total)))  # no filter selects them: the count is all there is
        return self._sorted(kept)

    def report(self, stopped: Callable[[], bool] = lambda: False) -> Report:
        return Report(tuple(self.findings(stopped)), self.census)

    @staticmethod
    def _sorted(found: list[Finding]) -> list[Finding]:
        return sorted(found, key=lambda f: -SEVERITIES.index(f.severity))

    @staticmethod
    def _linked(finding: Finding, found: list[Finding]) -> Finding:
        """The finding with the findings that explain it named, and their fix put first in its advice."""
        causes = []
        for cause in CAUSES:
            if cause.effect != finding.id:
                continue
            mine = set(getattr(finding.evidence, cause.what))
            causes += [f for f in found if f.id == cause.cause and mine & set(getattr(f.evidence, cause.what))]
        if not causes:
            return finding
        ids = tuple(dict.fromkeys(f.id for f in causes))
        advice = f"This follows from {', '.join(ids)}: fix that first. {finding.advice}"
        return replace(finding, caused_by=ids, advice=advice)

    def _worded(self, finding: Finding) -> Finding:
        """The advice in the dialect of the library the finding's clients run."""
        software = self.clients.of_clients(finding.evidence.client_ids)
        dialect = software.dialect if software is not None else None
        return replace(finding, advice=worded(finding.advice, dialect), software=None if software is None else str(software))
