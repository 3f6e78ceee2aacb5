"""Hostile captures against the views' closing tables (issue 36): a capture can open a connection, name a client id
or a topic per packet, so each table shows a budget of rows and sums the rest in one row it says; a row's latencies
cost constant memory. The bounds are lowered here so that small captures reach them: the code past them is the same."""

from __future__ import annotations

import io
import struct

from rich.console import Console

from kdissect.dissector import Options, make_dissector
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation
from kdissect.views import stats, summary, terminal
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
