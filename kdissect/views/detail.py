"""`kdissect show`: one exchange as a tree of every field, records included, optionally with each field's bytes.

Offsets are frame offsets, counted from the first byte after the size prefix, as in diagnostics.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from kdissect.decode.body import Body
from kdissect.decode.redaction import Redacted, carries_secrets
from kdissect.events import Exchange, Message, RequestHeader, SaslTokenHeader
from kdissect.printable import printable
from kdissect.records.values import KafkaRecord, LegacyMessage, Record, RecordBatch, RecordSet, format_timestamp
from kdissect.schema import Catalog, error_name
from kdissect.schema.tree import Struct, UnknownTag
from kdissect.views.json_lines import time_text
from kdissect.views.summary import api_label
from kdissect.views.terminal import duration, size, status_text

HEX_INLINE = 16
"""Bytes shown beside a field with --hex; the frame's full dump follows the tree."""
PREVIEW = 64
"""Characters of a key, value or bytes field shown before it is cut."""


def preview(data: bytes | None) -> Text:
    if data is None:
        return Text("null", style="dim")
    try:
        text = data.decode("utf-8")
        if text.isprintable():
            shown = text if len(text) <= PREVIEW else text[:PREVIEW] + "…"
            return Text(repr(shown) + (f" ({len(data)} bytes)" if len(text) > PREVIEW else ""), style="green")
    except UnicodeDecodeError:
        pass
    shown = data[: PREVIEW // 2].hex(" ")
    return Text(f"0x {shown}" + ("…" if len(data) > PREVIEW // 2 else "") + f" ({len(data)} bytes)", style="cyan")


def _tree_of(node: Tree, value: Any) -> None:
    """A decoded value as a tree: objects by their field names (escaped: a schema from a capture is data too), arrays by
    index, leaves as `scalar` writes them."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else None
    if items is None:
        node.add(scalar("", value))
        return
    for name, item in items:
        label = Text(f"[{name}]", style="dim") if isinstance(name, int) else Text(printable(str(name)))
        if isinstance(item, (dict, list)) and item:
            _tree_of(node.add(label + Text(f" [{len(item)}]" if isinstance(item, list) else "", style="bold")), item)
        else:
            node.add(label + Text(": ") + scalar("", item))


def scalar(name: str, value: Any) -> Text:
    if isinstance(value, Redacted):
        return Text(str(value), style="bold magenta")
    if isinstance(value, bytes):
        return preview(value)
    if value is None:
        return Text("null", style="dim")
    if isinstance(value, str):
        return Text(repr(value), style="green")
    text = Text(str(value), style="blue")
    if isinstance(value, int) and not isinstance(value, bool):
        if name.endswith("ErrorCode"):
            text.append(f"  {error_name(value)}", style="bold red" if value else "dim")
        elif name.endswith(("TimestampMs", "Timestamp", "TimeMs")) and "Timeout" not in name and value > 10**11:
            text.append(f"  {format_timestamp(value)}", style="dim")
    return text


def _count(records: RecordSet) -> tuple[int, int]:
    """How many records `records.records()` yields, and how many entries a tree of them has (batches, records,
    legacy messages at every depth): one walk without a generator per wrapper (a frame can hold a million)."""
    count = entries = 0
    for batch in records.batches:
        if isinstance(batch, RecordBatch):
            count += len(batch.records)
            entries += 1 + len(batch.records)
            continue
        held = [batch]
        while held:
            m = held.pop()
            count += m.codec == "none"
            entries += 1
            held += m.messages
    return count, entries


class DetailView:
    ENTRIES = 200
    """Batches, records and legacy messages a message's tree shows: a frame can hold a million (compressed
    wrappers nested in many batches), and rich's cost grows with a tree's nodes times its depth (400 exchanges of
    nested fan-out: 84 s at 1 000 entries, 58 s at 200). The rest are counted in one line; `--json` writes them
    all."""

    def __init__(
        self,
        catalog: Catalog,
        hexdump: bool,
        marks: dict[int, tuple[str, int, int]] | None = None,
        show_secrets: bool = False,
        values: Any = None,
    ) -> None:
        self.catalog = catalog
        self.values = values
        """The run's `values.reader.ValueReader`: each record's key and value read for what they say, as a subtree."""
        self._topics: dict[int, str | None] = {}
        """The run's APIs: which of them carry secrets, whose bodies a dump masks when they do not decode whole."""
        self.hexdump = hexdump
        self.show_secrets = show_secrets
        self.marks = marks
        """When given, filled with id(tree node) -> (side, start, end): where each field's bytes lie in its frame,
        for the browser's hex pane (needs a body decoded with spans)."""
        self._side = ""
        self._left = self.ENTRIES
        self._past = 0

    def _room(self) -> bool:
        """Whether the message's tree takes one more entry (a records field counts the ones it left out)."""
        if self._left > 0:
            self._left -= 1
            return True
        return False

    def render(self, exchange: Exchange) -> RenderableType:
        title = Text(f"Exchange {exchange.id}", style="bold")
        corr = "" if exchange.correlation_id is None else f"  corr {exchange.correlation_id}"
        title.append(f"  {printable(api_label(exchange))}{corr}  {exchange.connection}")
        if exchange.client_id:
            title.append(f"  client {exchange.client_id!r}")
        if exchange.latency is not None:
            title.append(f"  {duration(exchange.latency)}")
            if exchange.queued:  # the browser shows the same title
                title.append(f" ({duration(exchange.queued)} in line behind #{exchange.ahead})", style="dim")
        title.append("  ")
        title.append_text(status_text(exchange))
        tree = Tree(title)
        dumps: list[RenderableType] = []
        for side, message in (("Request", exchange.request), ("Response", exchange.response)):
            if message is None:
                tree.add(Text(f"{side}: not in the capture", style="yellow"))
                continue
            self._side = side
            tree.add(self._message(side, message))
            if self.hexdump:
                dumps.append(self._dump(side, message, body_hidden(exchange.api_key, message, self.show_secrets, self.catalog)))
        return Group(tree, *dumps)

    def _message(self, side: str, message: Message) -> Tree:
        frame = message.frame
        label = Text(f"{side}", style="bold")
        label.append(f"  {size(frame.size + 4)}, packets {frame.first_packet}-{frame.last_packet}, {time_text(frame.ts)}", style="dim")
        if frame.lost:
            label.append(f"  {frame.lost} bytes missing from the capture", style="magenta")
        node = Tree(label)
        header = message.header
        if isinstance(header, SaslTokenHeader):
            node.add(Text("No header: a raw SASL token after SaslHandshake v0", style="dim"))
        elif header is not None:
            hnode = self._mark(node.add(Text(f"Header v{header.version}", style="bold")), (0, header.length))
            pairs: list[tuple[str, object]] = [("correlation_id", header.correlation_id)]
            if isinstance(header, RequestHeader):
                pairs = [("api_key", header.api_key), ("api_version", header.api_version)] + pairs + [("client_id", header.client_id)]
            for name, value in pairs:
                hnode.add(Text(f"{printable(name)}: ") + scalar(name, value))
            for tagged in header.tagged:
                hnode.add(Text(f"tag {tagged.tag}: ") + preview(tagged.data))
        body = message.body if isinstance(message.body, Body) else None
        self._left, self._past = self.ENTRIES, 0
        if body is not None:
            label = Text(f"Body {printable(body.schema)} v{body.version}" if body.schema else "Body of an unknown API", style="bold")
            if body.assumed:
                label.append("  (assumed: the message's version is unknown)", style="magenta")
            bnode = self._mark(node.add(label), (header.length if header else 0, len(message.frame.data)))
            self._topics = {id(placed.records): placed.topic for placed in body.records}
            if body.fields is not None:
                self._struct(bnode, body.fields, message.frame.data)
            elif body.raw is not None:
                bnode.add(preview(body.raw))
            if self._past:
                bnode.add(
                    Text(
                        f"… {self._past} more batches, records and messages: a tree shows {self.ENTRIES} a message (--json has them all)",
                        style="dim",
                    )
                )
        for d in message.diagnostics:
            node.add(Text(f"⚠ {d.code}: {printable(d.message)}" + (f" ({d.at()})" if d.at() else ""), style="magenta"))
        return node

    def _span(self, struct: Struct, name: str, data: bytes) -> Text:
        span = struct.span(name) if self.hexdump else None
        if span is None:
            return Text()
        start, end = span
        value = struct.get(name)
        shown = "** " * min(end - start, HEX_INLINE) if isinstance(value, Redacted) else data[start : min(end, start + HEX_INLINE)].hex(" ")
        return Text(f"  @{start}-{end} [{shown}{' …' if end - start > HEX_INLINE else ''}]", style="dim")

    def _mark(self, node: Tree, span: tuple[int, int] | None) -> Tree:
        if self.marks is not None and span is not None:
            self.marks[id(node)] = (self._side, *span)
        return node

    def _struct(self, node: Tree, struct: Struct, data: bytes) -> None:
        for name, value in struct.items():
            annotation = struct.annotations.get(name) if struct.annotations else None
            span = struct.span(name)
            if isinstance(value, UnknownTag):
                node.add(Text(f"{printable(name)}: ", style="yellow") + preview(value.data))
            elif isinstance(value, Struct):
                self._struct(self._mark(node.add(Text(printable(name), style="bold") + self._span(struct, name, data)), span), value, data)
            elif isinstance(value, list) and value and isinstance(value[0], Struct):
                child = self._mark(node.add(Text(f"{printable(name)} [{len(value)}]", style="bold") + self._span(struct, name, data)), span)
                for i, item in enumerate(value):
                    self._struct(child.add(Text(f"[{i}]", style="dim")), item, data)
            elif isinstance(value, RecordSet):
                start = span[1] - value.size if span else None  # the blob starts after its length prefix
                count, entries = _count(value)
                label = Text(f"{printable(name)}: ", style="bold") + self._records_label(value, count) + self._span(struct, name, data)
                left = self._left
                self._records(self._mark(node.add(label), span), value, start)
                self._past += entries - (left - self._left)  # what the budget left out of this field
            else:
                text = Text(f"{printable(name)}: ") + (Text(repr(value), style="blue") if isinstance(value, list) else scalar(name, value))
                self._mark(node.add(text + self._span(struct, name, data)), span)
            if annotation is not None:
                self._annotation(node, name, annotation)

    def _annotation(self, node: Tree, name: str, annotation: Any) -> None:
        if isinstance(annotation, Struct):
            self._struct(node.add(Text(f"{printable(name)} (read by kdissect)", style="italic")), annotation, b"")
        elif isinstance(annotation, dict):
            child = node.add(Text(f"{printable(name)} (read by kdissect)", style="italic"))
            for key, value in annotation.items():
                if isinstance(value, dict):
                    self._annotation(child, key, value)
                else:
                    child.add(Text(f"{printable(key)}: ") + scalar(key, value))
        else:
            node.add(Text(f"{printable(name)} (read by kdissect): ", style="italic") + scalar(name, annotation))

    @staticmethod
    def _records_label(records: RecordSet, count: int) -> Text:
        batches = len(records.batches)
        text = Text(f"{batches} batch{'es' if batches != 1 else ''}, {count} record{'s' if count != 1 else ''}, {size(records.size)}")
        if records.truncated:
            text.append(f", {records.truncated} bytes of a partial batch at the end (normal in a Fetch response)", style="dim")
        return text

    def _records(self, node: Tree, records: RecordSet, start: int | None) -> None:
        topic = self._topics.get(id(records))
        for i, batch in enumerate(records.batches):
            if isinstance(batch, RecordBatch):
                self._batch(node, i, batch, start, topic, records)
            else:
                self._legacy(node, batch, start, topic, records)
        for d in records.diagnostics:
            node.add(Text(f"⚠ {d.code}: {printable(d.message)}" + (f" ({d.at()})" if d.at() else ""), style="magenta"))

    def _batch(self, node: Tree, i: int, b: RecordBatch, start: int | None, topic: str | None, field: RecordSet) -> None:
        if not self._room():
            return
        ratio = f", {b.uncompressed_size / b.compressed_size:.1f}× compressed" if b.codec != "none" and b.compressed_size else ""
        label = Text(f"Batch {i}", style="bold")
        label.append(f"  v2, {b.codec}{ratio}, offsets {b.base_offset}-{b.base_offset + b.last_offset_delta}, {b.record_count} records")
        label.append("  CRC ok" if b.crc_valid else "  CRC MISMATCH", style="green" if b.crc_valid else "bold red")
        if start is not None and self.hexdump:
            label.append(f"  @{start + b.span[0]}-{start + b.span[1]}", style="dim")
        child = self._mark(node.add(label), None if start is None else (start + b.span[0], start + b.span[1]))
        flags = [
            n for n, on in (("transactional", b.transactional), ("control", b.control), ("delete horizon", b.has_delete_horizon)) if on
        ]
        child.add(
            Text(
                f"producer {b.producer_id}/{b.producer_epoch} seq {b.base_sequence}, leader epoch {b.partition_leader_epoch}, "
                f"{b.timestamp_type} {format_timestamp(b.base_timestamp)} … {format_timestamp(b.max_timestamp)}"
                + (f", {', '.join(flags)}" if flags else ""),
                style="dim",
            )
        )
        for record in b.records:
            if self._room():
                self._record(child, record, topic, field)

    def _record(self, node: Tree, r: Record, topic: str | None, field: RecordSet) -> None:
        text = Text(f"offset {r.offset}  {format_timestamp(r.timestamp)}  key ")
        text.append_text(preview(r.key))
        text.append("  value ")
        text.append_text(preview(r.value))
        child = node.add(text)
        if r.control is not None:
            control = child.add(Text(f"control {r.control.name} (key v{r.control.version})", style="yellow"))
            if r.control.value is not None:
                DetailView._values(control, r.control.value)
        if r.reading is not None:
            DetailView._reading(child, r.reading)
        elif r.control is None:
            self._decoded(child, topic, r.key, r.value, r.headers, field)
        for key, value in r.headers:
            child.add(Text(f"header {key!r}: ") + preview(value))

    def _decoded(self, node: Tree, topic: str | None, key: bytes | None, value: bytes | None, headers: Any, field: RecordSet) -> None:
        """What a record's key and value say (docs/values.md), each a subtree: how it is framed and by which schema, where
        the encoded value starts, the decoded fields, and what did not decode, with its offset in the key or value."""
        if self.values is None:
            return
        for role, data, decoded in zip(("key", "value"), (key, value), self.values.record(topic, key, value, headers, field, explain=True)):
            if decoded is None:
                continue
            label = Text(f"{role} ", style="bold") + Text(decoded.format, style="bold cyan")
            if decoded.framing != "none":
                label.append(f", {decoded.framing} framing")
            label.append(f": {printable(decoded.why)}", style="dim")
            if decoded.start and data is not None:
                label.append(f"  encoded value @{decoded.start}-{len(data)} of the {role}", style="dim")
            child = node.add(label)
            if decoded.name:
                child.add(Text("type: ") + Text(printable(decoded.name), style="green"))
            if decoded.ok:
                _tree_of(child, decoded.value)
            for d in decoded.diagnostics:
                child.add(Text(f"⚠ {d.code}: {printable(d.message)} ({d.at()})", style="magenta"))

    @staticmethod
    def _reading(node: Tree, reading: KafkaRecord) -> None:
        """A record of one of Kafka's own topics: what its key and value hold."""
        child = node.add(Text(f"{reading.record} (type {reading.type}, read by kdissect)", style="italic"))
        if reading.key is not None:
            DetailView._values(child.add(Text("key", style="bold")), reading.key)
        if reading.value is not None:
            DetailView._values(child.add(Text("value", style="bold")), reading.value)

    @staticmethod
    def _values(node: Tree, struct: Struct) -> None:
        """A struct decoded from inside a value (control records): names and values, no spans."""
        for name, value in struct.items():
            if isinstance(value, list) and value and isinstance(value[0], Struct):
                child = node.add(Text(f"{printable(name)} [{len(value)}]", style="bold"))
                for i, item in enumerate(value):
                    DetailView._values(child.add(Text(f"[{i}]", style="dim")), item)
            elif isinstance(value, Struct):
                DetailView._values(node.add(Text(printable(name), style="bold")), value)
            else:
                node.add(Text(f"{printable(name)}: ") + scalar(name, value))

    def _legacy(self, node: Tree, m: LegacyMessage, start: int | None, topic: str | None, field: RecordSet) -> None:
        if not self._room():
            return
        text = Text(f"Message v{m.magic}", style="bold")
        text.append(f"  offset {m.offset}, {m.codec}")
        if m.timestamp is not None:
            text.append(f", {m.timestamp_type} {format_timestamp(m.timestamp)}")
        text.append("  CRC ok" if m.crc_valid else "  CRC MISMATCH", style="green" if m.crc_valid else "bold red")
        child = node.add(text)
        if m.messages:
            for inner in m.messages:
                self._legacy(child, inner, None, topic, field)
        else:
            child.add(Text("key ") + preview(m.key) + Text("  value ") + preview(m.value))
            if m.reading is not None:
                self._reading(child, m.reading)
            else:
                self._decoded(child, topic, m.key, m.value, (), field)

    @staticmethod
    def _dump(side: str, message: Message, hidden: bool) -> RenderableType:
        dump = FrameDump(message, hidden=hidden)
        return Group(Text(f"{side} frame bytes (offsets after the 4-byte size prefix)", style="bold"), *map(dump.line, range(len(dump))))


class FrameDump:
    """A frame's bytes, 16 to a line, redacted fields masked and holes named; a line at a time, so a browser can
    show a line of a megabyte frame without making the others."""

    def __init__(self, message: Message, highlight: tuple[int, int] = (0, 0), hidden: bool = False) -> None:
        frame = self.frame = message.frame
        self.highlight = highlight
        """Bytes [start, end) shown reversed: the field selected in the browser."""
        self.masked: set[int] = set()
        body = message.body if isinstance(message.body, Body) else None
        if hidden:  # `body_hidden`: where its secrets lie is not known
            self.masked.update(range(message.header.length if message.header else 0, frame.size))
        elif body is not None and body.fields is not None:
            for span in _secret_spans(body.fields):
                if span is None:  # decoded without spans: the whole body stays hidden rather than risk a leak
                    self.masked.update(range(message.header.length if message.header else 0, frame.size))
                else:
                    self.masked.update(range(*span))
        holes = dict(frame.holes())
        self.pieces: list[tuple[int, int, bytes | None]] = []
        """(first line, frame offset, bytes or None for a hole's one line): each captured run, then its hole."""
        rows = 0
        for at, run in ((0, frame.data), *frame.rest):
            self.pieces.append((rows, at, run))
            rows += (len(run) + 15) // 16
            if at + len(run) in holes:
                self.pieces.append((rows, at + len(run), None))
                rows += 1
        self.firsts = [first for first, _, _ in self.pieces]
        """The first line of each piece, for the bisection that finds a line's piece."""
        self.rows = rows
        self.holes = holes

    def __len__(self) -> int:
        return self.rows

    def offset(self, row: int) -> int | None:
        """The frame offset of the line's first byte; None on a hole's line."""
        first, at, run = self.pieces[bisect_right(self.firsts, row) - 1]
        return None if run is None else at + (row - first) * 16

    def row_of(self, offset: int) -> int:
        """The line that shows the byte at `offset` (or the hole that stands for it)."""
        for first, at, run in reversed(self.pieces):
            if at <= offset:
                return first if run is None else first + min((offset - at) // 16, max(0, (len(run) - 1) // 16))
        return 0

    def line(self, row: int) -> Text:
        first, start, run = self.pieces[bisect_right(self.firsts, row) - 1]
        if run is None:
            return Text(f"{start:08x}  -- {self.holes[start] - start} bytes missing from the capture --", style="magenta")
        masked, (low, high) = self.masked, self.highlight
        at = start + (row - first) * 16
        end = min(at + 16, start + len(run))
        shown = ["**" if i in masked else f"{run[i - start]:02x}" for i in range(at, end)]
        chars = ["*" if i in masked else (chr(run[i - start]) if 32 <= run[i - start] < 127 else ".") for i in range(at, end)]
        if high <= at or low >= end:
            return Text(f"{at:08x}  {' '.join(shown):<47}  {''.join(chars)}", style="dim")
        text = Text(f"{at:08x}  ", style="dim")
        glyphs = Text()
        for i, cell, char in zip(range(at, end), shown, chars):
            style = "reverse bold" if low <= i < high else "dim"
            text.append(cell, style=style)
            if i + 1 < end:
                text.append(" ", style=style if low <= i + 1 < high else "dim")
            glyphs.append(char, style=style)
        text.append(" " * (3 * (16 - (end - at))) + "  ")
        return text + glyphs


def body_hidden(api_key: int | None, message: Message, show_secrets: bool, catalog: Catalog) -> bool:
    """Whether a frame's whole body is masked in a hex dump: its API carries secrets and the body was not read
    whole, so where each secret lies is not known."""
    body = message.body
    decoded = (
        isinstance(body, Body)
        and body.fields is not None
        and not any(d.code in ("body.malformed", "body.trailing-bytes") for d in message.diagnostics)
    )
    return not show_secrets and carries_secrets(api_key, catalog) and not decoded


def _secret_spans(struct: Struct) -> list[tuple[int, int] | None]:
    """Where each redacted value lies in the frame (None where spans were not recorded)."""
    out: list[tuple[int, int] | None] = []
    for name, value in struct.items():
        if isinstance(value, Redacted):
            out.append(struct.span(name))
        elif isinstance(value, Struct):
            out += _secret_spans(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Struct):
                    out += _secret_spans(item)
    return out
