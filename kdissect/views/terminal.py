"""The rich terminal view of `kdissect read`: exchanges as they complete, then flows, errors and notes.

Rows stream with fixed column widths instead of one big table, so a capture of any size starts printing at
once and memory does not grow with it. Colours and control codes appear only on a terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from rich.cells import cell_len
from rich.console import COLOR_SYSTEMS, Console, JustifyMethod
from rich.style import Style
from rich.table import Table
from rich.text import Text

from kdissect.capture.linktypes import name as linktype_name
from kdissect.decode.body import Body
from kdissect.diagnostic import Diagnostic
from kdissect.events import ConnectionEnd, ConnectionInfo, Exchange, TlsInfo
from kdissect.kafka.shared import Counters
from kdissect.printable import printable
from kdissect.schema import error_name
from kdissect.views.summary import Flow, Labelled, Summary, api_label, exchange_errors


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
    justify: JustifyMethod = "left"
    wrap: bool = False
    keep: int = 0
    max_width: int | None = None
    summed: bool = False
    """A count: the row of the rows past `ROWS` gives their sum in this column (other columns stay empty)."""


ROWS = 1_000
"""Rows a closing table shows: a capture can open a connection, name a client or a topic per packet, and a
table of 100 000 rows costs rich a minute and a gigabyte. The rest are summed in one last row, and said."""

WORD_MAX = 24
"""A wrapping column grows to hold whole words up to this length; longer ones are folded."""


def fitted_table(
    title: str, columns: list[TableColumn], rows: Iterable[tuple[Any, ...]], width: int, style: str = "bold", compact: bool = False
) -> Table:
    """A table that fits `width`: no column is squeezed below its header or its longest whole value; columns are
    left out, least needed first, until it fits, and the caption names them. `compact` cuts long text with an
    ellipsis instead of wrapping it, so each row is one line. Past `ROWS` rows (taken lazily from `rows`), the
    rest are summed in one row."""

    rows, past = _budgeted(rows, columns)

    def cells(i: int) -> list[str]:
        return [r[i].plain for r in rows]

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
            justify=c.justify,
            no_wrap=not c.wrap,
            overflow="ellipsis" if compact or not c.wrap else "fold",
            min_width=least(i, whole_words) if c.wrap else None,
            max_width=c.max_width,
        )
    for row in rows:
        table.add_row(*(_one_line(row[i]) if compact and columns[i].wrap else row[i] for i in shown))
    left_out = [c.name for i, c in enumerate(columns) if i not in shown]
    captions = [f"{past} rows past the first {ROWS} are summed in the last row"] if past else []
    if left_out:
        captions.append(f"left out at this width: {', '.join(left_out)}")
    if captions:
        table.caption = "; ".join(captions)
        table.caption_justify = "left"
    return table


def _budgeted(rows: Iterable[tuple[Any, ...]], columns: list[TableColumn]) -> tuple[list[tuple[Text, ...]], int]:
    """The first `ROWS` rows as `Text` cells, then one row summing the rest's `summed` columns; and how many
    rows that last one sums. The rest are counted as they come, never kept."""
    kept: list[tuple[Text, ...]] = []
    sums = [0] * len(columns)
    past = 0
    for row in rows:
        if len(kept) < ROWS:
            kept.append(tuple(_text(cell) for cell in row))
            continue
        past += 1
        for i, c in enumerate(columns):
            if c.summed:
                cell = row[i]
                text = cell.plain if isinstance(cell, Text) else cell
                sums[i] += int(text) if text.isdigit() else 0
    if past:
        label = Text(f"{past} more", style="dim")
        kept.append(tuple(label if i == 0 else Text(str(sums[i]) if c.summed else "", style="dim") for i, c in enumerate(columns)))
    return kept, past


NAMES = 10
"""Names a cell lists (a connection can name a new client id in every request); the rest are counted."""


def names(values: Iterable[str]) -> str:
    """The first `NAMES` of `values`, then how many more."""
    listed: list[str] = []
    more = 0
    for value in values:
        if len(listed) < NAMES:
            listed.append(value)
        else:
            more += 1
    return ", ".join(listed) + (f" +{more} more" if more else "")


def _text(cell: str | Text) -> Text:
    """A table cell as rich `Text`: a string (names from the wire among them) is data, escaped, never markup."""
    return cell if isinstance(cell, Text) else Text(printable(cell))


def _one_line(cell: Text) -> Text:
    """A cell of a wrapping column kept to one line, cut with an ellipsis."""
    text = cell.copy()
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def clock(ts_ns: int, digits: int = 6) -> str:
    """The time of day in UTC, with `digits` decimals (6: microseconds, 3: milliseconds)."""
    return _utc(ts_ns, "%H:%M:%S.")[: 9 + digits]


def stamp(ts_ns: int | None) -> str:
    if ts_ns is None:
        return "-"
    return _utc(ts_ns, "%Y-%m-%d %H:%M:%S.")


_last_second: dict[str, tuple[int, str]] = {}
"""Per layout, the last second formatted and its text: a capture's rows come second after second."""


def _utc(ts_ns: int, layout: str) -> str:
    """A capture time with microseconds; pcapng can state times no calendar holds, which say so instead."""
    seconds, ns = divmod(ts_ns, 1_000_000_000)
    last = _last_second.get(layout)
    if last is None or last[0] != seconds:
        try:
            last = _last_second[layout] = (seconds, datetime.fromtimestamp(seconds, timezone.utc).strftime(layout))
        except (OverflowError, ValueError, OSError):
            return "out of range"
    return last[1] + f"{ns // 1000:06d}"


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


def size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
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


def tls_hidden(tls: TlsInfo, end: ConnectionEnd) -> str:
    """What a TLS connection kept to itself, named for what it is; empty when it hid nothing."""
    totals = end.tls
    if totals is None or not (totals.exchanges_hidden or totals.decrypted[0] < totals.records[0]):
        return ""
    what = ", ".join(
        x for x in (tls.cipher_suite, f"SNI {tls.sni}" if tls.sni else "", "ALPN " + "/".join(tls.alpn) if tls.alpn else "") if x
    )
    return f"{what or 'TLS'}: {totals.exchanges_hidden} exchanges hidden" + why_hidden(tls.secret, tls.version)


def why_hidden(secret: str | None, version: str | None) -> str:
    """Why a TLS connection's exchanges stayed hidden (by the secret that opened it, if any, and its version),
    as a user can act on it."""
    if secret:
        return ""
    return ": give --tls-keylog" if version else ": its handshake is not in the capture"


def status_values(exchange: Exchange) -> tuple[list[int], str, int | None, list[str]]:
    """What the status column says of an exchange: its error codes, status, assumed version, diagnostics."""
    body = next((m.body for m in (exchange.request, exchange.response) if m and isinstance(m.body, Body) and m.body.assumed), None)
    return (
        [code for _, code, _ in exchange_errors(exchange)],
        exchange.status,
        None if body is None else body.version,
        [d.code for d in exchange.diagnostics if d.severity != "note"],
    )


def status_parts(errors: list[int], status: str, assumed: int | None, diagnostics: list[str]) -> list[tuple[str, str]]:
    """The status column as (text, style) pieces: error names, else the status; an assumed version; the first
    diagnostic. The browser's index keeps these values of an exchange, so both show the same words."""
    if errors:
        names = list(dict.fromkeys(error_name(code) for code in errors))
        parts = [(", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else ""), "bold red")]
    elif status == "ok":
        parts = [("ok", "green")]
    else:
        parts = [(status, "yellow")]
    if assumed is not None:
        parts.append((f"  assumed v{assumed}", "magenta"))
    if diagnostics:
        parts.append((f"  ⚠ {diagnostics[0]}" + (f" +{len(diagnostics) - 1}" if len(diagnostics) > 1 else ""), "magenta"))
    return parts


def status_cell(errors: list[int], status: str, assumed: int | None, diagnostics: list[str]) -> Text:
    (first, style), *rest = status_parts(errors, status, assumed, diagnostics)
    text = Text(first, style=style)
    for part, style in rest:
        text.append(part, style=style)
    return text


def status_text(exchange: Exchange) -> Text:
    return status_cell(*status_values(exchange))


def completed(exchange: Exchange) -> int:
    """When the exchange completed: its response; its request when it has none (printed when kdissect gives up)."""
    message = exchange.response or exchange.request
    assert message is not None
    return message.ts


def header_row(columns: tuple[Column, ...]) -> Text:
    return Text(" ".join(_cell(c.title, c) for c in columns) + " status", style="bold")


class Listed(Labelled, Protocol):
    """What an exchange's line reads up to its status: an `Exchange`, or the browser's index row."""

    @property
    def id(self) -> int: ...
    @property
    def connection(self) -> ConnectionInfo: ...
    @property
    def correlation_id(self) -> int | None: ...
    @property
    def client_id(self) -> str | None: ...
    @property
    def latency(self) -> int | None: ...


def row_cells(exchange: Listed, columns: tuple[Column, ...], when: int | None = None) -> str:
    """An exchange's row up to its status; `when` the completion time, where the exchange has no messages."""
    latency = exchange.latency
    cells = {
        "id": str(exchange.id),
        "conn": str(exchange.connection.id),
        "api": printable(api_label(exchange)),
        "corr": "" if exchange.correlation_id is None else str(exchange.correlation_id),
        "client": printable(exchange.client_id or ""),
        "latency": duration(latency) if latency is not None else "",
    }
    # the time's precision follows its column: microseconds in 15 characters, milliseconds in 12
    if when is None:
        assert isinstance(exchange, Exchange)  # an index row hands its completion time
        when = completed(exchange)
    texts = [_cell(clock(when, c.width - 9) if c.key == "time" else cells[c.key], c) for c in columns]
    return " ".join(texts) + " "


def exchange_row(exchange: Listed, columns: tuple[Column, ...], status: Text | None = None, when: int | None = None) -> Text:
    """A row of the exchange list. The browser's index rows have the exchange's header values but not its
    messages: they give the status cell and the completion time themselves."""
    row = Text(row_cells(exchange, columns, when))
    if status is None:
        assert isinstance(exchange, Exchange)  # an index row hands its status cell
        status = status_text(exchange)
    row.append_text(status)
    return row


BATCH = 256
"""Rows written to a file in one write."""
STATUSES = 4096
"""Distinct status cells kept made (a bound: a hostile capture can make each exchange's different)."""


class HasFlows(Protocol):
    """What the flows table reads: a `Summary`, or the live screen's window on its latest flows."""

    @property
    def flows(self) -> Mapping[int, Flow]: ...


class ReadView:
    """Prints one capture: a title, exchange rows as they come, and the closing panels."""

    def __init__(self, console: Console, rows: bool = True, detail: Any = None, flush_each: bool = False, header: bool = True) -> None:
        self.console = console
        self._flush_each = flush_each
        """Each row flushed as it is written (live sessions; rich flushes every print)."""
        self._direct = not (console.is_terminal or console.record or console.no_color or console.is_jupyter)
        """Rows written straight to a file, styles as rich spells them, without rich's per-row rendering (on a
        terminal rich crops rows to its width; a recording console, NO_COLOR and Jupyter keep rich's path)."""
        self._codes: dict[str, tuple[str, str]] = {}
        self._statuses: dict[tuple[Any, ...], str] = {}
        self._pending: list[str] = []
        """Direct rows not yet written: they go out in one write per `BATCH` rows, or before anything else is printed."""
        self.rows = rows
        """False for the summary only (-q)."""
        self.detail = detail
        """A `DetailView` to print each exchange as a tree instead of a row (-V)."""
        self.columns = row_columns(console.width)
        self._header_printed = not header
        """False: the rows' header line is printed before the first row (a `read --jobs` worker's rows have none)."""

    def title(self, name: str, fmt: str, compression: str | None) -> None:
        self.console.print(
            Text(printable(name), style="bold") + Text(f"  {fmt}" + (f" ({compression})" if compression else ""), style="dim")
        )

    def exchange(self, exchange: Exchange) -> None:
        console = self.console
        if not self.rows:
            return
        if self.detail is not None:
            console.print(self.detail.render(exchange), soft_wrap=not console.is_terminal)
            return
        self._header()
        if self._direct:
            pending = self._pending
            pending.append(row_cells(exchange, self.columns) + self._status(exchange) + "\n")
            if self._flush_each or len(pending) >= BATCH:
                self.flush()
            return
        console.print(exchange_row(exchange, self.columns), highlight=False, **self.fit)

    def _status(self, exchange: Exchange) -> str:
        """The status cell as rich writes it, made once for each distinct status."""
        errors, status, assumed, diagnostics = status_values(exchange)
        key = (tuple(errors), status, assumed, tuple(diagnostics))
        text = self._statuses.get(key)
        if text is None:
            if len(self._statuses) >= STATUSES:
                self._statuses.clear()
            parts = status_parts(errors, status, assumed, diagnostics)
            text = self._statuses[key] = "".join(self._styled(t, s) for t, s in parts)
        return text

    def _header(self) -> None:
        if not self._header_printed:
            self.console.print(header_row(self.columns), **self.fit)
            self._header_printed = True

    def raw(self, text: str) -> None:
        """What a worker's view of the same console wrote for one exchange (`read --jobs`), in its place."""
        if self.rows:
            if self.detail is None:
                self._header()
            pending = self._pending
            pending.append(text)
            if self._flush_each or self.detail is not None or len(pending) >= BATCH:
                self.flush()

    def _styled(self, text: str, style: str) -> str:
        codes = self._codes.get(style)
        if codes is None:
            system = COLOR_SYSTEMS.get(self.console.color_system or "")
            before, _, after = Style.parse(style).render("x", color_system=system).partition("x")
            codes = self._codes[style] = (before, after)
        return f"{codes[0]}{text}{codes[1]}"

    def flush(self) -> None:
        """Write the rows gathered so far."""
        console, pending = self.console, self._pending
        if not pending:
            return
        self._pending = []
        if console.quiet:
            return
        try:
            console.file.write("".join(pending))
            if self._flush_each:
                console.file.flush()
        except BrokenPipeError:
            console.on_broken_pipe()

    @property
    def fit(self) -> dict[str, Any]:
        """On a terminal a row is cut at its width with an ellipsis, never wrapped; in a file it is kept whole."""
        if self.console.is_terminal:
            return {"no_wrap": True, "overflow": "ellipsis", "crop": True}
        return {"soft_wrap": True}

    def closing(self, summary: Summary, counters: Counters, linktypes: list[int], notes: list[Diagnostic]) -> None:
        self.flush()
        console = self.console
        console.print()
        console.print(self._totals(summary, counters, linktypes))
        if summary.flows:
            console.print(self._flows(summary, console.width))
        if summary.errors:
            console.print(self._errors(summary, console.width))
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
        tls = [flow.end for flow in summary.flows.values() if flow.end and flow.end.tls]
        hidden = [end.connection.tls for end in tls if end.tls and end.tls.exchanges_hidden]
        keys = any(info and not info.secret and info.version for info in hidden)
        table.add_row(
            "connections",
            f"{counters.kafka_connections} Kafka"
            + (
                f" ({len(tls)} over TLS"
                + (f", {len(hidden)} with exchanges hidden" if hidden else "")
                + (": give --tls-keylog)" if keys else ")")
                if tls
                else ""
            )
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
    def _flows(summary: HasFlows, width: int, compact: bool = False) -> Table:
        """The flows table fitted to `width`; `compact` keeps each flow on one line (the live screen)."""
        columns = [
            TableColumn("#", "right", keep=0),
            TableColumn("client → broker", keep=0),
            TableColumn("client ids", wrap=True, keep=1),
            TableColumn("exch", "right", keep=0, summed=True),
            TableColumn("bytes →", "right", keep=6),
            TableColumn("bytes ←", "right", keep=6),
            TableColumn("APIs", wrap=True, keep=5, max_width=44),
            TableColumn("errors", "right", keep=2, summed=True),
            TableColumn("unans.", "right", keep=4, summed=True),
            TableColumn("p50", "right", keep=7),
            TableColumn("p99", "right", keep=3),
            TableColumn("diag", "right", keep=7, summed=True),
        ]

        def rows() -> Iterator[tuple[Any, ...]]:  # made as the table takes them: past its budget only summed
            for flow in sorted(summary.flows.values(), key=lambda f: f.info.id):
                if flow.hidden and not flow.exchanges:
                    continue  # every exchange of it was filtered out
                end = flow.end
                tls = end.connection.tls if end else flow.info.tls
                apis = [f"{api}×{n}" for api, n in flow.apis.most_common()] + ([tls_hidden(tls, end)] if tls and end else [])
                yield (
                    str(flow.info.id),
                    f"{flow.info.client} → {flow.info.broker}"
                    + (" (mid-stream)" if end and end.mid_stream else "")
                    + (f" {tls.version or 'TLS'}" if tls else ""),
                    names(flow.client_ids) or "-",
                    str(flow.exchanges),
                    size(end.bytes[0]) if end else "-",
                    size(end.bytes[1]) if end else "-",
                    ", ".join(apis).strip(", "),
                    Text(str(flow.errors), style="red" if flow.errors else ""),
                    Text(str(flow.unanswered), style="yellow" if flow.unanswered else ""),
                    duration(flow.latencies.percentile(50)),
                    duration(flow.latencies.percentile(99)),
                    Text(str(flow.diagnostics), style="magenta" if flow.diagnostics else ""),
                )

        return fitted_table("Flows", columns, rows(), width, compact=compact)

    @staticmethod
    def _errors(summary: Summary, width: int) -> Table:
        """Each error code: how often, in which APIs, about which topics, and the first exchanges; the name whole."""
        columns = [
            TableColumn("error"),
            TableColumn("count", "right"),
            TableColumn("where", wrap=True, keep=3),
            TableColumn("topics", wrap=True, keep=2),
            TableColumn("exchanges", wrap=True, keep=1),
        ]
        rows = []
        for code, tally in sorted(summary.errors.items(), key=lambda item: -item[1].count):
            topics = [topic for topic, _ in tally.topics.most_common(3)]
            rows.append(
                (
                    Text(summary.error_label(code), style="red"),
                    str(tally.count),
                    Text(printable(", ".join(f"{api}×{n}" for api, n in tally.apis.most_common(3)))),
                    Text(printable(", ".join(topics) + (" …" if len(tally.topics) > len(topics) else "")) or "-"),
                    ", ".join(map(str, tally.exchanges)) + (" …" if tally.count > len(tally.exchanges) else ""),
                )
            )
        return fitted_table("Errors", columns, rows, width, style="bold red")

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
            table.add_row(note.code, "", Text(printable(note.message + (f" (file offset {note.offset})" if note.offset else ""))))
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
    "tls.no-keys": "TLS connections whose secrets are not in the key log: their exchanges stay hidden (--tls-keylog)",
    "tls.no-handshake": "TLS connections captured after their handshake: no client random, so no key applies",
    "tls.no-server-hello": "TLS connections whose ServerHello is missing: no cipher suite, so nothing decrypts",
    "tls.unsupported-cipher": "TLS connections with a cipher suite kdissect does not decrypt (only AEAD suites)",
    "tls.wrong-key": "TLS connections whose key log secret does not open their records",
    "tls.bad-record": "TLS records that failed authentication (damaged in the capture)",
    "tls.gave-up": "TLS directions left encrypted after records in a row failed to open",
    "tls.record-lost": "TLS records missing from the capture (their plaintext is a gap for the Kafka framer)",
    "tls.skipped": "bytes skipped while searching for the next TLS record",
    "tls.bad-hello": "a ClientHello or ServerHello that cannot be read",
    "tls.alert": "TLS alerts other than close_notify (a peer aborting the session)",
}
