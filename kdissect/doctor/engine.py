"""The doctor: every family of rules watching one stream of events, and the findings they add up to.

It reads the core's events and nothing else, so `doctor`, `stats` and `live` feed it the same way. A
display filter (`-Y`) restricts the evidence, not what the rules see: a rebalance storm is one whether or
not its JoinGroups are shown, and a finding none of whose evidence is shown is left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from kdissect.doctor.capture import Capture
from kdissect.doctor.consumers import Consumers
from kdissect.doctor.family import Family
from kdissect.doctor.finding import SEVERITIES, Evidence, Finding
from kdissect.doctor.groups import Groups
from kdissect.doctor.latency import Latency
from kdissect.doctor.producers import Producers
from kdissect.doctor.protocol import Protocol
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import Scope
from kdissect.events import ConnectionEnd, Exchange

FAMILIES: tuple[type[Family], ...] = (Groups, Consumers, Producers, Protocol, Latency, Capture)
"""In the order findings of the same severity are told."""
BOUNDS = Rule(
    "doctor.bounds",
    "info",
    "The doctor held its bookkeeping or its report to their bounds.",
    "What the doctor keeps per client id, partition, group and connection is bounded, so that a capture naming a "
    "new client id in every request, or 300 000 partitions, costs it a fixed amount of memory: events past those "
    "bounds are counted, not followed one by one, and rules about them see less. A report tells a bounded number "
    "of findings of each rule; the title counts the others.",
    "Look at what the capture holds that is so numerous (`kdissect stats`); `-Y` restricts the evidence (the "
    "rules still see everything), and a capture of fewer clients or connections is followed in full.",
    (Threshold("threshold", 100, "findings", "findings told of each rule; the others are counted in this one's title"),),
)
RULES: dict[str, Rule] = {rule.id: rule for family in FAMILIES for rule in family.RULES} | {BOUNDS.id: BOUNDS}


class Doctor:
    def __init__(self, changes: Iterable[str] = (), shown: Callable[[Exchange], bool] | None = None) -> None:
        """`changes`: `ID.threshold=VALUE` settings (a `SettingError` names a bad one); `shown`: the display
        filter's test of an exchange, None to show everything."""
        self.settings = Settings(RULES, tuple(changes))
        self.scope = Scope(filtered=shown is not None)
        self.shown = shown
        self.families = [family(self.settings, self.scope) for family in FAMILIES]

    def add(self, event: object) -> None:
        if isinstance(event, Exchange):
            scope = self.scope
            scope.shown = self.shown is None or self.shown(event)
            if scope.filtered and scope.shown:
                scope.connections.add(event.connection.id)
            for family in self.families:
                family.exchange(event)
        elif isinstance(event, ConnectionEnd):
            for family in self.families:
                family.ended(event)
            self.scope.connections.discard(event.connection.id)  # its exchanges have all come

    def findings(self, stopped: Callable[[], bool] = lambda: False) -> list[Finding]:
        """Worst first; within a severity, in the families' order. At most `doctor.bounds.threshold` of each rule, and a
        `doctor.bounds` finding when that or the bookkeeping's bounds left anything out. `stopped` is asked between
        findings: asked to stop during this pass, the findings so far are the answer (a run stopped before it gets
        its findings, which the bounds keep quick to make)."""
        found: list[Finding] = []
        told: Counter[str] = Counter()
        most = self.settings(BOUNDS, "threshold")
        before = stopped()
        for family in self.families:
            for finding in family.findings():
                told[finding.id] += 1
                if told[finding.id] <= most:
                    found.append(finding)
                if not before and stopped():
                    return self._sorted(found)
        untold = [f"{n - int(most)} more {rule} findings" for rule, n in told.items() if n > most]
        bounds = untold + list(dict.fromkeys(said for family in self.families for said in family.bounds()))
        if bounds:
            found.append(BOUNDS.finding(f"held to its bounds: {'; '.join(bounds)}", Evidence()))
        return self._sorted(found)

    @staticmethod
    def _sorted(found: list[Finding]) -> list[Finding]:
        return sorted(found, key=lambda f: -SEVERITIES.index(f.severity))
