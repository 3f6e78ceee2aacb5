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
from kdissect.views.terminal import ReadView, exchange_row, header_row, row_columns, size

MIN_ROWS = 5
"""Lines the latest exchanges keep at least: flows are left out of the screen before these are."""


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
        row = exchange_row(exchange, row_columns(self.console.width))
        row.no_wrap, row.overflow = True, "ellipsis"
        self._rows.append(row)
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
        """The screen: as many of the busiest flows as leave room for a few rows, the errors, the latest rows."""
        packets, wire_bytes, drops = self._status
        summary = self.summary
        status = self._status_line(packets, wire_bytes, drops)
        status.no_wrap, status.overflow = True, "ellipsis"
        errors_table = None
        if summary.errors:
            if len(summary.errors) > self.max_errors:
                worst = Summary()
                worst.errors = dict(sorted(summary.errors.items(), key=lambda item: -item[1].count)[: self.max_errors])
                errors_table = ReadView._errors(worst, self.console.size.width)
                errors_table.caption = f"{len(summary.errors) - self.max_errors} more"
            else:
                errors_table = ReadView._errors(summary, self.console.size.width)
        # from the most flows down to none, until the latest exchanges keep at least MIN_ROWS lines
        height = self.console.size.height
        fixed = 1 + 3 + (1 + self._height(errors_table) if errors_table is not None else 0)
        for count in range(min(self.max_flows, len(summary.flows)), -1, -1):
            flows_table = self._flows_table(count) if count else None
            used = fixed + (self._height(flows_table) if flows_table is not None else 0)
            if height - used >= MIN_ROWS or count == 0:
                break
        rows = list(self._rows)[-max(1, height - used) :]
        parts: list[RenderableType] = [status]
        if flows_table is not None:
            parts.append(flows_table)
        parts.append(Text(""))
        if rows:
            parts.append(Text("Latest exchanges", style="bold"))
            parts.append(header_row(row_columns(self.console.width)))
            parts.extend(rows)
        else:
            parts.append(Text("waiting for Kafka exchanges…", style="dim"))
        if errors_table is not None:
            parts.append(Text(""))
            parts.append(errors_table)
        return Group(*parts)

    def _flows_table(self, count: int) -> RenderableType:
        """The `count` most recently active flows, one line each."""
        flows = self._latest_flows(count)
        table = ReadView._flows(flows, self.console.width, compact=True)
        hidden = len(self.summary.flows) - len(flows.flows)
        if hidden > 0:
            table.caption = f"{hidden} more" + (f"; {table.caption}" if table.caption else "")
        return table

    def _height(self, renderable: RenderableType) -> int:
        return len(self.console.render_lines(renderable, self.console.options, pad=False))

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

    def _latest_flows(self, count: int) -> _Flows:
        flows = self.summary.flows
        if len(flows) <= count:
            return _Flows(flows)
        recent = sorted(flows, key=lambda i: (self._active.get(i, 0), i), reverse=True)[:count]
        return _Flows({i: flows[i] for i in recent})
