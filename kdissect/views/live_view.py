"""The rich view of `kdissect live` on a terminal: one screen updated in place while packets come in.

From the top: a status line (interface, link type, filter, time, packets and bytes, kernel drops, exchanges),
the most recently active flows, the latest exchanges (the rows `kdissect read` prints), and the errors so far.
The rows and tables are `views/terminal.py`'s and the totals `views/summary.py`'s, so a live session and a
capture read back later look the same. When the session ends the screen is cleared and `ReadView.closing`
prints the final summary in its place.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from kdissect.capture.linktypes import name as linktype_name
from kdissect.events import Exchange
from kdissect.views.summary import Flow, Summary
from kdissect.views.terminal import COLUMNS, ReadView, cell, exchange_row, size


def elapsed(seconds: float) -> str:
    """Time since the session started: 0:42, 12:03, 1:02:03."""
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


@dataclass
class _Flows:
    """A window on a summary's flows: what `ReadView._flows` needs (`.flows`), limited to the latest ones."""

    flows: dict[int, Flow] = field(default_factory=dict)


class LiveView:
    """Owns a `rich.live.Live` on the console; `exchange` records rows, `update` redraws at most `fps` a second."""

    def __init__(
        self,
        console: Console,
        summary: Summary,
        interface: str,
        linktype: int,
        expression: str,
        fps: float = 4.0,
        max_flows: int = 8,
        max_errors: int = 5,
    ) -> None:
        self.console = console
        self.summary = summary
        self.interface = interface
        self.linktype = linktype
        self.expression = expression
        self.max_flows = max_flows
        self.max_errors = max_errors
        self._rows: deque[Text] = deque(maxlen=200)
        self._active: dict[int, int] = {}
        """Flow id -> the last exchange id seen on it, to show the busiest recent flows."""
        self._interval = 1.0 / fps
        self._drawn = 0.0
        self._started = time.monotonic()
        self._live = Live(console=console, auto_refresh=False, transient=True, redirect_stdout=False, redirect_stderr=False)
        self._status: tuple[int, int, int] = (0, 0, 0)

    def start(self) -> None:
        self._started = time.monotonic()
        self._live.start()
        self.update(0, 0, 0, force=True)

    def stop(self) -> None:
        self._live.stop()

    def exchange(self, exchange: Exchange) -> None:
        """An exchange that passed the filters: it becomes the newest row."""
        self._rows.append(exchange_row(exchange))
        self._active[exchange.connection.id] = exchange.id

    def update(self, packets: int, wire_bytes: int, drops: int, force: bool = False) -> None:
        """Redraw with these capture totals, unless the last redraw was less than 1/fps ago."""
        self._status = (packets, wire_bytes, drops)
        now = time.monotonic()
        if not force and now - self._drawn < self._interval:
            return
        self._drawn = now
        self._live.update(self.render(), refresh=True)

    def render(self) -> RenderableType:
        packets, wire_bytes, drops = self._status
        summary = self.summary
        parts: list[RenderableType] = [self._status_line(packets, wire_bytes, drops)]
        flows = self._latest_flows()
        if flows.flows:
            table = ReadView._flows(flows)  # type: ignore[arg-type]
            hidden = len(summary.flows) - len(flows.flows)
            if hidden > 0:
                table.caption = f"{hidden} more"
            parts.append(table)
        errors_height = 0
        errors_table = None
        if summary.errors:
            errors_height = min(len(summary.errors), self.max_errors) + 5
            if len(summary.errors) > self.max_errors:
                worst = Summary()
                worst.errors = dict(sorted(summary.errors.items(), key=lambda item: -item[1].count)[: self.max_errors])
                errors_table = ReadView._errors(worst)
                errors_table.caption = f"{len(summary.errors) - self.max_errors} more"
            else:
                errors_table = ReadView._errors(summary)
        # what is left of the screen goes to the latest exchanges
        used = 1 + (len(flows.flows) + 6 if flows.flows else 0) + errors_height + 3
        room = max(3, self.console.size.height - used)
        rows = list(self._rows)[-room:]
        parts.append(Text(""))
        if rows:
            parts.append(Text("Latest exchanges", style="bold"))
            parts.append(Text(" ".join(cell(t, w, a) for t, w, a in COLUMNS), style="bold"))
            parts.extend(rows)
        else:
            parts.append(Text("waiting for Kafka exchanges…", style="dim"))
        if errors_table is not None:
            parts.append(Text(""))
            parts.append(errors_table)
        return Group(*parts)

    def _status_line(self, packets: int, wire_bytes: int, drops: int) -> Text:
        summary = self.summary
        text = Text("● ", style="bold red")
        text.append(f"live on {self.interface}", style="bold")
        text.append(f" ({linktype_name(self.linktype)})", style="dim")
        if self.expression:
            text.append(f"  filter: {self.expression}", style="dim")
        text.append(f"  {elapsed(time.monotonic() - self._started)}")
        text.append(f"  {packets} packets ({size(wire_bytes)})")
        if drops:
            text.append(f"  {drops} dropped", style="bold yellow")
        text.append(f"  {len(summary.flows)} connections  {summary.exchanges} exchanges")
        if summary.shown != summary.exchanges:
            text.append(f" ({summary.shown} shown)")
        errors = sum(t.count for t in summary.errors.values())
        if errors:
            text.append(f"  {errors} errors", style="bold red")
        text.append("  Ctrl-C to stop", style="dim")
        return text

    def _latest_flows(self) -> _Flows:
        flows = self.summary.flows
        if len(flows) <= self.max_flows:
            return _Flows(flows)
        recent = sorted(flows, key=lambda i: (self._active.get(i, 0), i), reverse=True)[: self.max_flows]
        return _Flows({i: flows[i] for i in recent})
