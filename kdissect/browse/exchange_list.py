"""The exchange list: the exchanges of the index that the filter lets through, in capture order or sorted by a
column, a line each as `read` prints it; only the lines on screen are made (lines.py).

A filter is a pass over the file in a worker (the filter's pass: headers-decidable filters skip the bodies, as in
`read`), which sends its matches as it finds them; a new filter cancels the pass of the one before. Live, the pass
covers what the file held when the filter came, and the index's pass tests every exchange captured after that:
its matches come with the index's batches (`followed`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from time import monotonic
from typing import Any

from rich.text import Text
from textual import on, work
from textual.binding import Binding
from textual.events import Click
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from kdissect.browse.index import Index
from kdissect.browse.lines import Lines
from kdissect.browse.scan import events
from kdissect.dissector import Options
from kdissect.events import Exchange
from kdissect.printable import printable
from kdissect.views.terminal import exchange_row, header_row, row_columns, status_cell

REFRESH = 0.1
"""Seconds between two sendings of a filter's matches."""
SLOW = 2.0
"""While rows come, a sorted list is sorted again this often, not at every batch."""
STATUS_WIDTH = 40
"""Room for the status column: the list's lines are their columns and this wide, and scroll sideways when the
terminal is narrower."""


class ExchangeList(Lines):
    """The exchange list; the app extends its index and tells it (`grown`)."""

    BINDINGS = [Binding("enter", "choose", "open", show=False)]

    class Chosen(Message):
        """Enter or a double click on a line: the exchange at `position` is to be opened."""

        def __init__(self, position: int) -> None:
            super().__init__()
            self.position = position

    class Moved(Message):
        """The cursor is on another line (the detail, when open, follows it)."""

        def __init__(self, position: int) -> None:
            super().__init__()
            self.position = position

    class Changed(Message):
        """What the list holds changed: its filter, sort, or matches."""

    class Matching(Message):
        """Matches a filter's pass found since its last message; `done` with its last."""

        def __init__(self, generation: int, positions: list[int], done: bool, failure: str | None = None) -> None:
            super().__init__()
            self.generation = generation
            self.positions = positions
            self.done = done
            self.failure = failure

    def __init__(
        self,
        index: Index,
        path: Path,
        options: Options,
        follow: Callable[[Any, int], Future[int]] | None = None,
        answer: Callable[[Any, Callable[[], bool]], list[int] | None] | None = None,
        **kwargs: Any,
    ) -> None:
        """`follow` (live): hands a filter and its generation to the index's pass, which tests what it indexes from
        then on; the future tells how many exchanges it had indexed, the ones the filter's own pass looks at.
        `answer`: a filter's matches from the complete index (None: it cannot say, or was told to stop), called on
        the filter's worker."""
        self.columns = row_columns(160)
        """The list's columns (`views.terminal.row_columns`): as `read` has them at this terminal's width."""
        super().__init__(self._line, width=self._width(), **kwargs)
        self.index = index
        self.path = path
        self.options = options
        self.follow = follow
        self.answer = answer
        self.applied = ""
        """The filter text the list shows."""
        self.matches: list[int] | None = None
        """Positions the filter matched so far (in capture order); None without a filter."""
        self.later: list[int] = []
        """Live: what the index's pass matched while the filter's own pass still runs; they come after its matches."""
        self.pass_done = True
        self.generation = 0
        """Counts the filters applied: a pass's matches count only for its own filter."""
        self.order: list[int] | None = None
        """The list's positions in sorted order; None in capture order."""
        self.sort_column: str | None = None
        """A column's key, or "status"."""
        self.reverse = False
        self._sort_due = 0.0
        self.complete = False
        """The index's pass has ended."""
        self.live = follow is not None
        self.names: ColumnNames | None = None
        """The column names above the list."""

    # -- what the list shows ------------------------------------------------------------------------------------

    def positions(self) -> Sequence[int]:
        """What the list shows, as positions in the index: sorted, filtered, or all."""
        if self.order is not None:
            return self.order
        if self.matches is not None:
            return self.matches
        return range(len(self.index))

    def shown(self) -> int:
        """How many lines the list has: a filter's pass can run ahead of the index, and its matches not yet
        indexed wait (matches come in capture order, so those shown are a prefix)."""
        if self.order is not None:
            return len(self.order)
        if self.matches is not None:
            return bisect_left(self.matches, len(self.index))
        return len(self.index)

    def position(self, line: int) -> int:
        return self.positions()[line]

    def current(self) -> int | None:
        """The position under the cursor."""
        return self.position(self.cursor) if self.count else None

    def waiting(self) -> int:
        """Matches found ahead of the index."""
        return 0 if self.matches is None else len(self.matches) - bisect_left(self.matches, len(self.index))

    def _line(self, line: int) -> Text:
        if line >= self.shown():  # the list changed since the widget counted it; the next recount redraws
            return Text()
        row = self.index.row(self.positions()[line])
        if not row.client_id.isprintable():
            row = replace(row, client_id=printable(row.client_id))
        status = status_cell(list(row.errors), row.status, row.assumed, list(row.diagnostics))
        return exchange_row(row, self.columns, status, row.completed)

    def _width(self) -> int:
        return sum(c.width + 1 for c in self.columns) + STATUS_WIDTH

    def header(self) -> Text:
        """The column names, the sorted one marked."""
        arrow = " ▼" if self.reverse else " ▲"
        header = header_row(tuple(replace(c, title=c.title + arrow) if c.key == self.sort_column else c for c in self.columns))
        return header + arrow if self.sort_column == "status" else header

    def fit(self, width: int) -> None:
        """The columns `read` prints at this terminal width."""
        columns = row_columns(width)
        if columns != self.columns:
            self.columns = columns
            self.width = self._width()
            self.reset(self.count)
            self._show_names()

    def grown(self, tail: bool) -> None:
        """Count the lines again after the index or the matches grew (sorting again now and then); live, with
        `tail`, a cursor on the last line follows the rows as they come (move it up to stay)."""
        if self.sort_column is not None and (self.order is None or len(self.order) != self._base()):
            if self.order is None or monotonic() >= self._sort_due or (self.complete and self.pass_done):
                self._sort()
        count = self.shown()
        if count != self.count:
            follows = tail and self.live and self.cursor >= self.count - 1
            self.reset(count)
            if follows and count:
                self.cursor = count - 1
        empty = "" if count else self._empty()
        if empty != self.empty:
            self.empty = empty
            self.refresh()

    def _empty(self) -> str:
        """Why the list has no line: said on it, where an empty list would leave the user guessing."""
        if self.matches is not None:
            return f"no exchange matches {printable(self.applied)}" + ("" if self.pass_done else " so far: still looking")
        if self.complete and not self.live:
            return "no Kafka exchange in this capture"
        return ""

    # -- filters ------------------------------------------------------------------------------------------------

    def apply(self, text: str, wanted: Any) -> None:
        """Show what `wanted` (compiled from `text`) matches, found by a pass over the file; None: every exchange."""
        self.generation += 1
        self.applied = text
        self.order = None
        self.later = []
        if wanted is None:
            self.matches = None
            self.pass_done = True
            self.workers.cancel_group(self, "filter")
            if self.follow is not None:
                self.follow(None, self.generation)
        else:
            self.matches = []
            self.pass_done = False
            self._scan(wanted, self.generation)
        self.grown(tail=False)
        self.refresh()  # other lines, maybe as many
        self.post_message(self.Changed())

    @work(thread=True, exclusive=True, group="filter")
    def _scan(self, wanted: Any, generation: int) -> None:
        """The filter's pass over the file, or its answer from the index once the index is complete. Live, it looks
        at the exchanges indexed when the filter came (the index's pass tests the later ones)."""
        worker = get_current_worker()
        upto = None if self.follow is None else self.follow(wanted, generation).result()
        found: list[int] = []
        failure = None
        due = monotonic() + REFRESH
        try:
            answered = self._from_index(wanted, lambda: worker.is_cancelled)
            if answered is not None:
                found, upto = answered, 0
            for event in events(self.path, replace(self.options, keep=wanted.keep)) if upto != 0 else ():
                if worker.is_cancelled:
                    return
                if isinstance(event, Exchange):
                    if upto is not None and event.id > upto:
                        break
                    if wanted.matches(event):
                        found.append(event.id - 1)
                    if found and monotonic() >= due:
                        self.post_message(self.Matching(generation, found, False))
                        found, due = [], monotonic() + REFRESH
        except Exception as exc:  # the capture broke mid-way: the matches so far stay on the list
            failure = str(exc)
        if not worker.is_cancelled:
            self.post_message(self.Matching(generation, found, True, failure))

    def _from_index(self, wanted: Any, cancelled: Callable[[], bool]) -> list[int] | None:
        """The filter's matches answered from the complete index; None when there is none yet, or it cannot say."""
        if not self.complete or self.answer is None:
            return None
        return self.answer(wanted, cancelled)

    @on(Matching)
    def matching(self, message: Matching) -> None:
        if message.generation != self.generation or self.matches is None:
            return
        self.matches += message.positions
        if message.done:
            self.pass_done = True
            self.matches += self.later
            self.later = []
            if message.failure:
                self.notify(printable(message.failure), severity="error", markup=False)
        self.grown(tail=False)
        self.post_message(self.Changed())

    def followed(self, generation: int, positions: list[int]) -> None:
        """Live: what the index's pass matched of the filter of `generation` among the rows it just indexed."""
        if generation == self.generation and self.matches is not None:
            (self.matches if self.pass_done else self.later).extend(positions)

    # -- moving and sorting -------------------------------------------------------------------------------------

    def watch_scroll_x(self, old: float, new: float) -> None:
        super().watch_scroll_x(old, new)
        self._show_names()

    def _show_names(self) -> None:
        if self.names is not None:
            self.names.show()

    def watch_cursor(self, cursor: int) -> None:
        super().watch_cursor(cursor)
        if cursor < self.count:
            self.post_message(self.Moved(self.position(cursor)))

    def action_choose(self) -> None:
        position = self.current()
        if position is not None:
            self.post_message(self.Chosen(position))

    @on(Lines.Clicked)
    def clicked(self, event: Lines.Clicked) -> None:
        if event.chain > 1:
            self.action_choose()

    def flagged(self, step: int) -> bool:
        """The cursor to the next (step 1) or previous (-1) exchange with an error or a diagnostic; False when
        there is none."""
        positions, count, at = self.positions(), self.shown(), self.cursor + step
        while 0 <= at < count:
            if self.index.flagged(positions[at]):
                self.cursor = at
                return True
            at += step
        return False

    def sort(self, advance: int) -> None:
        """advance 1: by the next column; 0: the other direction; -1: the column already set."""
        if advance == 1:
            keys = [c.key for c in self.columns] + ["status"]
            at = keys.index(self.sort_column) + 1 if self.sort_column in keys else 0
            self.sort_column = keys[at % len(keys)]
        elif advance == 0:
            self.reverse = not self.reverse
            self.sort_column = self.sort_column or "id"
        self._sort()
        self.grown(tail=False)
        self._show_names()
        self.post_message(self.Changed())

    def sort_by(self, x: int) -> None:
        """Sort by the column at x in the list's lines; the same column again reverses the order."""
        at, key = 0, "status"
        for column in self.columns:
            if x < at + column.width + 1:
                key = column.key
                break
            at += column.width + 1
        if key == self.sort_column:
            self.sort(0)
        else:
            self.sort_column, self.reverse = key, False
            self.sort(-1)

    def _base(self) -> int:
        return bisect_left(self.matches, len(self.index)) if self.matches is not None else len(self.index)

    def _sort(self) -> None:
        base = list(self.matches[: self._base()] if self.matches is not None else range(len(self.index)))
        base.sort(key=self.index.sort_key(self.sort_column or "id"), reverse=self.reverse)
        self.order = base
        self._sort_due = monotonic() + SLOW
        self.refresh()


class ColumnNames(Static):
    """The list's column names, scrolled sideways with it; a click on one sorts by it (again: reverses)."""

    def __init__(self, exchanges: ExchangeList, **kwargs: Any) -> None:
        super().__init__(exchanges.header(), **kwargs)
        self.exchanges = exchanges
        exchanges.names = self

    def show(self) -> None:
        self.update(self.exchanges.header()[int(self.exchanges.scroll_x) :])

    def on_click(self, event: Click) -> None:
        self.exchanges.sort_by(event.x + int(self.exchanges.scroll_x))
