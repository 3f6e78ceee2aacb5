"""The rich terminal view of `kdissect read`: exchanges as they complete, then flows, errors and notes.

Rows stream with fixed column widths instead of one big table, so a capture of any size starts printing at
once and memory does not grow with it. Colours and control codes appear only on a terminal.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kdissect.capture.linktypes import name as linktype_name
from kdissect.decode.body import Body
from kdissect.diagnostic import Diagnostic
from kdissect.events import Exchange
from kdissect.kafka.shared import Counters
from kdissect.schema import error_name
from kdissect.views.summary import Summary, api_label, exchange_errors, percentile


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    """Which value: id, time, conn, api, corr, client or latency."""
    title: str
    width: int
    align: str = "left"
    shrink: str = "end"
    """How a longer value is cut: "end" (an ellipsis at the end), "middle" (the ends kept), "api" (the name cut
    in the middle, the version kept whole) or "never" (numbers: the row is misaligned rather than a number cut)."""


def row_columns(width: int) -> tuple[Column, ...]:
    """The exchange rows' columns for a terminal `width` columns wide; the status takes what is left. Narrow
    terminals lose the correlation id and the microseconds; wide ones give API names and client ids more room."""
    if width < 100:
        return (
            Column("id", "#", 5, "right", "never"),
            Column("time", "completed", 12),
            Column("conn", "conn", 4, "right", "never"),
            Column("api", "API", 18, shrink="api"),
            Column("client", "client id", 12, shrink="middle"),
            Column("latency", "latency", 9, "right"),
        )
    wide = width >= 160
    return (
        Column("id", "#", 6, "right", "never"),
        Column("time", "completed (UTC)", 15),
        Column("conn", "conn", 4, "right", "never"),
        Column("api", "API", 26 if wide else 22, shrink="api"),
        Column("corr", "corr", 10 if wide else 8, "right", "never"),
        Column("client", "client id", 30 if wide else 18, shrink="middle"),
        Column("latency", "latency", 10, "right"),
    )


@dataclass(frozen=True, slots=True)
class TableColumn:
    """A column of a closing table: it either wraps (text) or is kept whole (numbers, names); `keep` orders
    which columns a narrow terminal leaves out first (the highest number goes first; 0 always stays)."""

    name: str
    justify: str = "left"
    wrap: bool = False
    keep: int = 0
    max_width: int | None = None


WORD_MAX = 24
"""A wrapping column grows to hold whole words up to this length; longer ones are folded."""


def fitted_table(
    title: str, columns: list[TableColumn], rows: list[tuple[Any, ...]], width: int, style: str = "bold", compact: bool = False
) -> Table:
    """A table that fits `width`: no column is squeezed below its header or its longest whole value; columns are
    left out, least needed first, until it fits, and the caption names them. `compact` cuts long text with an
    ellipsis instead of wrapping it, so each row is one line."""

    def cells(i: int) -> list[str]:
        return [cell.plain if isinstance(cell, Text) else cell for cell in (r[i] for r in rows)]

    def least(i: int, whole_words: bool = True) -> int:
        """The narrowest column `i` may be: its header and its longest whole value, or when it wraps at least 12
        and, with `whole_words`, its longest word (so MEMBER_ID_REQUIRED×2 is not broken; up to WORD_MAX)."""
        c = columns[i]
        if c.wrap:
            words = [min(len(word), WORD_MAX) for text in cells(i) for word in text.split()] if whole_words else []
            return max(len(c.name), 12, *words)
        return max([len(c.name)] + [cell_len(text) for text in cells(i)])

    def too_wide(shown: list[int], whole_words: bool) -> bool:
        return 1 + sum(3 + least(i, whole_words) for i in shown) > width  # each column's padding and border: 3

    shown = list(range(len(columns)))
    while too_wide(shown, True) and any(columns[i].keep for i in shown):
        shown.remove(max((i for i in shown if columns[i].keep), key=lambda i: (columns[i].keep, i)))
    whole_words = not too_wide(shown, True)  # else words are broken rather than the table made wider than the terminal
    table = Table(title=title, title_justify="left", title_style=style, header_style="bold")
    for i in shown:
        c = columns[i]
        table.add_column(
            c.name,
            justify=c.justify,  # type: ignore[arg-type]
            no_wrap=not c.wrap,
            overflow="ellipsis" if compact or not c.wrap else "fold",
            min_width=least(i, whole_words) if c.wrap else None,
            max_width=c.max_width,
        )
    for row in rows:
        table.add_row(*(_one_line(row[i]) if compact and columns[i].wrap else row[i] for i in shown))
    left_out = [c.name for i, c in enumerate(columns) if i not in shown]
    if left_out:
        table.caption = f"left out at this width: {', '.join(left_out)}"
        table.caption_justify = "left"
    return table


def _one_line(cell: Any) -> Text:
    """A cell of a wrapping column kept to one line, cut with an ellipsis."""
    text = cell.copy() if isinstance(cell, Text) else Text(cell)
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def clock(ts_ns: int, digits: int = 6) -> str:
    """The time of day in UTC, with `digits` decimals (6: microseconds, 3: milliseconds)."""
    return _utc(ts_ns, "%H:%M:%S.")[: 9 + digits]


def stamp(ts_ns: int | None) -> str:
    if ts_ns is None:
        return "-"
    return _utc(ts_ns, "%Y-%m-%d %H:%M:%S.")


def _utc(ts_ns: int, layout: str) -> str:
    """A capture time with microseconds; pcapng can state times no calendar holds, which say so instead."""
    seconds, ns = divmod(ts_ns, 1_000_000_000)
    try:
        return datetime.fromtimestamp(seconds, timezone.utc).strftime(layout) + f"{ns // 1000:06d}"
    except (OverflowError, ValueError, OSError):
        return "out of range"


def duration(ns: int | None) -> str:
    """A latency in at most 9 characters: 512 µs, 251.30 ms, 3.00 s."""
    if ns is None:
        return "-"
    if ns < 1_000_000:
        return f"{ns / 1000:.0f} µs"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.2f} ms"
    if ns < 1000_000_000_000:
        return f"{ns / 1e9:.2f} s"
    return f"{ns / 1e9:.0f} s"


def size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def _cell(text: str, column: Column) -> str:
    width = column.width
    if len(text) > width and column.shrink != "never":
        text = elide(text, width, column.shrink)
    return text.rjust(width) if column.align == "right" else text.ljust(width)


def elide(text: str, width: int, how: str = "end") -> str:
    """`text` cut to `width` with an ellipsis: at the end, in the middle, or (for "Name vN") in the name."""
    if len(text) <= width:
        return text
    if how == "api" and " v" in text:
        name, version = text.rsplit(" v", 1)
        return elide(name, width - len(version) - 2, "middle") + " v" + version
    if how == "middle" and width > 2:
        head = (width - 1 + 1) // 2
        return text[:head] + "…" + text[len(text) - (width - 1 - head) :]
    return text[: width - 1] + "…"


def status_text(exchange: Exchange) -> Text:
    errors = exchange_errors(exchange)
    if errors:
        names = list(dict.fromkeys(error_name(code) for _, code, _ in errors))
        text = Text(", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else ""), style="bold red")
    elif exchange.status == "ok":
        text = Text("ok", style="green")
    else:
        text = Text(exchange.status, style="yellow")
    body = next((m.body for m in (exchange.request, exchange.response) if m and isinstance(m.body, Body) and m.body.assumed), None)
    if body is not None:
        text.append(f"  assumed v{body.version}", style="magenta")
    diagnostics = [d for d in exchange.diagnostics if d.severity != "note"]
    if diagnostics:
        text.append(f"  ⚠ {diagnostics[0].code}" + (f" +{len(diagnostics) - 1}" if len(diagnostics) > 1 else ""), style="magenta")
    return text


def completed(exchange: Exchange) -> int:
    """When the exchange completed: its response; its request when it has none (printed when kdissect gives up)."""
    message = exchange.response or exchange.request
    assert message is not None
    return message.ts


def header_row(columns: tuple[Column, ...]) -> Text:
    return Text(" ".join(_cell(c.title, c) for c in columns) + " status", style="bold")


def exchange_row(exchange: Exchange, columns: tuple[Column, ...]) -> Text:
    latency = exchange.latency
    cells = {
        "id": str(exchange.id),
        "conn": str(exchange.connection.id),
        "api": api_label(exchange),
        "corr": "" if exchange.correlation_id is None else str(exchange.correlation_id),
        "client": exchange.client_id or "",
        "latency": duration(latency) if latency is not None else "",
    }
    # the time's precision follows its column: microseconds in 15 characters, milliseconds in 12
    texts = [_cell(clock(completed(exchange), c.width - 9) if c.key == "time" else cells[c.key], c) for c in columns]
    row = Text(" ".join(texts) + " ")
    row.append_text(status_text(exchange))
    return row


class ReadView:
    """Prints one capture: a title, exchange rows as they come, and the closing panels."""

    def __init__(self, console: Console, rows: bool = True, detail: Any = None) -> None:
        self.console = console
        self.rows = rows
        """False for the summary only (-q)."""
        self.detail = detail
        """A `DetailView` to print each exchange as a tree instead of a row (-V)."""
        self.columns = row_columns(console.width)
        self._header_printed = False

    def title(self, name: str, fmt: str, compression: str | None) -> None:
        self.console.print(Text(f"{name}", style="bold") + Text(f"  {fmt}" + (f" ({compression})" if compression else ""), style="dim"))

    def exchange(self, exchange: Exchange) -> None:
        console = self.console
        if not self.rows:
            return
        if self.detail is not None:
            console.print(self.detail.render(exchange), soft_wrap=not console.is_terminal)
            return
        if not self._header_printed:
            console.print(header_row(self.columns), **self.fit)
            self._header_printed = True
        console.print(exchange_row(exchange, self.columns), highlight=False, **self.fit)

    @property
    def fit(self) -> dict[str, Any]:
        """On a terminal a row is cut at its width with an ellipsis, never wrapped; in a file it is kept whole."""
        if self.console.is_terminal:
            return {"no_wrap": True, "overflow": "ellipsis", "crop": True}
        return {"soft_wrap": True}

    def closing(self, summary: Summary, counters: Counters, linktypes: list[int], notes: list[Diagnostic]) -> None:
        console = self.console
        console.print()
        console.print(self._totals(summary, counters, linktypes))
        if summary.flows:
            console.print(self._flows(summary, console.width))
        if summary.errors:
            console.print(self._errors(summary))
        problems = self._problems(summary, counters, notes)
        if problems is not None:
            console.print(problems)

    @staticmethod
    def _totals(summary: Summary, counters: Counters, linktypes: list[int]) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        span = "-"
        if counters.first_ts is not None and counters.last_ts is not None:
            first, last = stamp(counters.first_ts), stamp(counters.last_ts)
            if first[:11] == last[:11]:  # the same day: its date once, so the line fits 80 columns
                last = last[11:]
            span = f"{first} → {last} UTC ({duration(counters.last_ts - counters.first_ts)})"
        statuses = ", ".join(f"{n} {s}" for s, n in summary.statuses.most_common())
        table.add_row("time", span)
        table.add_row(
            "packets", f"{counters.packets} ({size(counters.bytes)}), link: {', '.join(linktype_name(t) for t in linktypes) or '-'}"
        )
        table.add_row(
            "connections",
            f"{counters.kafka_connections} Kafka"
            + (f", {counters.ignored_connections} other" if counters.ignored_connections else "")
            + (f", {counters.empty_connections} without data" if counters.empty_connections else "")
            + (f", {counters.evicted_connections} evicted" if counters.evicted_connections else ""),
        )
        table.add_row(
            "exchanges",
            f"{summary.exchanges}"
            + (f" ({statuses})" if statuses else "")
            + (f", {summary.shown} shown; the tables count the shown ones" if summary.shown != summary.exchanges else ""),
        )
        return table

    @staticmethod
    def _flows(summary: Summary, width: int, compact: bool = False) -> Table:
        """The flows table fitted to `width`; `compact` keeps each flow on one line (the live screen)."""
        columns = [
            TableColumn("#", "right", keep=0),
            TableColumn("client → broker", keep=0),
            TableColumn("client ids", wrap=True, keep=3),
            TableColumn("exch", "right", keep=0),
            TableColumn("bytes →", "right", keep=6),
            TableColumn("bytes ←", "right", keep=6),
            TableColumn("APIs", wrap=True, keep=5, max_width=44),
            TableColumn("errors", "right", keep=1),
            TableColumn("unans.", "right", keep=4),
            TableColumn("p50", "right", keep=7),
            TableColumn("p99", "right", keep=2),
            TableColumn("diag", "right", keep=7),
        ]
        rows = []
        for flow in sorted(summary.flows.values(), key=lambda f: f.info.id):
            if flow.hidden and not flow.exchanges:
                continue  # every exchange of it was filtered out
            latencies = sorted(flow.latencies)
            end = flow.end
            rows.append(
                (
                    str(flow.info.id),
                    f"{flow.info.client} → {flow.info.broker}" + (" (mid-stream)" if end and end.mid_stream else ""),
                    ", ".join(flow.client_ids) or "-",
                    str(flow.exchanges),
                    size(end.bytes[0]) if end else "-",
                    size(end.bytes[1]) if end else "-",
                    ", ".join(f"{api}×{n}" for api, n in flow.apis.most_common()),
                    Text(str(flow.errors), style="red" if flow.errors else ""),
                    Text(str(flow.unanswered), style="yellow" if flow.unanswered else ""),
                    duration(percentile(latencies, 50)),
                    duration(percentile(latencies, 99)),
                    Text(str(flow.diagnostics), style="magenta" if flow.diagnostics else ""),
                )
            )
        return fitted_table("Flows", columns, rows, width, compact=compact)

    @staticmethod
    def _errors(summary: Summary) -> Table:
        table = Table(title="Errors", title_justify="left", title_style="bold red", header_style="bold")
        table.add_column("error")
        table.add_column("count", justify="right")
        table.add_column("where")
        table.add_column("exchanges")
        for code, tally in sorted(summary.errors.items(), key=lambda item: -item[1].count):
            table.add_row(
                Text(summary.error_label(code), style="red"),
                str(tally.count),
                ", ".join(f"{api}×{n}" for api, n in tally.apis.most_common(3)),
                ", ".join(map(str, tally.exchanges)) + (" …" if tally.count > len(tally.exchanges) else ""),
            )
        return table

    @staticmethod
    def _problems(summary: Summary, counters: Counters, notes: list[Diagnostic]) -> Table | None:
        rows: Counter[str] = Counter()
        for code, n in summary.diagnostics.items():
            rows[code] += n
        for code, n in summary.notices.items():
            rows[code] += n
        if not rows and not notes:
            return None
        table = Table(title="Diagnostics", title_justify="left", title_style="bold magenta", header_style="bold")
        table.add_column("code")
        table.add_column("count", justify="right")
        table.add_column("about")
        for note in notes:
            table.add_row(note.code, "", note.message + (f" (file offset {note.offset})" if note.offset else ""))
        for code, n in rows.most_common():
            table.add_row(code, str(n), DESCRIPTIONS.get(code, ""))
        return table


DESCRIPTIONS = {
    "tcp.gap": "bytes missing from a TCP stream (lost by the capture or cut by its snapshot length)",
    "tcp.retransmission-differs": "a retransmission carried different bytes; the first copy was kept",
    "tcp.late-segment": "bytes declared missing were captured later: used when their frame was still open",
    "tcp.after-close": "bytes captured after their connection ended; not decoded",
    "frame.skipped": "bytes skipped while searching for the next frame after a gap or a mid-stream start",
    "frame.bad-size": "a size prefix out of range",
    "frame.incomplete": "a frame with bytes missing from the capture",
    "header.unreadable": "a request or response header that cannot be read",
    "body.malformed": "a body that could not be decoded to its end",
    "body.trailing-bytes": "bytes after the end of a body",
    "body.assumed-version": "a version newer (or older) than kdissect knows, decoded as the nearest known",
    "body.unknown-api": "an API key kdissect does not know; the body is kept raw",
    "body.guessed": "a response without its request, read as the only API its bytes fit",
    "body.version-fallback": "ApiVersions answered UNSUPPORTED_VERSION in the v0 layout, with the broker's range",
    "records.lost": "record batches a hole touched; decoding resumed at the next batch whose CRC checks",
    "decode.internal-error": "kdissect failed on a body: please report it",
}
