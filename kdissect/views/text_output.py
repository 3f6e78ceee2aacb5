"""The text format: what a person reads, through rich, on a terminal or in a file.

An exchange is a row (`read`, `live`) or a tree of every field (`read -V`, `show`); a record is a line in kcat's
spirit (`records`); findings are grouped by severity (`doctor`); the closing prints the totals, flows, errors and
diagnostics (`read`, `live`), the tables (`stats`) and the findings in brief. A live session on a terminal draws a
screen updated in place instead of rows (`screen`).

Each view is imported where the command that uses it is met. Measured: with all of them imported at the top,
`kdissect read captures/client-confluent.pcap` takes 1.05x the CPU time (`stats` of it 1.02x; whole processes, 30
alternated pairs, medians).
"""

from __future__ import annotations

from typing import IO, Any

from rich.text import Text

from kdissect.events import Exchange
from kdissect.views.output import Closing, Output, Settings, Title


class TextOutput(Output):
    def __init__(self, stream: IO[str], settings: Settings) -> None:
        super().__init__(stream, settings)
        self.title: Title | None = None
        self.findings: list[Any] = []
        """`doctor`'s findings, printed together at the end: each severity's heading counts them."""
        self._screen: Any = None
        command = settings.command
        if command == "records":
            from kdissect.views.record_stream import RecordLines

            self._lines = RecordLines(stream, settings.record_format, settings.record_decode)
            return
        from kdissect.views.console import make_console

        self.console = make_console(stream)
        self._tree: Any = None
        if settings.detail or command == "show":
            from kdissect.views.detail import DetailView

            self._tree = DetailView(settings.catalog, settings.hexdump, show_secrets=settings.show_secrets, values=settings.values)
        if command in ("read", "live"):
            from kdissect.views.terminal import ReadView

            live = settings.live is not None
            self._rows = ReadView(
                self.console, rows=not settings.quiet, detail=self._tree, flush_each=live or not settings.header, header=settings.header
            )

    def screen(self, summary: Any) -> Any:
        """A live session's screen updated in place, drawn from `summary` (None off a terminal, or with -q): the
        session starts, updates and stops it, and exchanges go to it instead of rows."""
        live = self.settings.live
        if live is None or self.settings.quiet or not self.console.is_terminal:
            return None
        from kdissect.views.live_view import LiveView

        self._screen = LiveView(self.console, summary, live.interface, live.linktype, live.expression)
        return self._screen

    def begin(self, title: Title) -> None:
        self.title = title
        if self.settings.command == "read":
            self._rows.title(title.name, title.format, title.compression)

    def exchange(self, exchange: Exchange) -> None:
        if self._screen is not None:
            self._screen.exchange(exchange)
        elif self.settings.command == "show":
            console = self.console  # on a terminal long values wrap inside the tree; in a file lines stay whole
            console.print(self._tree.render(exchange), soft_wrap=not console.is_terminal)
        else:
            self._rows.exchange(exchange)

    def record(self, record: Any) -> None:
        self._lines.write(record)

    def finding(self, finding: Any) -> None:
        self.findings.append(finding)

    def raw(self, data: bytes) -> None:
        self._rows.raw(data.decode())

    def end(self, closing: Closing) -> None:
        command, console = self.settings.command, self.console
        if command == "records":
            self._lines.flush()
            return
        if closing.summary is not None:
            if command == "live" and self.title is not None:
                self._rows.title(self.title.name, self.title.format, self.title.compression)
            assert closing.counters is not None, "a closing with a summary has the core's counters"
            self._rows.closing(closing.summary, closing.counters, list(closing.linktypes), list(closing.notes))
        if closing.schemas is not None:
            from kdissect.views.schema_list import print_schemas

            print_schemas(list(closing.schemas), console)
        if closing.stats is not None:
            from kdissect.views.stats import print_stats

            print_stats(closing.stats, console, list(closing.notes))
        report, capture = closing.report, self.settings.capture
        if report is not None:
            from kdissect.views.doctor import print_findings, print_verdict

            if command == "doctor":
                print_verdict(report, console, capture)
                console.print()
                print_findings(self.findings, console, capture, everything=self.settings.everything, hidden_by="--all")
            else:
                if command != "read" and report.problems:
                    console.print(Text("Findings", style="bold") + Text(" (kdissect doctor --explain ID tells more)"))
                    print_findings(report.findings, console, capture, brief=True, everything=False, hidden_by="doctor --all")
                print_verdict(report, console, capture, hint=True)
        self.stream.flush()
