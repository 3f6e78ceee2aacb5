"""What every family of rules is to the engine: it watches events and, at the end, says what it found."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from kdissect.doctor.finding import Finding
from kdissect.doctor.rule import Rule, Settings
from kdissect.doctor.trail import Kept, Scope
from kdissect.events import ConnectionEnd, Exchange


class Family:
    """A few rules about one part of Kafka, sharing the bookkeeping they need."""

    RULES: ClassVar[tuple[Rule, ...]] = ()

    def __init__(self, settings: Settings, scope: Scope) -> None:
        self.settings = settings
        self.scope = scope
        self.kept: list[Kept] = []
        """The bounds on the family's per-key tables."""

    def threshold(self, rule: Rule, name: str = "threshold") -> float:
        return self.settings(rule, name)

    def exchange(self, exchange: Exchange) -> None:
        """Every exchange, in the order the core completes them."""

    def ended(self, end: ConnectionEnd) -> None:
        """Every connection's totals."""

    def findings(self) -> Iterator[Finding]:
        """What the events added up to; called once, at the end."""
        return iter(())

    def bounds(self) -> list[str]:
        """What the family counted past its bookkeeping's bounds, in words; nothing on a capture within them."""
        return [kept.told() for kept in self.kept if kept.past]
