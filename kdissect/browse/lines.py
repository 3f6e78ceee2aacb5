"""A virtual list of lines: only the lines on screen are ever made, so a million rows scroll as smoothly as ten.

The exchange list and the hex pane are both this widget over a different source of lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

CURSOR = Style(reverse=True)


class Lines(ScrollView, can_focus=True):
    """`count` lines, the i-th made by `line(i)` when it is drawn; a cursor line when `cursor_shown`."""

    BINDINGS = [
        Binding("up", "move(-1)", "up", show=False),
        Binding("down", "move(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "jump(0)", "first", show=False),
        Binding("end", "jump(-1)", "last", show=False),
        Binding("left", "scroll_left", "left", show=False),
        Binding("right", "scroll_right", "right", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    class Clicked(Message):
        def __init__(self, lines: Lines, row: int, column: int, chain: int) -> None:
            super().__init__()
            self.lines = lines
            self.row = row
            self.column = column
            self.chain = chain
            """1 for a click, 2 for a double click."""

        @property
        def control(self) -> Lines:
            return self.lines

    def __init__(self, line: Callable[[int], Text], cursor_shown: bool = True, width: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.line = line
        self.count = 0
        self.cursor_shown = cursor_shown
        self.width = width
        """How wide the lines are; wider than the widget, they scroll sideways."""
        self.empty = ""
        """What the first line says while there are no lines (a filter that matches nothing), dimmed."""

    def reset(self, count: int, line: Callable[[int], Text] | None = None, keep_cursor: bool = True) -> None:
        """A new number of lines (and maker of lines); everything is redrawn."""
        if line is not None:
            self.line = line
        self.count = count
        self.virtual_size = Size(max(self.width, self.size.width), count)
        cursor = min(self.cursor, max(0, count - 1)) if keep_cursor else 0
        self.set_reactive(Lines.cursor, cursor)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        width, left = self.size.width, self.scroll_offset.x
        if row >= self.count:
            if row == 0 and self.empty:
                return Strip(list(Text(self.empty, style="dim italic").render(self.app.console, end=""))).crop_extend(0, width, None)
            return Strip.blank(width)
        text = self.line(row)
        text.no_wrap = True
        text.overflow = "crop"
        strip = Strip(list(text.render(self.app.console, end=""))).crop_extend(left, left + width, None)
        if self.cursor_shown and row == self.cursor:
            strip = strip.apply_style(CURSOR if self.has_focus else Style(bgcolor="grey23"))
        return strip

    def watch_cursor(self, cursor: int) -> None:
        self.scroll_to_row(cursor)
        self.refresh()

    def scroll_to_row(self, row: int) -> None:
        top, height = self.scroll_offset.y, self.scrollable_content_region.height
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False)

    def action_move(self, delta: int) -> None:
        if self.count:
            self.cursor = max(0, min(self.count - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.size.height - 1))

    def action_jump(self, row: int) -> None:
        if self.count:
            self.cursor = row % self.count

    def on_click(self, event: events.Click) -> None:
        row = self.scroll_offset.y + event.y
        if row < self.count:
            if self.cursor_shown:
                self.cursor = row
            self.post_message(self.Clicked(self, row, self.scroll_offset.x + event.x, event.chain))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
