"""The doctor: every family of rules watching one stream of events, and the findings they add up to.

It reads the core's events and nothing else, so `doctor`, `stats` and `live` feed it the same way. A
display filter (`-Y`) restricts the evidence, not what the rules see: a rebalance storm is one whether or
not its JoinGroups are shown, and a finding none of whose evidence is shown is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kdissect.doctor.capture import Capture
from kdissect.doctor.consumers import Consumers
from kdissect.doctor.family import Family
from kdissect.doctor.finding import SEVERITIES, Finding
from kdissect.doctor.groups import Groups
from kdissect.doctor.latency import Latency
from kdissect.doctor.producers import Producers
from kdissect.doctor.protocol import Protocol
from kdissect.doctor.rule import Rule, Settings
from kdissect.doctor.trail import Scope
from kdissect.events import ConnectionEnd, Exchange

FAMILIES: tuple[type[Family], ...] = (Groups, Consumers, Producers, Protocol, Latency, Capture)
"""In the order findings of the same severity are told."""
RULES: dict[str, Rule] = {rule.id: rule for family in FAMILIES for rule in family.RULES}


class Doctor:
    def __init__(self, changes: Iterable[str] = (), shown: Callable[[Exchange], bool] | None = None, every: bool = False) -> None:
        """`changes`: `ID.threshold=VALUE` settings (a `SettingError` names a bad one); `shown`: the display
        filter's test of an exchange, None to show everything; `every`: keep every piece of evidence (`doctor -w`)."""
        self.settings = Settings(RULES, tuple(changes))
        self.scope = Scope(filtered=shown is not None, every=every)
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

    def findings(self) -> list[Finding]:
        """Worst first; within a severity, in the families' order."""
        found = [finding for family in self.families for finding in family.findings()]
        return sorted(found, key=lambda f: -SEVERITIES.index(f.severity))
