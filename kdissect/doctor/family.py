"""What every family of rules is to the engine: it watches events, claims the troubles it explains, and at the end
says what it found."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from kdissect.doctor.clients import Clients
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings
from kdissect.doctor.trail import Kept, Scope, Trail
from kdissect.events import ConnectionEnd, Exchange


class Family:
    """A few rules about one part of Kafka, sharing the bookkeeping they need."""

    RULES: ClassVar[tuple[Rule, ...]] = ()

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        self.settings = settings
        self.scope = scope
        self.ledger = ledger
        self.clients = clients
        """Which library each client runs (`clients.py`)."""
        self.kept: list[Kept] = []
        """The bounds on the family's per-key tables whose keys the capture chooses."""

    def threshold(self, rule: Rule, name: str = "threshold") -> float:
        return self.settings(rule, name)

    def claim(self, exchange: Exchange, rule: Rule, *troubles: str) -> None:
        """`rule` explains these troubles of the exchange (an error's name, or a status: unanswered, malformed, ...;
        all of them when none is named)."""
        self.ledger.claim(exchange, rule, *troubles)

    def defer(self, exchange: Exchange, *troubles: str) -> None:
        """These troubles are explained later, when the family knows by which rule (`settle`); it keeps the exchange."""
        self.ledger.defer(exchange, *troubles)

    def settle(self, exchange: Exchange, rule: Rule | None) -> None:
        self.ledger.settle(exchange, rule)

    def trail(self, expr: str | None = None) -> Trail:
        """A trail of evidence for one of this family's findings; `expr` the filter that selects exactly it."""
        return Trail(self.scope, expr)

    def exchange(self, exchange: Exchange) -> None:
        """Every exchange, in the order the core completes them."""

    def ended(self, end: ConnectionEnd) -> None:
        """Every connection's totals."""

    def bounds(self) -> list[tuple[int, str]]:
        """What was counted past the family's bounds: how many events, and what of them, in the doctor's words
        (engine.py's `doctor.bounds`)."""
        return [(kept.past, kept.told()) for kept in self.kept if kept.past]

    def findings(self) -> Iterator[Finding]:
        """What the events added up to; called once, at the end."""
        return iter(())
