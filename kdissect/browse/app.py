"""The browser: the panes wired together. Each pane owns what it shows (flows.py, exchange_list.py, detail.py,
charts.py, findings.py, filter_bar.py); the app holds the index, runs the index's pass in a worker, hands its
messages to the panes, and carries one pane's wish to another (a flow chosen filters the list, the list's cursor
moves the detail, a finding's evidence becomes the filter) and the keys.

Work that reads the capture runs in Textual workers and reaches the UI thread only as messages: the index's pass
(indexer.py), a filter's pass (the list's), a body decoded again (the detail's), the charts' counting, a write.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from time import monotonic
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.widget import Widget
from textual.widgets import Footer, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from kdissect.browse.charts import ChartsPane, Lane
from kdissect.browse.detail import DetailPane
from kdissect.browse.dialogs import HelpScreen, WriteScreen
from kdissect.browse.exchange_list import ColumnNames, ExchangeList
from kdissect.browse.filter_bar import FilterBar, compiled
from kdissect.browse.findings import FindingsPane
from kdissect.browse.flows import FlowTable
from kdissect.browse.index import Index
from kdissect.browse.indexer import Indexer
from kdissect.browse.kept import Keeping
from kdissect.browse.wire_text import literal, wire
from kdissect.browse.write import JSON_SUFFIXES, PAGE_SUFFIXES, write_set
from kdissect.dissector import Options
from kdissect.filter import EVERYTHING, Filter
from kdissect.printable import printable
from kdissect.report.build import write_report_file

SLOW = 2.0
"""While rows come, the charts are drawn again this often, and live, the findings so far asked for again."""


class BrowseApp(App[None]):
    exchanges: ExchangeList
    detail: DetailPane
    findings: FindingsPane
    filter_bar: FilterBar
    tabs: TabbedContent
    """The panes the app talks to, made when it composes."""

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
        Binding("tab", "next_pane(1)", "next pane", show=False, priority=True),
        Binding("shift+tab", "next_pane(-1)", "previous pane", show=False, priority=True),
    ]

    def __init__(
        self, path: Path, options: Options, initial_filter: str = "", live: Any = None, values: Any = None, keeping: Keeping | None = None
    ) -> None:
        """`live`: a `browse.live.LiveFeed`, whose packets are kept in `path` as they are captured; `values`: the run's
        `values.reader.ValueReader`, for the detail's record subtrees and the filters on what records say; `keeping`:
        where a capture file's whole pass is kept, for the next browse to open from (kept.py)."""
        super().__init__()
        self.path = path
        self.options = options
        self.live = live
        self.values = values
        self.index = Index(options.catalog.names)
        """What the index's pass sent so far; only this thread reads or extends it."""
        self.indexer = Indexer(path, options, live, keeping)
        self.indexed = False
        """The index's pass has ended."""
        self.failure: str | None = None
        self.stopped = ""
        self.read = 0
        """How far the index's pass is into the file, in bytes."""
        self.captured: int | None = None
        self.lanes: tuple[Lane, ...] = ()
        self._charts_due = 0.0
        self._findings_due = 0.0
        self._asking_findings = False
        self._initial_filter = initial_filter

    # -- layout -----------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        self.exchanges = ExchangeList(
            self.index,
            self.path,
            self.options,
            self.indexer.follow if self.live is not None else None,
            self._answered if self.indexer.keeping is not None else None,
            id="list",
        )
        self.detail = DetailPane(self.indexer.exchange, self.options.catalog, self.options.show_secrets, self.values, id="detail-row")
        self.findings = FindingsPane(id="findings-pane")
        self.filter_bar = FilterBar(self.options.catalog, self.values, id="filter-bar")
        with TabbedContent(id="tabs") as self.tabs:
            with TabPane("Exchanges", id="browse"):
                yield FlowTable(id="flows")
                yield ColumnNames(self.exchanges, id="list-header")
                yield self.exchanges
                yield self.detail
            with TabPane("Charts", id="charts-tab"):
                yield ChartsPane(id="charts-scroll")
            with TabPane("Findings", id="findings-tab"):
                yield self.findings
        yield self.filter_bar
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self._index_pass()
        self.exchanges.focus()
        if self._initial_filter:
            self.follow(self._initial_filter)
        self._show_status()

    @work(thread=True, group="index")
    def _index_pass(self) -> None:
        self.indexer.run(get_current_worker().cancelled_event, self.post_message)

    @property
    def busy(self) -> bool:
        """A pass over the file runs: the index's or a filter's."""
        return not self.indexed or not self.exchanges.pass_done

    def on_resize(self, event: Resize) -> None:
        self.exchanges.fit(event.size.width)

    # -- what the index's pass sends --------------------------------------------------------------------------

    @on(Indexer.Indexed)
    def indexed_rows(self, message: Indexer.Indexed) -> None:
        batch = message.batch
        self.index.extend(batch)
        self.read, self.captured = batch.read, batch.captured
        exchanges = self.exchanges
        if batch.matched is not None:
            exchanges.followed(*batch.matched)
        exchanges.grown(tail=not self.detail.opened)
        self._show_status()
        self._draw_charts(due=True)
        if self.live is not None and self.tabs.active == "findings-tab" and monotonic() >= self._findings_due:
            self._ask_findings()

    @on(Indexer.Flows)
    def flows_seen(self, message: Indexer.Flows) -> None:
        self.screen_stack[0].query_one("#flows", FlowTable).show(message.rows, message.more)

    @on(Indexer.Lanes)
    def lanes_seen(self, message: Indexer.Lanes) -> None:
        self.lanes = message.lanes

    @on(Indexer.Findings)
    def findings_made(self, message: Indexer.Findings) -> None:
        self._asking_findings = False
        so_far = " so far" if self.live is not None and not self.indexed else ""
        self.tabs.get_tab("findings-tab").label = Text(f"Findings ({len(message.findings)}{so_far})")
        self.findings.show(message.findings)

    @on(Indexer.Done)
    def index_done(self, message: Indexer.Done) -> None:
        self.indexed = True
        self.failure, self.stopped = message.failure, message.stopped
        exchanges = self.exchanges
        exchanges.complete = True
        exchanges.grown(tail=not self.detail.opened)
        self._show_status()
        self._draw_charts()
        if self.findings.findings is not None and self.live is not None:  # the findings so far become the findings
            self.tabs.get_tab("findings-tab").label = Text(f"Findings ({len(self.findings.findings)})")
        keeping = self.indexer.keeping
        if keeping is not None and message.failure is None and not self.indexer.loaded:
            self._keep(keeping)

    def _answered(self, wanted: Filter, stopping: Callable[[], bool]) -> list[int] | None:
        """A filter's matches from the complete index, on the filter's worker (the index no longer changes)."""
        keeping = self.indexer.keeping
        assert keeping is not None  # the list is given this only when there is one
        return keeping.matches(self.index, self.indexer.learnt(), wanted, self.indexer.options, stopping)

    @work(thread=True, group="keep")
    def _keep(self, keeping: Keeping) -> None:
        """The whole pass kept for the next browse of the capture: the index is complete, and no thread changes it."""
        keeping.save(self.index, self.read, self.indexer.learnt())

    def _ask_findings(self) -> None:
        """Live: the findings of what was captured so far, asked of the index's pass (one question at a time)."""
        if self._asking_findings or self.indexed:
            return
        self._asking_findings = True
        self._findings_due = monotonic() + SLOW

        def answered(future: Any) -> None:
            if future.exception() is None:
                self.post_message(Indexer.Findings(future.result()))

        self.indexer.ask(self.indexer.findings_so_far).add_done_callback(answered)

    def _findings_wait(self) -> str:
        if self.live is not None:
            return "The findings of what was captured so far come when this tab is shown."
        return f"The doctor judges the capture as a whole: its findings come when the index is complete{self._progress()}."

    # -- the status line --------------------------------------------------------------------------------------

    def _progress(self) -> str:
        if self.live is not None:
            return ""
        try:
            size = self.path.stat().st_size
        except OSError:
            return ""
        return f" {min(99, self.read * 100 // size)} %" if size and self.read <= size else ""

    def _show_status(self) -> None:
        text = Text(f" {len(self.index)} exchanges", style="bold")
        if self.live is not None:
            stopped = f"capture stopped after {self.stopped}" if self.stopped else "capture stopped"
            text.append(f", {stopped}" if self.indexed else ", capturing on ", style="yellow")
            if not self.indexed:
                text.append_text(wire(self.live.capture.interface, "yellow"))
            text.append(f" ({self.captured or 0} packets)")
        elif not self.indexed:
            text.append(f", indexing{self._progress()}…", style="yellow")
        elif self.indexer.loaded:
            text.append(", indexed by an earlier browse")
        if self.failure:
            text.append_text(wire(f"  {self.failure}", "red"))
        exchanges = self.exchanges
        if exchanges.matches is not None:
            waiting = exchanges.waiting()
            text.append(f"  │ {len(exchanges.matches)} match" + (f" ({waiting} not indexed yet) " if waiting else " "), style="bold")
            text.append_text(wire(exchanges.applied, "cyan"))
            if not exchanges.pass_done:
                text.append(" (searching…)", style="yellow")
        if exchanges.sort_column:
            title = next((c.title for c in exchanges.columns if c.key == exchanges.sort_column), exchanges.sort_column)
            text.append(f"  │ sorted by {title}{' (reversed)' if exchanges.reverse else ''}")
        self.screen_stack[0].query_one("#status", Static).update(text)
        if not self.indexed and self.findings.findings is None:
            self.findings.waiting(self._findings_wait())

    # -- the charts -------------------------------------------------------------------------------------------

    def _draw_charts(self, due: bool = False) -> None:
        """The charts of what the list shows, when the charts tab is shown; `due`: not again before SLOW."""
        if self.tabs.active != "charts-tab" or (due and monotonic() < self._charts_due):
            return
        self._charts_due = monotonic() + SLOW
        exchanges = self.exchanges
        positions = exchanges.positions()
        shown = positions[: exchanges.shown()]
        charts = self.screen_stack[0].query_one("#charts-scroll", ChartsPane)
        charts.draw(self.index, shown, exchanges.applied if exchanges.matches is not None else "", self.lanes, max(20, self.size.width - 4))
        label = "Charts" if exchanges.matches is None else "Charts (filtered)"
        self.tabs.get_tab("charts-tab").label = Text(label)

    # -- filters ----------------------------------------------------------------------------------------------

    def action_filter(self) -> None:
        self.filter_bar.open()

    @on(FilterBar.Changed)
    def filter_changed(self, message: FilterBar.Changed) -> None:
        self.exchanges.apply(message.text, message.wanted)
        self._draw_charts()

    @on(FilterBar.Closed)
    def filter_closed(self, message: FilterBar.Closed) -> None:
        exchanges = self.exchanges
        exchanges.focus()
        if message.entered:
            exchanges.cursor = 0

    def key_escape(self) -> None:
        if self.filter_bar.is_open:
            self.filter_bar.cancel()

    @on(ExchangeList.Changed)
    def list_changed(self) -> None:
        self._show_status()

    def follow(self, expression: str) -> None:
        """Show the exchanges `expression` matches (a flow's, a finding's evidence, c, g), the cursor on the first."""
        self.filter_bar.set(expression)
        self.exchanges.apply(expression, compiled(expression, self.options.catalog, self.values))
        self.exchanges.cursor = 0
        self._draw_charts()

    def action_follow_connection(self) -> None:
        position = self.exchanges.current()
        if position is not None:
            self.follow(f"connection == {self.index.connection[position]}")

    def action_follow_group(self) -> None:
        position = self.exchanges.current()
        if position is None:
            return
        groups = self.index.group_sets[self.index.groups[position]]
        if not groups:
            self.notify("this exchange names no consumer group", severity="warning", markup=False)
            return
        self.follow(f"group == {literal(groups[0])}")

    @on(FlowTable.Chosen)
    def flow_chosen(self, message: FlowTable.Chosen) -> None:
        self.follow(f"connection == {message.connection}")
        self.exchanges.focus()

    @on(FindingsPane.Evidence)
    def evidence_wanted(self, message: FindingsPane.Evidence) -> None:
        self.action_tab("browse")
        self.follow(message.expression)

    # -- moving -----------------------------------------------------------------------------------------------

    def action_flagged(self, step: int) -> None:
        exchanges = self.exchanges
        if exchanges.flagged(step):
            exchanges.focus()
        else:
            self.notify("no further exchange with an error or diagnostic", markup=False)

    def action_sort(self, advance: int) -> None:
        self.exchanges.sort(advance)

    def action_tab(self, name: str) -> None:
        """Show the tab `name`; when it is shown already, the list again."""
        tabs = self.tabs
        name = "browse" if tabs.active == name else name
        tabs.active = name
        # focus goes with the tab: a focused widget on the other one would take its tab back
        self.screen_stack[0].query_one({"browse": "#list", "charts-tab": "#charts-scroll", "findings-tab": "#findings"}[name]).focus()
        self._draw_charts()
        if name == "findings-tab" and self.live is not None:
            self._ask_findings()

    def _panes(self) -> list[Widget]:
        """The panes shown on the tab shown, in the order Tab visits them."""
        main = self.screen_stack[0]
        active = self.tabs.active
        panes: list[Widget]
        if active == "charts-tab":
            panes = [main.query_one("#charts-scroll")]
        elif active == "findings-tab":
            panes = [main.query_one("#findings"), main.query_one("#finding-scroll")]
        else:
            panes = [main.query_one("#flows"), self.exchanges, *self.detail.panes()]
        return ([main.query_one("#filter")] if self.filter_bar.is_open else []) + panes

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Tab is the panes' only on the main screen: a dialog keeps the key."""
        return action != "next_pane" or self.screen is self.screen_stack[0]

    def action_next_pane(self, step: int) -> None:
        panes = self._panes()
        if self.focused in panes:
            at = panes.index(self.focused) + step
        else:
            at = 0 if step > 0 else -1
        panes[at % len(panes)].focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # -- one exchange -----------------------------------------------------------------------------------------

    @on(ExchangeList.Chosen)
    def exchange_chosen(self, message: ExchangeList.Chosen) -> None:
        self.detail.show(self.index.row(message.position), focus=True)
        exchanges = self.exchanges
        self.call_after_refresh(exchanges.scroll_to_row, exchanges.cursor)  # the list just got shorter

    @on(ExchangeList.Moved)
    def cursor_moved(self, message: ExchangeList.Moved) -> None:
        """With the detail open, it follows the list's cursor."""
        if self.detail.opened:
            self.detail.show(self.index.row(message.position), focus=False)

    def action_toggle_hex(self) -> None:
        self.detail.toggle_hex()

    # -- writing ----------------------------------------------------------------------------------------------

    def action_write(self) -> None:
        self.push_screen(WriteScreen(), self._write_chosen)

    def _write_chosen(self, name: str | None) -> None:
        if not name:
            return
        exchanges = self.exchanges
        if Path(name).suffix.lower() in PAGE_SUFFIXES:  # the report page of what the list shows
            wanted = compiled(exchanges.applied, self.options.catalog) if exchanges.matches is not None else None
            self._write_page(Path(name), wanted or EVERYTHING)
            return
        positions = list(exchanges.positions()[: exchanges.shown()])
        self._write(Path(name), [p + 1 for p in positions])

    @work(thread=True, group="write")
    def _write_page(self, out: Path, wanted: Filter) -> None:
        self.call_from_thread(self.notify, "writing the report page (a pass over the whole capture)…", markup=False)
        try:
            shown = write_report_file(out, self.path, self.options, wanted)
        except OSError as exc:
            self.call_from_thread(self.notify, printable(f"not written: {exc}"), severity="error", markup=False)
            return
        self.call_from_thread(self.notify, printable(f"wrote the report page of {shown} exchanges to {out}"), markup=False)

    @work(thread=True, group="write")
    def _write(self, out: Path, ids: list[int]) -> None:
        try:
            written = write_set(out, self.path, self.options, ids)
        except (OSError, ValueError) as exc:
            self.call_from_thread(self.notify, printable(f"not written: {exc}"), severity="error", markup=False)
            return
        told = f"{written} exchanges" if out.suffix.lower() in JSON_SUFFIXES else f"{written} packets of {len(ids)} exchanges"
        self.call_from_thread(self.notify, printable(f"wrote {told} to {out}"), markup=False)
