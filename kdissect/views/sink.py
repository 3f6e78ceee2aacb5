"""Where the core's events go: the totals always; exchanges the filter lets through, and notices, to the output."""

from __future__ import annotations

from typing import NamedTuple

from kdissect.events import ConnectionEnd, Event, Exchange, Notice
from kdissect.filter import Filter
from kdissect.views.output import Output
from kdissect.views.summary import Facts, Summary


class Settled(NamedTuple):
    """An exchange another process decoded, tested and wrote (`read --jobs`): this process's own copy (its
    bodies not decoded here), whether the filter showed it, what the totals count of it (None for a sink
    without totals), what the other process's sink wrote for it, and the codes of its diagnostics of severity
    error."""

    exchange: Exchange
    shown: bool
    facts: Facts | None
    output: bytes
    damage: tuple[str, ...]
    """Codes of its diagnostics that say the capture lost bytes."""


class EventSink:
    """One routing for `read` and `live`: every event to the totals (`summary`, unless `totals` is false: `read
    --json` prints none, and counting them costs), exchanges the filter lets through and every notice to the output."""

    def __init__(self, wanted: Filter, output: Output, totals: bool = True) -> None:
        self.wanted = wanted
        self.output = output
        self.summary = Summary() if totals else None

    def add(self, event: Event | Settled) -> bool:
        """Route one event; True when it is an exchange the filter let through."""
        summary = self.summary
        if isinstance(event, Exchange):
            shown = self.wanted.matches(event)
            if summary is not None:
                summary.add(event, shown)
            if shown:
                self.output.exchange(event)
            return shown
        if isinstance(event, Settled):
            if summary is not None:
                assert event.facts is not None, "a worker of a sink with totals sends their facts"
                summary.count(event.exchange.connection, event.facts)
            if event.shown:
                self.output.raw(event.output)
            return event.shown
        if summary is not None:
            summary.add(event)
        if isinstance(event, (Notice, ConnectionEnd)):
            self.output.notice(event)
        return False
