"""The browser: flows, the exchange list, one exchange's field tree and bytes, the filter bar, the charts and
findings tabs.

The index (index.py) fills on a worker thread while the first rows are already on screen; a timer picks up what
it added. A filter is a second pass over the file (scan.py), whose matches fill the list as they are found.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.text import Text
from rich.tree import Tree as RichTree
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.events import Click, Resize
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static, TabbedContent, TabPane, Tree

from kdissect.browse.charts import charts
from kdissect.browse.findings import evidence_filter, finding_text
from kdissect.browse.index import Index
from kdissect.browse.lines import Lines
from kdissect.browse.scan import events
from kdissect.browse.write import JSON_SUFFIXES, write_set
from kdissect.dissector import Options
from kdissect.events import Exchange
from kdissect.filter import FilterError, compile_filter
from kdissect.filter.lexer import quote
from kdissect.views.detail import DetailView, FrameDump, body_hidden
from kdissect.views.doctor import STYLES
from kdissect.views.summary import percentile
from kdissect.views.terminal import duration, exchange_row, header_row, row_columns, status_cell

REFRESH = 0.1
"""Seconds between looks at what the background passes added."""
SLOW = 2.0
"""While a pass runs, what costs a walk over every exchange (flows' percentiles, charts, a sorted list) is redone
this often, not at every look."""
STATUS_WIDTH = 40
"""Room for the status column: the list's lines are their columns and this wide, and scroll sideways when the
terminal is narrower."""
HEX_WIDTH = 76
"""A line of the hex dump: offset, 16 bytes, 16 characters."""
HEX_BYTES = 10
"""Columns before the first byte of a hex line ("00000010  "); each byte takes three, the characters follow."""

HELP = """[b]kdissect browse[/b]

  [b]/[/b]      filter (-Y language of `read`; Enter applies, Esc cancels)
  [b]Enter[/b]  open the exchange under the cursor; on a flow, its exchanges
  [b]Tab[/b]    next pane                  [b]x[/b]  hex pane on or off
  [b]n / N[/b]  next / previous exchange with an error or a diagnostic
  [b]c[/b]      the exchange's connection  [b]g[/b]  its consumer group
  [b]s / S[/b]  sort by the next column / reverse the order
  [b]w[/b]      write the list to FILE.pcap or FILE.ndjson
  [b]t[/b]      charts and back: latency per API, exchanges per second, groups
  [b]f[/b]      findings and back (doctor): on a finding, [b]Enter[/b] lists its
         evidence exchanges, [b]c[/b] its connections, [b]g[/b] its groups
  [b]?[/b]      this help                  [b]q[/b]  quit
  The tree's selected field lights its bytes in the hex pane. Mouse:
  double-click a row to open it, click a byte to find its field, a
  column name to sort. Live: a cursor on the last row follows new rows.

Press any key to close."""


class ExchangeList(Lines):
    BINDINGS = [Binding("enter", "app.open_exchange", "open", show=False)]

    def watch_scroll_x(self, old: float, new: float) -> None:
        super().watch_scroll_x(old, new)
        self.app.show_header()  # type: ignore[attr-defined]


class ColumnNames(Static):
    """The list's column names; a click on one sorts by it (again: reverses)."""

    def on_click(self, event: Click) -> None:
        self.app.sort_by(event.x + int(self.app.query_one("#list", ExchangeList).scroll_x))  # type: ignore[attr-defined]


class HelpScreen(ModalScreen[None]):
    def compose(self) -> ComposeResult:
        yield Static(HELP, id="help")

    def on_key(self) -> None:
        self.dismiss()


class WriteScreen(ModalScreen[str]):
    """Asks where to write the list."""

    def compose(self) -> ComposeResult:
        with Vertical(id="write"):
            yield Static("Write the exchanges on the list to (.pcap, or .ndjson/.jsonl for JSON):")
            yield Input(value="kdissect-filtered.pcap", id="write-name")

    @on(Input.Submitted)
    def chosen(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def key_escape(self) -> None:
        self.dismiss("")


class BrowseApp(App[None]):
    TITLE = "kdissect browse"
    CSS = """
    #tabs { height: 1fr; }
    #tabs ContentSwitcher { height: 1fr; }
    TabPane { padding: 0; height: 1fr; }
    #flows { height: auto; max-height: 7; }
    #list-header { height: 1; background: $boost; text-style: bold; }
    #list { height: 1fr; min-height: 3; }
    #detail-row { height: 1fr; display: none; }
    #detail-row.open { display: block; }
    #detail { width: 1fr; }
    #hex-pane { width: 1fr; max-width: 78; }
    #hex-pane.hidden { display: none; }
    #hex-title { height: 1; text-style: bold; }
    #filter-bar { height: auto; display: none; }
    #filter-bar.open { display: block; }
    #filter-error { color: $error; height: auto; }
    #status { height: 1; background: $panel; }
    #findings { height: auto; max-height: 40%; overflow-x: hidden; }
    #finding-scroll { height: 1fr; border-top: solid $primary; padding: 0 1; }
    #help, #write { width: 90; max-width: 100%; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    HelpScreen, WriteScreen { align: center middle; }
    """
    BINDINGS = [
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("slash", "filter", "filter"),
        Binding("f", "tab('findings-tab')", "findings"),
        Binding("t", "tab('charts-tab')", "charts"),
        Binding("n", "flagged(1)", "next error"),
        Binding("N", "flagged(-1)", "prev error", key_display="N", show=False),
        Binding("c", "follow_connection", "conn"),
        Binding("g", "follow_group", "group"),
        Binding("x", "toggle_hex", "hex"),
        Binding("s", "sort(1)", "sort"),
        Binding("S", "sort(0)", "reverse", show=False),
        Binding("w", "write", "write"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, path: Path, options: Options, initial_filter: str = "", live: Any = None) -> None:
        """`live`: a `browse.live.LiveFeed`, whose packets are kept in `path` as they are captured."""
        super().__init__()
        self.index = Index(path, options, live)
        self.live = live
        self.path = path
        self.applied = ""
        """The filter text the list shows."""
        self.matches: list[int] | None = None
        """Positions the filter matched so far; None without a filter."""
        self._scan_done = True
        self._generation = 0
        self._stop = threading.Event()
        self.indexer = threading.Thread(target=self.index.run, args=(self._stop,), daemon=True, name="kdissect-index")
        """The index's pass; a live one ends within a tick of the app's closing (the command waits for it)."""
        self.order: list[int] | None = None
        """The list's positions in sorted order; None in capture order."""
        self.columns = row_columns(160)
        """The list's columns (`views.terminal.row_columns`): as `read` has them at this terminal's width."""
        self.sort_column: str | None = None
        """A column's key, or "status"."""
        self.reverse = False
        self._shown = -1
        self._flows_seen = (-1, -1)
        self._findings_shown: list[Any] | None = None
        self._slow_due = 0.0
        self.exchange: Exchange | None = None
        self._fields: list[tuple[Any, str, int, int]] = []
        """(tree node, side, start, end) of every field whose bytes are known: what a click on a byte looks in."""
        self._dump_side = ""
        """Which frame the hex pane shows: Request or Response."""
        self._dump: FrameDump | None = None
        self._initial_filter = initial_filter
        self._before = ""
        """The filter applied when the bar opened: what Esc goes back to."""

    # -- layout -----------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with TabbedContent(id="tabs"):
            with TabPane("Exchanges", id="browse"):
                yield DataTable(id="flows", cursor_type="row", zebra_stripes=True)
                yield ColumnNames(self._header(), id="list-header")
                yield ExchangeList(self._line, width=self._list_width(), id="list")
                with Horizontal(id="detail-row"):
                    yield Tree("(open an exchange with Enter)", id="detail")
                    with Vertical(id="hex-pane"):
                        yield Static("", id="hex-title")
                        yield Lines(lambda i: Text(), cursor_shown=False, width=HEX_WIDTH, id="hex")
            with TabPane("Charts", id="charts-tab"):
                with VerticalScroll(id="charts-scroll"):
                    yield Static("", id="charts")
            with TabPane("Findings", id="findings-tab"):
                yield DataTable(id="findings", cursor_type="row", zebra_stripes=True)
                with VerticalScroll(id="finding-scroll"):
                    yield Static("", id="finding")
        with Vertical(id="filter-bar"):
            yield Input(placeholder="display filter, e.g. api == Fetch and latency_ms > 100", id="filter", select_on_focus=False)
            yield Static("", id="filter-error")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        flows = self.query_one("#flows", DataTable)
        for name in ("#", "client → broker", "client ids", "exch", "errors", "p50", "p99"):
            flows.add_column(name, key=name)
        self.query_one("#findings", DataTable).add_columns("severity", "finding", "title")
        self.indexer.start()
        self.set_interval(REFRESH, self.refresh_view)
        self.query_one("#list", ExchangeList).focus()
        if self._initial_filter:
            self.apply_filter(self._initial_filter)

    def on_unmount(self) -> None:
        self._stop.set()

    def _tell(self, callback: Any, *args: Any, **kwargs: Any) -> None:
        """Run `callback` on the app's thread, from a worker thread; nothing when the app has closed meanwhile."""
        try:
            self.call_from_thread(callback, *args, **kwargs)
        except RuntimeError:  # the app is no longer running
            pass

    # -- the list ---------------------------------------------------------------------------------------------

    def _list_width(self) -> int:
        return sum(c.width + 1 for c in self.columns) + STATUS_WIDTH

    def _header(self) -> Text:
        arrow = " ▼" if self.reverse else " ▲"
        header = header_row(tuple(replace(c, title=c.title + arrow) if c.key == self.sort_column else c for c in self.columns))
        return header + arrow if self.sort_column == "status" else header

    def on_resize(self, event: Resize) -> None:
        columns = row_columns(event.size.width)
        if columns != self.columns:
            self.columns = columns
            lines = self.query_one("#list", ExchangeList)
            lines.width = self._list_width()
            lines.reset(lines.count)
            self.show_header()

    def show_header(self) -> None:
        """The column names above the list, scrolled sideways as far as its lines are."""
        try:
            left = int(self._main("#list", ExchangeList).scroll_x)
            self._main("#list-header", Static).update(self._header()[left:])
        except (NoMatches, IndexError):  # not composed yet, or closing
            pass

    def positions(self) -> Any:
        """What the list shows, as positions in the index: sorted, filtered, or all."""
        if self.order is not None:
            return self.order
        if self.matches is not None:
            return self.matches
        return range(len(self.index))

    def shown(self) -> int:
        """How many lines the list has: a filter pass can run ahead of the index, and its matches not yet
        indexed wait (matches come in capture order, so they are a prefix)."""
        if self.order is not None:
            return len(self.order)
        if self.matches is not None:
            return bisect_left(self.matches, len(self.index))
        return len(self.index)

    def position(self, line: int) -> int:
        return self.positions()[line]

    def _line(self, line: int) -> Text:
        positions = self.positions()
        if line >= self.shown():  # the list changed since the widget counted it; the next refresh recounts
            return Text()
        with self.index.lock:
            row = self.index.row(positions[line])
        status = status_cell(list(row.errors), row.status, row.assumed, list(row.diagnostics))
        return exchange_row(row, self.columns, status, row.completed)  # type: ignore[arg-type]

    def refresh_view(self) -> None:
        """Pick up rows the background passes added, and keep the flows, status line and charts current."""
        try:
            self._refresh()
        except NoMatches:  # the app is closing: its widgets are going
            pass

    def _refresh(self) -> None:
        if not self.screen_stack:
            return
        now = time.monotonic()
        slow = (self.index.done and self._scan_done) or now >= self._slow_due
        if slow:
            self._slow_due = now + SLOW
        base = bisect_left(self.matches, len(self.index)) if self.matches is not None else len(self.index)
        if self.sort_column is not None and (self.order is None or (slow and len(self.order) != base)):
            self._sort()
        lines = self._main("#list", ExchangeList)
        count = self.shown()
        if count != self._shown:
            # live, a cursor on the last line follows the rows as they come (move it up to stay)
            tail = self.live is not None and lines.cursor >= lines.count - 1 and not self.query_one("#detail-row").has_class("open")
            self._shown = count
            lines.reset(count)
            if tail and count:
                lines.cursor = count - 1
        empty = self._empty() if not count else ""
        if empty != lines.empty:
            lines.empty = empty
            lines.refresh()
        self._refresh_status()
        if slow:
            self._refresh_flows()
            if self._main("#tabs", TabbedContent).active == "charts-tab":
                self._main("#charts", Static).update(charts(self.index, max(20, self.size.width - 4)))
        if self.live is not None and slow and not self.index.done and self._main("#tabs", TabbedContent).active == "findings-tab":
            self.index.findings_wanted = True  # the findings so far, taken between two turns of the capture
        if self._findings_shown is not self.index.findings or (slow and self.index.findings is None):
            self._refresh_findings()

    def _empty(self) -> str:
        """Why the list has no line: said on it, where an empty list would leave the user guessing."""
        if self.matches is not None:
            return f"no exchange matches {self.applied}" + ("" if self._scan_done else " so far: still looking")
        if self.index.done and self.live is None:
            return "no Kafka exchange in this capture"
        return ""

    def _refresh_flows(self) -> None:
        summary = self.index.summary
        seen = (len(summary.flows), summary.exchanges)
        if seen == self._flows_seen:
            return
        self._flows_seen = seen
        table = self._main("#flows", DataTable)
        with self.index.lock:
            flows = sorted(summary.flows.values(), key=lambda f: f.info.id)
            rows = [
                (
                    str(f.info.id),
                    f"{f.info.client} → {f.info.broker.port}",
                    ", ".join(f.client_ids) or "-",
                    str(f.exchanges),
                    Text(str(f.errors), style="red" if f.errors else ""),
                    duration(percentile(sorted(f.latencies), 50)),
                    duration(percentile(sorted(f.latencies), 99)),
                )
                for f in flows
                if f.exchanges
            ]
        cursor = table.cursor_row
        table.clear()
        for row in rows:
            table.add_row(*row, key=row[0])
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1))

    def _refresh_findings(self) -> None:
        """The findings tab: the doctor's findings once the index is complete; until then, how far it is."""
        findings = self._findings_shown = self.index.findings
        tabs = self._main("#tabs", TabbedContent)
        if findings is None:
            waiting = (
                "The findings of what was captured so far come when this tab is shown."
                if self.live is not None
                else f"The doctor judges the capture as a whole: its findings come when the index is complete{self._progress()}."
            )
            self._main("#finding", Static).update(Text(waiting, style="yellow"))
            return
        so_far = " so far" if self.live is not None and not self.index.done else ""
        tabs.get_tab("findings-tab").label = f"Findings ({len(findings)}{so_far})"
        table = self._main("#findings", DataTable)
        row = table.cursor_row
        table.clear()
        for finding in findings:
            table.add_row(Text(finding.severity, style=STYLES[finding.severity]), finding.id, finding.title)
        if findings:
            row = min(max(row, 0), len(findings) - 1)
            table.move_cursor(row=row)
            self._main("#finding", Static).update(finding_text(findings[row]))
        else:
            self._main("#finding", Static).update("No findings: the doctor's rules found nothing to say about this capture.")

    def finding(self) -> Any:
        """The finding under the findings tab's cursor, when that tab is shown."""
        if self.query_one("#tabs", TabbedContent).active != "findings-tab" or not self._findings_shown:
            return None
        row = self.query_one("#findings", DataTable).cursor_row
        return self._findings_shown[row] if 0 <= row < len(self._findings_shown) else None

    @on(DataTable.RowHighlighted, "#findings")
    def finding_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self._findings_shown and 0 <= event.cursor_row < len(self._findings_shown):
            self.query_one("#finding", Static).update(finding_text(self._findings_shown[event.cursor_row]))

    @on(DataTable.RowSelected, "#findings")
    def finding_chosen(self, event: DataTable.RowSelected) -> None:
        self._evidence(None)

    def _evidence(self, kind: str | None) -> None:
        """The list, filtered to the evidence of the selected finding (of `kind`, or the first kind it has)."""
        finding = self.finding()
        expression = None if finding is None else evidence_filter(finding.evidence, kind)
        if expression is None:
            self.notify(f"this finding names no {kind or 'evidence'}", severity="warning")
            return
        self.action_tab("browse")
        self.follow(expression)

    def _refresh_status(self) -> None:
        index = self.index
        text = Text(f" {len(index)} exchanges", style="bold")
        if self.live is not None:
            capture = self.live.capture
            stopped = f"capture stopped after {self.live.stopped}" if self.live.stopped else "capture stopped"
            text.append(f", {stopped}" if index.done else f", capturing on {capture.interface}", style="yellow")
            text.append(f" ({capture.stats.packets} packets)")
        elif not index.done:
            text.append(f", indexing{self._progress()}…", style="yellow")
        if self.live is not None and self.live.failure:
            text.append(f"  {self.live.failure}", style="red")
        if index.failure:
            text.append(f"  {index.failure}", style="red")
        if self.matches is not None:
            waiting = len(self.matches) - bisect_left(self.matches, len(index))
            text.append(f"  │ {len(self.matches)} match" + (f" ({waiting} not indexed yet) " if waiting else " "), style="bold")
            text.append(self.applied, style="cyan")
            if not self._scan_done:
                text.append(" (searching…)", style="yellow")
        if self.sort_column:
            title = next((c.title for c in self.columns if c.key == self.sort_column), self.sort_column)
            text.append(f"  │ sorted by {title}{' (reversed)' if self.reverse else ''}")
        self._main("#status", Static).update(text)

    def _main(self, selector: str, kind: type[Any]) -> Any:
        """A widget of the main screen, also while a dialog is on top of it."""
        return self.screen_stack[0].query_one(selector, kind)

    def _progress(self) -> str:
        if self.live is not None:
            return ""
        try:
            size = self.path.stat().st_size
        except OSError:
            return ""
        done = self.index.offsets[-1] if self.index.offsets else 0
        return f" {min(99, done * 100 // size)} %" if size and done <= size else ""

    def _sort(self) -> None:
        base = list(self.matches[: bisect_left(self.matches, len(self.index))] if self.matches is not None else range(len(self.index)))
        with self.index.lock:
            base.sort(key=self.index.sort_key(self.sort_column or "id"), reverse=self.reverse)
        self.order = base

    def current(self) -> int | None:
        lines = self.query_one("#list", ExchangeList)
        if not lines.count:
            return None
        return self.position(lines.cursor)

    # -- filters ----------------------------------------------------------------------------------------------

    def action_filter(self) -> None:
        bar = self.query_one("#filter-bar")
        bar.add_class("open")
        field = self.query_one("#filter", Input)
        self._before = self.applied
        field.value = self.applied
        field.cursor_position = len(field.value)
        field.focus()

    @on(Input.Changed, "#filter")
    def filter_typed(self, event: Input.Changed) -> None:
        """Show the list of the expression as soon as it parses; say what is wrong while it does not."""
        if self._compiled(event.value) is not None:
            self.apply_filter(event.value)

    @on(Input.Submitted, "#filter")
    def filter_entered(self, event: Input.Submitted) -> None:
        if self._compiled(event.value) is None:
            return
        if event.value != self.applied:
            self.apply_filter(event.value)
        self._close_filter()
        self.query_one("#list", ExchangeList).cursor = 0

    def key_escape(self) -> None:
        if self.query_one("#filter-bar").has_class("open"):
            self.query_one("#filter", Input).value = self._before
            self.apply_filter(self._before)
            self._close_filter()

    def _close_filter(self) -> None:
        self.query_one("#filter-bar").remove_class("open")
        self.query_one("#filter-error", Static).update("")
        self.query_one("#list", ExchangeList).focus()

    def _compiled(self, text: str) -> Any:
        error = self.query_one("#filter-error", Static)
        if not text.strip():
            error.update("")
            return True
        try:
            wanted = compile_filter([("-Y", text)], self.index.options.catalog)
        except FilterError as exc:
            error.update(Text(str(exc)))
            return None
        error.update("")
        return wanted

    def apply_filter(self, text: str) -> None:
        """Show the exchanges `text` matches: a pass over the file fills the list as it finds them."""
        self._generation += 1
        self.applied = text.strip()
        self.order = None
        self._shown = -1
        self.index.following = None
        if not self.applied:
            self.matches = None
            self._scan_done = True
        else:
            wanted = compile_filter([("-Y", self.applied)], self.index.options.catalog)
            self.matches = []
            self._scan_done = False
            upto = None
            if self.live is not None:
                with self.index.lock:  # from here on the index tests what it adds; the pass looks at the rest
                    upto = len(self.index)
                    self.index.following = (wanted, upto, [])
            threading.Thread(
                target=self._scan, args=(wanted, self.matches, self._generation, upto), daemon=True, name="kdissect-filter"
            ).start()
        self.refresh_view()

    def _scan(self, wanted: Any, found: list[int], generation: int, upto: int | None) -> None:
        """The filter's pass over the file. Live (`upto`: the exchanges indexed when the filter was applied), the
        file holds what was captured so far: the pass looks at those exchanges, the index tests every later one
        (index.following), first into a list of its own, then, once the pass is done, straight onto the list."""
        try:
            for event in events(self.path, replace(self.index.options, keep=wanted.keep)) if upto != 0 else ():
                if generation != self._generation or self._stop.is_set():
                    return
                if isinstance(event, Exchange):
                    if upto is not None and event.id > upto:
                        break
                    if wanted.matches(event):
                        found.append(event.id - 1)
        except Exception as exc:  # the capture broke mid-way: the matches so far stay on the list
            self._tell(self.notify, str(exc), severity="error")
        finally:
            if generation == self._generation:
                if upto is not None:
                    with self.index.lock:
                        following = self.index.following
                        if following is not None and following[0] is wanted:  # not a later filter's
                            found.extend(following[2])  # what the index matched meanwhile, and will match from now on
                            self.index.following = (wanted, upto, found)
                self._scan_done = True

    def follow(self, expression: str) -> None:
        self.query_one("#filter", Input).value = expression
        self.apply_filter(expression)
        self.query_one("#list", ExchangeList).cursor = 0

    def action_follow_connection(self) -> None:
        if self.finding() is not None:
            self._evidence("connections")
            return
        position = self.current()
        if position is not None:
            self.follow(f"connection == {self.index.row(position).connection.id}")

    def action_follow_group(self) -> None:
        if self.finding() is not None:
            self._evidence("groups")
            return
        position = self.current()
        if position is None:
            return
        groups = self.index.row(position).groups
        if not groups:
            self.notify("this exchange names no consumer group", severity="warning")
            return
        self.follow(f"group == {quote(groups[0])}")

    @on(DataTable.RowSelected, "#flows")
    def flow_chosen(self, event: DataTable.RowSelected) -> None:
        self.follow(f"connection == {event.row_key.value}")
        self.query_one("#list", ExchangeList).focus()

    # -- moving -----------------------------------------------------------------------------------------------

    def action_flagged(self, step: int) -> None:
        lines = self.query_one("#list", ExchangeList)
        positions, count = self.positions(), self.shown()
        at = lines.cursor + step
        with self.index.lock:
            while 0 <= at < count:
                if self.index.flagged(positions[at]):
                    lines.cursor = at
                    lines.focus()
                    return
                at += step
        self.notify("no further exchange with an error or diagnostic")

    def action_sort(self, advance: int) -> None:
        """s: the next column (advance 1); S: the other direction (0); -1: the column already set."""
        if advance == 1:
            keys = [c.key for c in self.columns] + ["status"]
            at = keys.index(self.sort_column) + 1 if self.sort_column in keys else 0
            self.sort_column = keys[at % len(keys)]
        elif advance == 0:
            self.reverse = not self.reverse
            self.sort_column = self.sort_column or "id"
        self._sort()
        self._shown = -1
        self.show_header()
        self.refresh_view()

    def action_tab(self, name: str) -> None:
        """Show the tab `name`; when it is shown already, the list again."""
        tabs = self.query_one("#tabs", TabbedContent)
        name = "browse" if tabs.active == name else name
        tabs.active = name
        # focus goes with the tab: a focused widget on the other one would take its tab back
        self.query_one({"browse": "#list", "charts-tab": "#charts-scroll", "findings-tab": "#findings"}[name]).focus()
        self._slow_due = 0.0
        self.refresh_view()

    def sort_by(self, x: int) -> None:
        """Sort by the column at x in the list's lines; the same column again reverses the order."""
        at, key = 0, "status"
        for column in self.columns:
            if x < at + column.width + 1:
                key = column.key
                break
            at += column.width + 1
        if key == self.sort_column:
            self.action_sort(0)
        else:
            self.sort_column, self.reverse = key, False
            self.action_sort(-1)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # -- one exchange -----------------------------------------------------------------------------------------

    def action_open_exchange(self) -> None:
        position = self.current()
        if position is None:
            return
        row = self.index.row(position)
        self.query_one("#detail-row").add_class("open")
        lines = self.query_one("#list", ExchangeList)
        self.call_after_refresh(lines.scroll_to_row, lines.cursor)  # the list just got shorter
        tree = self.query_one("#detail", Tree)
        tree.reset(Text(f"decoding exchange {row.id}…", style="yellow"))
        threading.Thread(target=self._decode, args=(row,), daemon=True, name="kdissect-decode").start()

    def _decode(self, row: Any) -> None:
        try:
            exchange = self.index.exchange(row)
        except Exception as exc:  # a file that changed or broke since it was indexed
            self._tell(self.notify, str(exc), severity="error")
            return
        self._tell(self.show_exchange, exchange, row.id)

    def show_exchange(self, exchange: Exchange | None, number: int) -> None:
        tree = self.query_one("#detail", Tree)
        if exchange is None:
            tree.reset(Text(f"exchange {number} could not be read again from the file", style="red"))
            return
        self.exchange = exchange
        marks: dict[int, tuple[str, int, int]] = {}
        rendered = DetailView(self.index.options.catalog, False, marks, self.index.options.show_secrets).render(exchange)
        top: RichTree = rendered.renderables[0]  # type: ignore[attr-defined]
        tree.reset(top.label)
        self._fields = []
        self._graft(tree.root, top, marks, 0)
        tree.root.expand()
        self._show_bytes("Request" if exchange.request else "Response", (0, 0))
        tree.focus()

    def _graft(self, node: Any, source: RichTree, marks: dict[int, tuple[str, int, int]], depth: int) -> None:
        """The rich tree `show` prints, made a Textual tree: same labels, and each field's bytes as its data."""
        for child in source.children:
            if isinstance(child.label, RichTree):  # `show` adds each side as a tree of its own
                child = child.label
            mark = marks.get(id(child))
            if child.children:
                added = node.add(child.label, data=mark, expand=depth < 3)
                self._graft(added, child, marks, depth + 1)
            else:
                added = node.add_leaf(child.label, data=mark)
            if mark is not None:
                self._fields.append((added, *mark))

    @on(Tree.NodeHighlighted, "#detail")
    def field_chosen(self, event: Tree.NodeHighlighted) -> None:
        mark = event.node.data
        if mark is not None:
            side, start, end = mark
            self._show_bytes(side, (start, end))

    def _show_bytes(self, side: str, span: tuple[int, int]) -> None:
        exchange = self.exchange
        message = None if exchange is None else (exchange.request if side == "Request" else exchange.response)
        hex_lines = self.query_one("#hex", Lines)
        title = self.query_one("#hex-title", Static)
        if message is None:
            self._dump = None
            hex_lines.reset(0)
            title.update("")
            return
        dump = self._dump = FrameDump(
            message, span, body_hidden(exchange.api_key, message, self.index.options.show_secrets, self.index.options.catalog)
        )
        self._dump_side = side
        chosen = f", bytes {span[0]}-{span[1]} selected" if span[1] > span[0] else ""
        title.update(Text(f"{side} frame, {message.frame.size} bytes after the size prefix{chosen}"))
        hex_lines.reset(len(dump), dump.line, keep_cursor=False)
        hex_lines.scroll_to(y=max(0, dump.row_of(span[0]) - 2), animate=False)

    @on(Lines.Clicked, "#list")
    def row_clicked(self, event: Lines.Clicked) -> None:
        if event.chain > 1:
            self.action_open_exchange()

    @on(Lines.Clicked, "#hex")
    def byte_clicked(self, event: Lines.Clicked) -> None:
        """The innermost field holding the clicked byte becomes the tree's selection."""
        column = event.column - HEX_BYTES
        byte = column // 3 if column < 48 else column - 49
        if not 0 <= byte < 16:
            return
        first = self._dump.offset(event.row) if self._dump is not None else None
        if first is None:  # a hole's line
            return
        offset = first + byte
        holding = [f for f in self._fields if f[1] == self._dump_side and f[2] <= offset < f[3]]
        if not holding:
            return
        node = min(holding, key=lambda f: f[3] - f[2])[0]
        parent = node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        tree = self.query_one("#detail", Tree)
        self.call_after_refresh(tree.move_cursor, node)

    def action_toggle_hex(self) -> None:
        self.query_one("#hex-pane").toggle_class("hidden")

    # -- writing ----------------------------------------------------------------------------------------------

    def action_write(self) -> None:
        self.push_screen(WriteScreen(), self._write)

    def _write(self, name: str | None) -> None:
        if not name:
            return
        positions = list(self.positions()[: self.shown()])
        out = Path(name)

        def run() -> None:
            try:
                written = write_set(out, self.index, positions, self.index.options)
            except (OSError, ValueError) as exc:
                self._tell(self.notify, f"not written: {exc}", severity="error")
                return
            told = f"{written} exchanges" if out.suffix.lower() in JSON_SUFFIXES else f"{written} packets of {len(positions)} exchanges"
            self._tell(self.notify, f"wrote {told} to {out}")

        threading.Thread(target=run, daemon=True, name="kdissect-write").start()
