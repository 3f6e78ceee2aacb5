"""The rich terminal view of `kdissect read`: exchanges as they complete, then flows, errors and notes.

Rows stream with fixed column widths instead of one big table, so a capture of any size starts printing at
once and memory does not grow with it. Colours and control codes appear only on a terminal.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

from rich.console import COLOR_SYSTEMS, Console
from rich.control import strip_control_codes
from rich.style import Style
from rich.table import Table
from rich.text import Text

from kdissect.capture.linktypes import name as linktype_name
from kdissect.decode.body import Body
from kdissect.diagnostic import Diagnostic
from kdissect.events import Exchange
from kdissect.kafka.shared import Counters
from kdissect.schema import error_name
from kdissect.views.summary import Summary, api_label, exchange_errors, percentile

COLUMNS = (
    ("#", 6, "right"),
    ("time (UTC)", 15, "left"),
    ("conn", 4, "right"),
    ("API", 24, "left"),
    ("corr", 10, "right"),
    ("client id", 22, "left"),
    ("latency", 10, "right"),
    ("status", 0, "left"),
)


def clock(ts_ns: int) -> str:
    return _utc(ts_ns, "%H:%M:%S.")


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
    if ns is None:
        return "-"
    if ns < 1_000_000:
        return f"{ns / 1000:.0f} µs"
    if ns < 10_000_000_000:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.1f} s"


def size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def _cell(text: str, width: int, align: str) -> str:
    if width == 0:
        return text
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.rjust(width) if align == "right" else text.ljust(width)


def status_parts(exchange: Exchange) -> list[tuple[str, str]]:
    """The status column as (text, style) pieces: errors, or ok, or the status; an assumed version; diagnostics."""
    errors = exchange_errors(exchange)
    if errors:
        names = list(dict.fromkeys(error_name(code) for _, code, _ in errors))
        parts = [(", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else ""), "bold red")]
    elif exchange.status == "ok":
        parts = [("ok", "green")]
    else:
        parts = [(exchange.status, "yellow")]
    body = next((m.body for m in (exchange.request, exchange.response) if m and isinstance(m.body, Body) and m.body.assumed), None)
    if body is not None:
        parts.append((f"  assumed v{body.version}", "magenta"))
    diagnostics = [d for d in exchange.diagnostics if d.severity != "note"]
    if diagnostics:
        parts.append((f"  ⚠ {diagnostics[0].code}" + (f" +{len(diagnostics) - 1}" if len(diagnostics) > 1 else ""), "magenta"))
    return parts


def status_text(exchange: Exchange) -> Text:
    (first, style), *rest = status_parts(exchange)
    text = Text(first, style=style)
    for part, style in rest:
        text.append(part, style=style)
    return text


def row_cells(exchange: Exchange) -> str:
    """The fixed-width columns of an exchange's row, up to its status."""
    latency = exchange.latency
    cells = (
        str(exchange.id),
        clock(exchange.ts),
        str(exchange.connection.id),
        api_label(exchange),
        "" if exchange.correlation_id is None else str(exchange.correlation_id),
        exchange.client_id or "",
        duration(latency) if latency is not None else "",
    )
    return " ".join(_cell(c, w, a) for c, (_, w, a) in zip(cells, COLUMNS)) + " "


def exchange_row(exchange: Exchange) -> Text:
    row = Text(row_cells(exchange))
    row.append_text(status_text(exchange))
    return row


class ReadView:
    """Prints one capture: a title, exchange rows as they come, and the closing panels."""

    def __init__(self, console: Console, flush_each: bool = False) -> None:
        self.console = console
        self._flush_each = flush_each
        self._header_printed = False
        self._direct = not (console.record or console.no_color or console.is_jupyter)
        """Rows written straight to the file, styles as rich spells them, without rich's per-row rendering (a
        recording console, NO_COLOR and Jupyter keep rich's own path)."""
        self._codes: dict[str, tuple[str, str]] = {}

    def _styled(self, text: str, style: str) -> str:
        codes = self._codes.get(style)
        if codes is None:
            system = COLOR_SYSTEMS.get(self.console.color_system or "")
            before, _, after = Style.parse(style).render("x", color_system=system).partition("x")
            codes = self._codes[style] = (before, after)
        return f"{codes[0]}{text}{codes[1]}"

    def title(self, name: str, fmt: str, compression: str | None) -> None:
        self.console.print(Text(f"{name}", style="bold") + Text(f"  {fmt}" + (f" ({compression})" if compression else ""), style="dim"))

    def exchange(self, exchange: Exchange) -> None:
        if not self._header_printed:
            header = " ".join(_cell(t, w, a) for t, w, a in COLUMNS)
            self.console.print(Text(header, style="bold"))
            self._header_printed = True
        if self._direct:
            cells = strip_control_codes(row_cells(exchange))
            if "\t" not in cells:  # rich expands tabs by cell width
                self._write(cells + "".join(self._styled(strip_control_codes(t), s) for t, s in status_parts(exchange)) + "\n")
                return
        self.console.print(exchange_row(exchange), soft_wrap=True, highlight=False)

    def _write(self, line: str) -> None:
        console = self.console
        if console.quiet:
            return
        try:
            console.file.write(line)
            if self._flush_each:
                console.file.flush()
        except BrokenPipeError:
            console.on_broken_pipe()

    def closing(self, summary: Summary, counters: Counters, linktypes: list[int], notes: list[Diagnostic]) -> None:
        console = self.console
        console.print()
        console.print(self._totals(summary, counters, linktypes))
        if summary.flows:
            console.print(self._flows(summary))
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
            span = f"{stamp(counters.first_ts)} → {stamp(counters.last_ts)} UTC ({duration(counters.last_ts - counters.first_ts)})"
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
    def _flows(summary: Summary) -> Table:
        table = Table(title="Flows", title_justify="left", title_style="bold", header_style="bold")
        for name, justify, limit in (
            ("#", "right", None),
            ("client → broker", "left", None),
            ("client ids", "left", 24),
            ("exch", "right", None),
            ("bytes →", "right", None),
            ("bytes ←", "right", None),
            ("APIs", "left", 44),
            ("errors", "right", None),
            ("unans.", "right", None),
            ("p50", "right", None),
            ("p99", "right", None),
            ("diag", "right", None),
        ):
            table.add_column(name, justify=justify, no_wrap=limit is None, max_width=limit, min_width=len(name))  # type: ignore[arg-type]
        for flow in sorted(summary.flows.values(), key=lambda f: f.info.id):
            if flow.hidden and not flow.exchanges:
                continue  # every exchange of it was filtered out
            latencies = sorted(flow.latencies)
            end = flow.end
            table.add_row(
                str(flow.info.id),
                f"{flow.info.client} → {flow.info.broker.port}" + (" (mid-stream)" if end and end.mid_stream else ""),
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
        return table

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
    "frame.skipped": "bytes skipped while searching for the next frame after a gap or a mid-stream start",
    "frame.bad-size": "a size prefix out of range",
    "frame.incomplete": "a frame with bytes missing from the capture",
    "header.unreadable": "a request or response header that cannot be read",
    "body.malformed": "a body that could not be decoded to its end",
    "body.trailing-bytes": "bytes after the end of a body",
    "body.assumed-version": "a version newer (or older) than kdissect knows, decoded as the nearest known",
    "body.unknown-api": "an API key kdissect does not know; the body is kept raw",
    "decode.internal-error": "kdissect failed on a body: please report it",
}
