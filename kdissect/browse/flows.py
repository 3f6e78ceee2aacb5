"""The flows pane: a row per connection (client → broker, client ids, exchanges, errors, p50 and p99 latency);
`Enter` on one lists its exchanges.

The index's pass keeps the connections' totals (`views.summary.Summary`, on its worker thread) and sends the
rows as `Flow` values from time to time; the pane holds the last ones it was sent. It shows the first `ROWS`
connections, as the closing tables do, and sums the rest in a last row (`More`): a capture can open a connection
per packet, and the pane is made again on the UI thread each time the pass sends it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.text import Text
from textual import on
from textual.message import Message
from textual.widgets import DataTable

from kdissect.browse.wire_text import wire
from kdissect.views.summary import Summary
from kdissect.views.terminal import ROWS, duration

COLUMNS = ("#", "client → broker", "client ids", "exch", "errors", "p50", "p99")
MORE = "more"
"""The key of the row that sums the connections past the first `ROWS`."""


class Flow(NamedTuple):
    id: int
    ends: str
    """"client → broker port"."""
    client_ids: tuple[str, ...]
    exchanges: int
    errors: int
    p50: int | None
    p99: int | None


class More(NamedTuple):
    """The connections that carried exchanges past the first `ROWS`: how many, their exchanges and errors summed."""

    connections: int
    exchanges: int
    errors: int


def flows(summary: Summary) -> tuple[tuple[Flow, ...], More | None]:
    """The first `ROWS` connections that carried exchanges, by id, and the rest summed (None when there is no
    rest): made on the pass's thread, from its summary."""
    made: list[Flow] = []
    past = exchanges = errors = 0
    for f in sorted(summary.flows.values(), key=lambda f: f.info.id):
        if not f.exchanges:
            continue
        if len(made) == ROWS:
            past, exchanges, errors = past + 1, exchanges + f.exchanges, errors + f.errors
            continue
        p50, p99 = f.latencies.percentile(50), f.latencies.percentile(99)
        made.append(Flow(f.info.id, f"{f.info.client} → {f.info.broker.port}", tuple(f.client_ids), f.exchanges, f.errors, p50, p99))
    return tuple(made), More(past, exchanges, errors) if past else None


class FlowTable(DataTable):
    """The flows pane."""

    class Chosen(Message):
        """A flow was chosen: the list shows its exchanges."""

        def __init__(self, connection: int) -> None:
            super().__init__()
            self.connection = connection

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.shown: tuple[tuple[Flow, ...], More | None] = ((), None)

    def on_mount(self) -> None:
        for name in COLUMNS:
            self.add_column(name, key=name)

    def show(self, rows: tuple[Flow, ...], more: More | None) -> None:
        """The rows the pass sent last, the cursor kept on its line."""
        if (rows, more) == self.shown:
            return
        self.shown = (rows, more)
        cursor = self.cursor_row
        self.clear()
        for f in rows:
            self.add_row(
                Text(str(f.id)),
                wire(f.ends),
                wire(", ".join(f.client_ids) or "-"),
                Text(str(f.exchanges)),
                Text(str(f.errors), style="red" if f.errors else ""),
                Text(duration(f.p50)),
                Text(duration(f.p99)),
                key=str(f.id),
            )
        if more is not None:
            told = (f"{more.connections} more", "", "", str(more.exchanges), str(more.errors), "", "")
            self.add_row(*(Text(cell, style="dim") for cell in told), key=MORE)
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1))

    @on(DataTable.RowSelected)
    def chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value != MORE:  # the summed row stands for no one connection
            self.post_message(self.Chosen(int(event.row_key.value or 0)))
