"""Hostile captures against the views' closing tables (issue 36): a capture can open a connection, name a client id
or a topic per packet, so each table shows a budget of rows and sums the rest in one row it says; a row's latencies
cost constant memory. The bounds are lowered here so that small captures reach them: the code past them is the same."""

from __future__ import annotations

import io
import struct

from rich.console import Console

from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.records.codecs import GZIP
from kdissect.schema import BUILTIN
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation
from kdissect.testing.record_encoder import compress, encode_message
from kdissect.views import json_lines, stats, summary, terminal
from kdissect.views.detail import DetailView
from kdissect.views.summary import Latencies, Summary, percentile
from kdissect.views.terminal import ReadView

API_VERSIONS = 18


def half_frames(n: int) -> list:
    """`n` connections that each send half an ApiVersions request and nothing more."""
    clock, frame, packets = Clock(), craft.request(API_VERSIONS, 3, 1, b"\x00", client_id="half"), []
    for i in range(n):
        conv = Conversation(client=f"10.0.{i // 250}.{i % 250 + 1}", client_port=1024 + i, clock=clock)
        packets += conv.handshake() + conv.send(CLIENT, frame[: len(frame) // 2])
    return packets


def answered(n: int) -> list:
    """One connection of `n` ApiVersions exchanges, each from a client id of its own."""
    conv = Conversation()
    packets = conv.handshake()
    for i in range(n):
        packets += conv.send(CLIENT, craft.request(API_VERSIONS, 0, i, b"", client_id=f"client-{i:03d}"))
        packets += conv.send(SERVER, craft.response(i, struct.pack(">hi", 0, 0)))
    return packets + conv.close()


def rendered(table) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_the_flows_table_shows_a_budget_of_rows_and_sums_the_rest(monkeypatch):
    monkeypatch.setattr(terminal, "ROWS", 5)
    totals = Summary()
    for event in make_dissector(Options()).run(half_frames(12)):
        totals.add(event)
    assert len(totals.flows) == 12
    text = rendered(ReadView._flows(totals, 200))
    rows = [line for line in text.splitlines() if "10.0.0." in line]
    assert len(rows) == 5  # the first five connections, then one row for the other seven
    last = next(line for line in text.splitlines() if "7 more" in line)
    assert last.split("│")[4].strip() == "7" and last.split("│")[12].strip() == "14"  # exchanges and diagnostics summed
    assert "7 rows past the first 5 are summed in the last row" in text


def test_the_sum_row_adds_up_the_counts_it_stands_for(monkeypatch):
    monkeypatch.setattr(terminal, "ROWS", 2)
    columns = [terminal.TableColumn("name"), terminal.TableColumn("n", "right", summed=True), terminal.TableColumn("size", "right")]
    rows = ((f"row{i}", str(i), "1.0 kB") for i in range(10))
    text = rendered(terminal.fitted_table("T", columns, rows, 80))
    assert "row0" in text and "row1" in text and "row2" not in text
    last = next(line for line in text.splitlines() if "8 more" in line)
    assert str(sum(range(2, 10))) in last and "kB" not in last


def test_stats_tables_keep_the_budget(monkeypatch):
    monkeypatch.setattr(terminal, "ROWS", 3)
    totals = stats.Stats()
    for event in make_dissector(Options()).run(answered(8)):
        if hasattr(event, "request_header"):
            totals.add(event)
    console = Console(file=io.StringIO(), width=160, color_system=None)
    stats.print_stats(totals, console)
    text = console.file.getvalue()
    assert "client-002" in text and "client-003" not in text
    assert "5 more" in text


def test_a_rows_latencies_fold_into_a_histogram_past_their_exact_bound(monkeypatch):
    monkeypatch.setattr(Latencies, "EXACT", 100)
    values = [1_000 * (i % 997 + 1) for i in range(5_000)]
    kept = Latencies()
    for v in values:
        kept.append(v)
    assert kept.histogram is not None and kept.exact == []  # constant memory past the bound
    ordered = sorted(values)
    for q in (50, 95, 99):
        exact = percentile(ordered, q)
        assert exact <= kept.percentile(q) <= exact * 1.09  # the histogram's precision: within 9 %
    assert kept.largest == max(values)
    few = Latencies()
    for v in values[:50]:
        few.append(v)
    assert few.percentile(50) == percentile(sorted(values[:50]), 50)  # exact below the bound
    assert summary.Flow.__dataclass_fields__["latencies"].default_factory is Latencies


def test_a_flows_client_ids_cell_lists_a_few_and_counts_the_rest(monkeypatch):
    monkeypatch.setattr(terminal, "NAMES", 3)
    totals = Summary()
    for event in make_dissector(Options()).run(answered(8)):
        totals.add(event)
    text = rendered(ReadView._flows(totals, 200))
    assert "client-002" in text and "client-003" not in text and "+5 more" in text


def nested_gzip(leaves: int, size: int, zeros: bool = False) -> Exchange:
    """A Produce v3 exchange whose one partition holds a gzip wrapper of a gzip wrapper of `leaves` messages of
    `size` bytes each (values of random bytes, or `zeros`; JSON spells both in base64)."""
    import random

    rng = random.Random(36)
    leaf = b"".join(encode_message(0, magic=1, value=bytes(size) if zeros else rng.randbytes(size)) for _ in range(leaves))
    inner = encode_message(0, magic=1, value=compress(GZIP, leaf), attributes=GZIP)
    outer = encode_message(0, magic=1, value=compress(GZIP, inner), attributes=GZIP)
    partition = struct.pack(">ii", 0, len(outer)) + outer
    body = struct.pack(">hhii", -1, 1, 1000, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", 1) + partition
    conv = Conversation()
    packets = conv.handshake() + conv.send(CLIENT, craft.request(0, 3, 1, body), 60000)
    packets += conv.send(SERVER, craft.response(1, b"\0\0\0\0\0\0\0\0"), 60000) + conv.close()
    [exchange] = [e for e in make_dissector(Options()).run(packets) if isinstance(e, Exchange)]
    return exchange


def test_json_pieces_are_bounded_by_bytes_inside_nested_wrappers(monkeypatch):
    """A wrapper of few but large messages is walked into and cut by bytes, not made JSON at once; the pieces
    joined are the line `encode` makes."""
    monkeypatch.setattr(json_lines, "STREAM_BYTES", 1)  # every exchange streamed
    monkeypatch.setattr(json_lines, "PIECE_BYTES", 16 << 10)
    monkeypatch.setattr(json_lines, "FLUSH", 1)
    exchange = nested_gzip(leaves=40, size=8 << 10)
    pieces = list(json_lines.exchange_pieces(exchange))
    assert b"".join(pieces) == json_lines.encode(json_lines.exchange_tree(exchange))
    assert max(map(len, pieces)) < 40 << 10  # two 8 KiB values in base64 and their fields; whole: 40 of them


def test_a_small_frame_that_decompresses_large_is_streamed(monkeypatch):
    """A frame far under `STREAM_BYTES` whose wrappers decompress past it (zeros: 320 KiB in a frame of a few
    hundred bytes) is written in pieces too, not made JSON whole."""
    monkeypatch.setattr(json_lines, "STREAM_BYTES", 64 << 10)
    monkeypatch.setattr(json_lines, "PIECE_BYTES", 16 << 10)
    monkeypatch.setattr(json_lines, "FLUSH", 1)
    exchange = nested_gzip(leaves=40, size=8 << 10, zeros=True)
    assert exchange.request.frame.size < 4 << 10
    pieces = list(json_lines.exchange_pieces(exchange))
    assert b"".join(pieces) == json_lines.encode(json_lines.exchange_tree(exchange))
    assert max(map(len, pieces)) < 40 << 10


def test_a_messages_tree_shows_a_budget_of_entries_and_counts_the_rest(monkeypatch):
    """`read -V` draws at most `DetailView.ENTRIES` batches, records and messages of a message; the line after
    them counts the rest (here the wrapper, its inner wrapper and 40 messages: 42 entries, 10 drawn)."""

    monkeypatch.setattr(DetailView, "ENTRIES", 10)
    exchange = nested_gzip(leaves=40, size=100)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(DetailView(BUILTIN, hexdump=False).render(exchange))
    text = console.file.getvalue()
    assert text.count("value ") == 8
    assert "… 32 more batches, records and messages: a tree shows 10 a message" in text
