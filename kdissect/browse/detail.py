"""The detail pane: one exchange as `show --hex` prints it, a tree of its fields beside its frame's bytes; the
selected field lights its bytes, a click on a byte selects its field.

The index keeps no bodies: the exchange is decoded again from the file in a worker (`decode`, the index's pass
knows how). One decoding runs at a time; while it runs, the pane only notes the last exchange asked for, and
decodes that one next, so a cursor run down the list costs one decoding at a time, not one per line passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Group
from rich.text import Text
from rich.tree import Tree as RichTree
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from kdissect.browse.index import Row
from kdissect.browse.lines import Lines
from kdissect.browse.wire_text import visible, wire
from kdissect.events import Exchange
from kdissect.schema import Catalog
from kdissect.views.detail import DetailView, FrameDump, body_hidden

HEX_WIDTH = 76
"""A line of the hex dump: offset, 16 bytes, 16 characters."""
HEX_BYTES = 10
"""Columns before the first byte of a hex line ("00000010  "); each byte takes three, the characters follow."""


class DetailPane(Horizontal):
    """The detail pane; shown once an exchange is opened."""

    class Decoded(Message):
        def __init__(self, row: Row, exchange: Exchange | None, failure: str | None) -> None:
            super().__init__()
            self.row = row
            self.exchange = exchange
            self.failure = failure

    def __init__(
        self, decode: Callable[[Row], Exchange | None], catalog: Catalog, show_secrets: bool, values: Any = None, **kwargs: Any
    ) -> None:
        """`decode`: the exchange of an index row read again from the file (called on a worker thread); `values`: the
        run's `values.reader.ValueReader`, which shows each record's key and value as a subtree (docs/values.md)."""
        super().__init__(**kwargs)
        self.decode = decode
        self.catalog = catalog
        self.show_secrets = show_secrets
        self.values = values
        self.exchange: Exchange | None = None
        """The exchange shown."""
        self._wanted: Row | None = None
        """The last exchange asked for."""
        self._decoding = False
        self._focus = False
        """Whether the tree takes the focus when the wanted exchange is shown (it was opened, not followed)."""
        self._fields: list[tuple[TreeNode, str, int, int]] = []
        """(tree node, side, start, end) of every field whose bytes are known: what a click on a byte looks in."""
        self._dump: FrameDump | None = None
        self._dump_side = ""
        """Which frame the hex pane shows: Request or Response."""

    def compose(self) -> ComposeResult:
        yield Tree(Text("(open an exchange with Enter)"), id="detail")
        with Vertical(id="hex-pane"):
            yield Static("", id="hex-title")
            yield Lines(lambda i: Text(), cursor_shown=False, width=HEX_WIDTH, id="hex")

    @property
    def opened(self) -> bool:
        return self.has_class("open")

    def show(self, row: Row, focus: bool) -> None:
        """Open the pane on the exchange of `row`; `focus`: the tree takes the focus when it is shown."""
        self.add_class("open")
        self._focus = focus
        if self._wanted is not None and self._wanted.id == row.id:  # shown, or being decoded
            if focus and not self._decoding:
                self.query_one("#detail", Tree).focus()
            return
        self._wanted = row
        self.query_one("#detail", Tree).reset(Text(f"decoding exchange {row.id}…", style="yellow"))
        if not self._decoding:
            self._decoding = True
            self._decode(row)

    @work(thread=True, group="decode")
    def _decode(self, row: Row) -> None:
        try:
            exchange, failure = self.decode(row), None
        except Exception as exc:  # a file that changed or broke since it was indexed
            exchange, failure = None, str(exc)
        self.post_message(self.Decoded(row, exchange, failure))

    @on(Decoded)
    def decoded(self, message: Decoded) -> None:
        wanted = self._wanted
        if wanted is not None and wanted.id != message.row.id:  # the cursor moved on meanwhile
            self._decode(wanted)
            return
        self._decoding = False
        tree = self.query_one("#detail", Tree)
        if message.exchange is None:
            self._wanted = self.exchange = None  # Enter tries again
            why = f": {message.failure}" if message.failure else " from the file"
            tree.reset(wire(f"exchange {message.row.id} could not be read again{why}", "red"))
        else:
            self._show_exchange(message.exchange)
            if self._focus:
                tree.focus()

    def _show_exchange(self, exchange: Exchange) -> None:
        self.exchange = exchange
        marks: dict[int, tuple[str, int, int]] = {}
        rendered = DetailView(self.catalog, False, marks, self.show_secrets, self.values).render(exchange)
        assert isinstance(rendered, Group)
        top = rendered.renderables[0]
        assert isinstance(top, RichTree) and isinstance(top.label, Text)
        tree = self.query_one("#detail", Tree)
        tree.reset(visible(top.label))
        self._fields = []
        self._graft(tree.root, top, marks, 0)
        tree.root.expand()
        self._show_bytes("Request" if exchange.request else "Response", (0, 0))

    def _graft(self, node: TreeNode, source: RichTree, marks: dict[int, tuple[str, int, int]], depth: int) -> None:
        """The rich tree `show` prints, made a Textual tree: the same labels (captured words escaped), and each
        field's bytes as its data."""
        for child in source.children:
            if isinstance(child.label, RichTree):  # `show` adds each side as a tree of its own
                child = child.label
            mark = marks.get(id(child))
            assert isinstance(child.label, Text)
            label = visible(child.label)
            if child.children:
                added = node.add(label, data=mark, expand=depth < 3)
                self._graft(added, child, marks, depth + 1)
            else:
                added = node.add_leaf(label, data=mark)
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
        if exchange is None or message is None:
            self._dump = None
            hex_lines.reset(0)
            title.update(Text())
            return
        dump = self._dump = FrameDump(message, span, body_hidden(exchange.api_key, message, self.show_secrets, self.catalog))
        self._dump_side = side
        chosen = f", bytes {span[0]}-{span[1]} selected" if span[1] > span[0] else ""
        title.update(Text(f"{side} frame, {message.frame.size} bytes after the size prefix{chosen}"))
        hex_lines.reset(len(dump), dump.line, keep_cursor=False)
        hex_lines.scroll_to(y=max(0, dump.row_of(span[0]) - 2), animate=False)

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

    def toggle_hex(self) -> None:
        self.query_one("#hex-pane").toggle_class("hidden")

    def panes(self) -> list[Widget]:
        """Its panes that can take the focus, as shown: the tree, and the bytes unless hidden."""
        if not self.opened:
            return []
        hex_pane = self.query_one("#hex-pane")
        return [self.query_one("#detail", Tree)] + ([] if hex_pane.has_class("hidden") else [self.query_one("#hex", Lines)])
