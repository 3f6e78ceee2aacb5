"""Where the core's events go: the totals always; exchanges the filter lets through to NDJSON, fields or a view."""

from __future__ import annotations

from typing import Any, NamedTuple

from kdissect.events import ConnectionEnd, Event, Exchange, Notice
from kdissect.filter import Filter
from kdissect.views import json_lines
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


class EventSink:
    """One routing for `read` and `live`: NDJSON when `writer` is given (notices and connection summaries too
    with `all_events`), otherwise rows on `view` (a terminal view, or `read -T fields`' writer). The totals
    (`summary`) are kept unless `totals` is false: `read --json` prints none, and counting them costs."""

    def __init__(
        self,
        wanted: Filter,
        writer: json_lines.JsonLinesWriter | None = None,
        view: Any = None,
        all_events: bool = False,
        totals: bool = True,
    ) -> None:
        self.wanted = wanted
        self.writer = writer
        self.view = view
        self.all_events = all_events
        self.summary = Summary() if totals else None

    def add(self, event: Event | Settled) -> bool:
        """Route one event; True when it is an exchange the filter let through."""
        summary = self.summary
        if isinstance(event, Exchange):
            shown = self.wanted.matches(event)
            if summary is not None:
                summary.add(event, shown)
            if shown:
                self.show(event)
            return shown
        if isinstance(event, Settled):
            if summary is not None:
                assert event.facts is not None, "a worker of a sink with totals sends their facts"
                summary.count(event.exchange.connection, event.facts)
            if event.shown:
                if self.writer is not None:
                    self.writer.raw(event.output)
                else:
                    self.view.raw(event.output.decode())
            return event.shown
        if summary is not None:
            summary.add(event)
        if self.writer is not None and self.all_events:
            if isinstance(event, Notice):
                self.writer.write(json_lines.notice_json(event))
            elif isinstance(event, ConnectionEnd):
                self.writer.write(json_lines.connection_end_json(event))
        return False

    def show(self, exchange: Exchange) -> None:
        """Write an exchange the filter let through."""
        if self.writer is not None:
            self.writer.write_exchange(exchange)
        else:
            self.view.exchange(exchange)
