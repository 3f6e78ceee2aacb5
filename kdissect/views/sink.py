"""Where the core's events go: the totals always; exchanges the filter lets through to NDJSON, fields or a view."""

from __future__ import annotations

from typing import Any

from kdissect.events import ConnectionEnd, Event, Exchange, Notice
from kdissect.filter import Filter
from kdissect.views import json_lines
from kdissect.views.summary import Summary


class EventSink:
    """One routing for `read` and `live`: NDJSON when `writer` is given (notices and connection summaries too
    with `all_events`), otherwise rows on `view` (a terminal view, or `read -T fields`' writer)."""

    def __init__(
        self, wanted: Filter, writer: json_lines.JsonLinesWriter | None = None, view: Any = None, all_events: bool = False
    ) -> None:
        self.wanted = wanted
        self.writer = writer
        self.view = view
        self.all_events = all_events
        self.summary = Summary()

    def add(self, event: Event) -> bool:
        """Route one event; True when it is an exchange the filter let through."""
        if isinstance(event, Exchange):
            shown = self.wanted.matches(event)
            self.summary.add(event, shown)
            if not shown:
                return False
            if self.writer is not None:
                self.writer.write_exchange(event)
            else:
                self.view.exchange(event)
            return True
        self.summary.add(event)
        if self.writer is not None and self.all_events:
            if isinstance(event, Notice):
                self.writer.write(json_lines.notice_json(event))
            elif isinstance(event, ConnectionEnd):
                self.writer.write(json_lines.connection_end_json(event))
        return False
