"""Snapshots of every terminal view on real captures, recorded with rich's recording console.

A view that changes on purpose is re-recorded with `python tests/test_views.py`; the diff then shows the change.
"""

from __future__ import annotations

import dataclasses
import glob
import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from outputs import ViewOutput

from kdissect.capture import open_capture
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.filter import compile_filter
from kdissect.filter.shorthands import shorthands
from kdissect.schema import BUILTIN
from kdissect.views.detail import DetailView
from kdissect.views.sink import EventSink
from kdissect.views.stats import Stats, print_stats
from kdissect.views.terminal import BATCH, ReadView

SNAPSHOTS = ROOT / "tests" / "snapshots"


def console() -> Console:
    return Console(record=True, width=160, color_system=None, file=open("/dev/null", "w"), soft_wrap=True)


def read_view(capture: str, expression: str | None = None, *, out: Console | None = None, **fixed) -> str:
    """The read view's text, from rich's record (or, given `out`, as written to its file)."""
    snapshot = out is None
    out = console() if snapshot else out
    wanted = compile_filter([*shorthands(BUILTIN, **fixed), *([("-Y", expression)] if expression else [])], BUILTIN)
    with open_capture(ROOT / capture) as source:
        dissector = make_dissector(Options(keep=wanted.keep))
        view = ReadView(out)
        view.title(capture, source.format, source.compression)
        sink = EventSink(wanted, ViewOutput(view))
        for event in dissector.run(source.packets()):
            sink.add(event)
        view.closing(sink.summary, dissector.counters, source.linktypes(), source.diagnostics())
    return out.export_text() if snapshot else out.file.getvalue()


def show_view(capture: str, exchange: int, hexdump: bool) -> str:
    out = console()
    with open_capture(ROOT / capture) as source:
        for event in make_dissector(Options(spans=hexdump)).run(source.packets()):
            if isinstance(event, Exchange) and event.id == exchange:
                out.print(DetailView(BUILTIN, hexdump).render(event))
    return out.export_text()


def stats_view(capture: str) -> str:
    out = console()
    stats = Stats()
    with open_capture(ROOT / capture) as source:
        for event in make_dissector(Options()).run(source.packets()):
            if isinstance(event, Exchange):
                stats.add(event)
    print_stats(stats, out)
    return out.export_text()


VIEWS = {
    "read-consumer-group": lambda: read_view("captures/consumer-group-confluent.pcap"),
    "read-admin-errors-only": lambda: read_view("captures/admin-kafka-python.pcap", errors=True),
    "read-heartbeats-filtered": lambda: read_view("captures/consumer-group-kafka-python.pcap", "api == Heartbeat"),
    "show-produce-batches": lambda: show_view("captures/produce-codecs-kafka-python.pcap", 15, hexdump=False),
    "show-join-group-hex": lambda: show_view("captures/consumer-group-kafka-python.pcap", 17, hexdump=True),
    "show-transaction-markers": lambda: show_view("captures/produce-transactions.pcap", 41, hexdump=False),
    "stats-consumer-group": lambda: stats_view("captures/consumer-group-kafka-python.pcap"),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_matches_its_snapshot(name):
    assert VIEWS[name]() == (SNAPSHOTS / f"{name}.txt").read_text()


def file_console(colours: str | None, record: bool) -> Console:
    """A console writing to a file (a StringIO), in `colours` if given; recording keeps rich's own path."""
    return Console(width=160, color_system=colours, force_terminal=False, file=io.StringIO(), soft_wrap=True, record=record)


COLOURS = [None, "standard", "256", "truecolor"]


@pytest.mark.parametrize("colours", COLOURS)
@pytest.mark.parametrize("capture", sorted(glob.glob(str(ROOT / "captures" / "*.pcap"))), ids=lambda p: Path(p).name)
def test_rows_written_straight_to_the_file_are_what_rich_writes(capture, colours):
    """Rows written to a file bypass rich's rendering: the same bytes as through rich, styles and all."""
    direct = read_view(capture, out=file_console(colours, record=False))
    assert direct == read_view(capture, out=file_console(colours, record=True))
    assert ("\x1b[" in direct) == (colours is not None)


@pytest.mark.parametrize("colours", [None, "truecolor"])
@pytest.mark.parametrize("client_id", ["a\tb\x07c\rd", "bell\x07\x0bend\x1b[31m"], ids=["tab", "control"])
def test_control_characters_and_tabs_in_a_row_are_what_rich_writes(client_id, colours):
    exchange = next(e for e in _exchanges("captures/admin-kafka-python.pcap") if e.client_id)
    header = dataclasses.replace(exchange.request.header, client_id=client_id)
    odd = dataclasses.replace(exchange, request=dataclasses.replace(exchange.request, header=header))
    direct, through_rich = file_console(colours, record=False), file_console(colours, record=True)
    for out in (direct, through_rich):
        view = ReadView(out)
        view.exchange(odd)
        view.flush()
    text = through_rich.file.getvalue()
    assert "\x07" not in text and ("\t" in client_id or "bell" in text)
    assert direct.file.getvalue() == text


@pytest.mark.parametrize("colours", [None, "truecolor"])
def test_rows_gathered_for_one_write_keep_their_order_and_a_tab_is_written_visibly(colours):
    """Direct rows go out in batches, in order; a client id's tab is a visible escape, not a jump to a tab stop."""
    exchanges = [e for e in _exchanges("captures/consumer-group-kafka-python.pcap")]
    tabbed = next(e for e in exchanges if e.client_id)
    header = dataclasses.replace(tabbed.request.header, client_id="a\tb")
    tabbed = dataclasses.replace(tabbed, request=dataclasses.replace(tabbed.request, header=header))
    stream = (exchanges * (2 * BATCH // len(exchanges) + 1))[: BATCH + 3] + [tabbed] + exchanges[:5]
    direct, through_rich = file_console(colours, record=False), file_console(colours, record=True)
    for out in (direct, through_rich):
        view = ReadView(out)
        for exchange in stream:
            view.exchange(exchange)
        view.flush()
    text = through_rich.file.getvalue()
    assert len(text.splitlines()) == 1 + len(stream) and " a\\x09b " in text.splitlines()[BATCH + 4]
    assert direct.file.getvalue() == text


def _exchanges(capture: str) -> list[Exchange]:
    with open_capture(ROOT / capture) as source:
        return [e for e in make_dissector(Options()).run(source.packets()) if isinstance(e, Exchange)]


if __name__ == "__main__":
    SNAPSHOTS.mkdir(exist_ok=True)
    for name, make in VIEWS.items():
        (SNAPSHOTS / f"{name}.txt").write_text(make())
