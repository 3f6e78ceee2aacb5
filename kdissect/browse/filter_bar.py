"""The filter bar: a display filter of the `-Y` language, the list following it as soon as it parses and its
mistake said under it while it does not. `Enter` keeps it, `Esc` goes back to the filter the bar opened on."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from kdissect.browse.wire_text import Escaped
from kdissect.filter import FilterError, compile_filter
from kdissect.printable import printable
from kdissect.schema import Catalog


def compiled(text: str, catalog: Catalog, values: Any = None) -> Any:
    """The filter of `text` over the catalogue's APIs (record values read by `values`), None for an empty one;
    FilterError says what is wrong."""
    return compile_filter([("-Y", text)], catalog, values) if text.strip() else None


class FilterBar(Vertical):
    """The filter bar; hidden until `open`."""

    class Changed(Message):
        """A filter that parses: the list shows what it matches."""

        def __init__(self, text: str, wanted: Any) -> None:
            super().__init__()
            self.text = text
            self.wanted = wanted

    class Closed(Message):
        """The bar closed; `entered`: by Enter (else by Esc)."""

        def __init__(self, entered: bool) -> None:
            super().__init__()
            self.entered = entered

    def __init__(self, catalog: Catalog, values: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.catalog = catalog
        self.values = values
        """The run's APIs: the filter's names and body fields."""
        self._before = ""
        """The filter applied when the bar opened: what Esc goes back to."""
        self._applied = ""

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="display filter, e.g. api == Fetch and latency_ms > 100", id="filter", select_on_focus=False, highlighter=Escaped()
        )
        yield Static("", id="filter-error")

    @property
    def is_open(self) -> bool:
        return self.has_class("open")

    def open(self) -> None:
        self.add_class("open")
        self._before = self._applied
        field = self.query_one("#filter", Input)
        field.cursor_position = len(field.value)
        field.focus()

    def set(self, text: str) -> None:
        """A filter applied from elsewhere (a flow, a finding, c or g): the bar's text, not typed."""
        field = self.query_one("#filter", Input)
        with field.prevent(Input.Changed):
            field.value = text
        self._applied = text

    def _close(self, entered: bool) -> None:
        self.remove_class("open")
        self.query_one("#filter-error", Static).update(Text())
        self.post_message(self.Closed(entered))

    def _parsed(self, text: str) -> tuple[bool, Any]:
        """(whether `text` parses, its filter); what is wrong is said under the field."""
        error = self.query_one("#filter-error", Static)
        try:
            wanted = compiled(text, self.catalog, self.values)
        except FilterError as exc:
            error.update(Text(printable(str(exc))))
            return False, None
        error.update(Text())
        return True, wanted

    def _apply(self, text: str, wanted: Any) -> None:
        self._applied = text.strip()
        self.post_message(self.Changed(self._applied, wanted))

    @on(Input.Changed, "#filter")
    def typed(self, event: Input.Changed) -> None:
        event.stop()
        parses, wanted = self._parsed(event.value)
        if parses:
            self._apply(event.value, wanted)

    @on(Input.Submitted, "#filter")
    def entered(self, event: Input.Submitted) -> None:
        event.stop()
        parses, wanted = self._parsed(event.value)
        if not parses:
            return
        if event.value.strip() != self._applied:
            self._apply(event.value, wanted)
        self._close(True)

    def cancel(self) -> None:
        """Esc: back to the filter the bar opened on."""
        self.set(self._before)
        self._apply(self._before, compiled(self._before, self.catalog, self.values))
        self._close(False)
