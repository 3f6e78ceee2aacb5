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

from kdissect.capture import open_capture
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.filter import compile_filter, shorthands
from kdissect.views.detail import DetailView
from kdissect.views.sink import EventSink
from kdissect.views.stats import Stats, print_stats
from kdissect.views.terminal import ReadView

SNAPSHOTS = ROOT / "tests" / "snapshots"


def console() -> Console:
    return Console(record=True, width=160, color_system=None, file=open("/dev/null", "w"), soft_wrap=True)


def read_view(capture: str, expression: str | None = None, *, stream: io.StringIO | None = None, **fixed) -> str:
    """The read view's text, from rich's record (or, given `stream`, as written to that file: rows bypass rich)."""
    out = console() if stream is None else Console(width=160, color_system=None, file=stream, soft_wrap=True)
    wanted = compile_filter([*shorthands(**fixed), *([("-Y", expression)] if expression else [])])
    with open_capture(ROOT / capture) as source:
        dissector = make_dissector(Options(keep=wanted.keep))
        view = ReadView(out)
        view.title(capture, source.format, source.compression)
        sink = EventSink(wanted, view=view)
        for event in dissector.run(source.packets()):
            sink.add(event)
        view.closing(sink.summary, dissector.counters, source.linktypes(), source.diagnostics())
    return out.export_text() if stream is None else stream.getvalue()


def show_view(capture: str, exchange: int, hexdump: bool) -> str:
    out = console()
    with open_capture(ROOT / capture) as source:
        for event in make_dissector(Options(spans=hexdump)).run(source.packets()):
            if isinstance(event, Exchange) and event.id == exchange:
                out.print(DetailView(hexdump).render(event))
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


@pytest.mark.parametrize("capture", sorted(glob.glob(str(ROOT / "captures" / "*.pcap"))), ids=lambda p: Path(p).name)
def test_rows_written_to_a_file_are_the_text_rich_writes(capture):
    """On a file (no terminal, no colours) rows go straight to it: the same text as through rich."""
    assert read_view(capture, stream=io.StringIO()) == read_view(capture)


@pytest.mark.parametrize("client_id", ["a\tb\x07c\rd", "bell\x07\x0bend\x1b[31m"], ids=["tab", "control"])
def test_control_characters_and_tabs_in_a_row_are_what_rich_writes(client_id):
    exchange = next(e for e in _exchanges("captures/admin-kafka-python.pcap") if e.client_id)
    header = dataclasses.replace(exchange.request.header, client_id=client_id)
    odd = dataclasses.replace(exchange, request=dataclasses.replace(exchange.request, header=header))
    plain, recorded = io.StringIO(), console()
    for out in (Console(width=160, color_system=None, file=plain, soft_wrap=True), recorded):
        ReadView(out).exchange(odd)
    text = recorded.export_text()
    assert "\x07" not in text and ("\t" in client_id or "bell" in text)
    assert plain.getvalue() == text


def _exchanges(capture: str) -> list[Exchange]:
    with open_capture(ROOT / capture) as source:
        return [e for e in make_dissector(Options()).run(source.packets()) if isinstance(e, Exchange)]


if __name__ == "__main__":
    SNAPSHOTS.mkdir(exist_ok=True)
    for name, make in VIEWS.items():
        (SNAPSHOTS / f"{name}.txt").write_text(make())
