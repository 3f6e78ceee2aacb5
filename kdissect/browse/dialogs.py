"""The browser's dialogs: the keys (`?`) and where to write the list (`w`)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

HELP = """[b]kdissect browse[/b]

  [b]/[/b]      filter (-Y language of `read`; Enter applies, Esc cancels)
  [b]Enter[/b]  open the exchange under the cursor; on a flow, its exchanges
  [b]Tab[/b]    next pane shown            [b]x[/b]  hex pane on or off
  [b]n / N[/b]  next / previous exchange with an error or a diagnostic
  [b]c[/b]      the exchange's connection  [b]g[/b]  its consumer group
  [b]s / S[/b]  sort by the next column / reverse the order
  [b]w[/b]      write the list to FILE.pcap or FILE.ndjson, or its report
         page (kdissect report's) to FILE.html
  [b]t[/b]      charts of the list's exchanges (the filter's, with one) and back
  [b]f[/b]      findings and back (doctor): on a finding, [b]Enter[/b] lists its
         evidence exchanges, [b]c[/b] its connections, [b]g[/b] its groups
  [b]?[/b]      this help                  [b]q[/b]  quit
  The tree's selected field lights its bytes in the hex pane; with the
  exchange open, it follows the list's cursor. Mouse: double-click a row
  to open it, click a byte to find its field, a column name to sort.
  Live: a cursor on the last row follows new rows.

Press any key to close."""
"""Markup of our own words only: nothing from a capture is in it."""


class HelpScreen(ModalScreen[None]):
    def compose(self) -> ComposeResult:
        yield Static(HELP, id="help")

    def on_key(self) -> None:
        self.dismiss()


class WriteScreen(ModalScreen[str]):
    """Asks where to write the list."""

    def compose(self) -> ComposeResult:
        with Vertical(id="write"):
            yield Static("Write the exchanges on the list to (.pcap, .ndjson/.jsonl for JSON, or .html for the report page):", markup=False)
            yield Input(value="kdissect-filtered.pcap", id="write-name")

    @on(Input.Submitted)
    def chosen(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def key_escape(self) -> None:
        self.dismiss("")
