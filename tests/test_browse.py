"""`kdissect browse`, driven headless through Textual's pilot on the captures of real clients.

Assertions read the widgets (the list's lines, the tree's labels, the hex pane's highlighted bytes) and the
rendered screen as plain text at 80×24 and 200×50; what the browser shows is compared with what the printed
views and the filters say of the same capture.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
import zstandard

pytest.importorskip("textual")
from rich.console import Console
from rich.text import Text
from textual.app import App
from textual.widgets import Input, Static, Tree

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kdissect.browse import exchange_list
from kdissect.browse.app import BrowseApp
from kdissect.browse.dialogs import HelpScreen
from kdissect.browse.index import Index
from kdissect.browse.indexer import Indexer
from kdissect.browse.lines import Lines
from kdissect.browse.scan import events
from kdissect.capture.linktypes import LINKTYPE_ETHERNET
from kdissect.capture.writer import PcapWriter
from kdissect.dissector import Options
from kdissect.events import Exchange
from kdissect.filter import compile_filter
from kdissect.index import answer
from kdissect.index.browsed import Kept, kept
from kdissect.printable import printable
from kdissect.schema import BUILTIN
from kdissect.testing.craft import Clock, Conversation
from kdissect.testing.hostile_text import CALLS, HOSTILE, hostile_capture
from kdissect.views.detail import DetailView
from kdissect.views.summary import exchange_errors
from kdissect.views.terminal import clock, completed, row_cells, row_columns
from tests.test_live import needs_capture

CAPTURES = sorted((ROOT / "captures").glob("*.pcap"))
GROUP = ROOT / "captures" / "consumer-group-confluent.pcap"
PUBLIC = ROOT.parent / "shared" / "captures-public"


def exchanges(path: Path, expression: str | None = None, **options) -> list[Exchange]:
    wanted = compile_filter([("-Y", expression)] if expression else [], BUILTIN)
    return [e for e in events(path, Options(**options)) if isinstance(e, Exchange) and wanted.matches(e)]


def rendered(exchange: Exchange) -> str:
    out = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    out.print(DetailView(BUILTIN, True).render(exchange))
    return out.export_text()


def screen_text(app: BrowseApp) -> str:
    """The screen as plain text, made the way Textual makes its screenshots."""
    width, height = app.size
    out = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False, color_system=None)
    out.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return out.export_text()


def drive(path: Path, script, size=(160, 45), initial: str = "", values=None):
    """Run `script(app, pilot)` against the browser on `path` (record values read by `values`), headless; returns what
    the script returns."""

    async def run():
        app = BrowseApp(path, Options(), initial, values=values)
        async with app.run_test(size=size) as pilot:
            await settled(app, pilot)
            return await script(app, pilot)

    return asyncio.run(run())


async def settled(app: BrowseApp, pilot) -> None:
    """Until the index's pass and any filter's pass have ended and the app has taken in what they sent."""
    for _ in range(600):
        if not app.busy:
            break
        await pilot.pause(0.05)
    await pilot.pause()


def indexed(path: Path, options: Options | None = None) -> tuple[Indexer, Index]:
    """The index's pass run to its end on this thread, its batches taken into an index as the app takes them."""
    indexer, index, _ = passed(path, options or Options())
    return indexer, index


def passed(path: Path, options: Options, keeping=None) -> tuple[Indexer, Index, dict]:
    """`indexed`, with the other messages the pass sent, by type (the last of each)."""
    indexer, index, sent = Indexer(path, options, keeping=keeping), Index(BUILTIN.names), {}

    def post(message) -> None:
        if isinstance(message, Indexer.Indexed):
            index.extend(message.batch)
        else:
            sent[type(message)] = message

    indexer.run(threading.Event(), post)
    return indexer, index, sent


def listed(app: BrowseApp) -> list[int]:
    """The ids of the exchanges on the list, in its order."""
    exchanges = app.exchanges
    return [exchanges.position(i) + 1 for i in range(exchanges.count)]


def list_lines(app: BrowseApp) -> list[str]:
    lines = app.query_one("#list", Lines)
    return [lines.line(i).plain for i in range(lines.count)]


def tree_nodes(app: BrowseApp):
    found, stack = [], [app.query_one("#detail", Tree).root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(reversed(node.children))
    return found


async def open_exchange(app: BrowseApp, pilot, number: int) -> None:
    lines = app.query_one("#list", Lines)
    lines.cursor = next(i for i in range(lines.count) if app.exchanges.position(i) == number - 1)
    lines.focus()
    await pilot.press("enter")
    await shown(app, pilot, number)


async def shown(app: BrowseApp, pilot, number: int) -> None:
    """Until the detail pane shows exchange `number`."""
    for _ in range(200):
        if app.detail.exchange is not None and app.detail.exchange.id == number:
            break
        await pilot.pause(0.05)
    await pilot.pause()


# -- the index and bodies on demand -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", CAPTURES + sorted(PUBLIC.glob("*.pcap*")), ids=lambda p: p.name)
def test_a_body_read_again_from_the_file_is_the_one_the_whole_pass_decoded(path):
    """Exchanges of every capture (all of a small one; of a large one `SPREAD`, the first, the last and evenly
    between: the index's read-back, the same loop, meets every exchange of every plain pcap in test_index.py): decoded
    on demand from their packets (a checkpoint of file offsets, the connection picked up mid-stream, the session and
    topic names of the pass) they print as `show --hex` prints them."""
    keylog = path.with_suffix(".keylog")  # a TLS capture's key log: decrypted on demand from its handshake on
    options = Options(tls_keylog=keylog.read_bytes()) if keylog.exists() else Options()
    indexer, index = indexed(path, options)
    full = exchanges(path, spans=True, tls_keylog=options.tls_keylog)
    assert len(index) == len(full) and full
    chosen = sorted({round(k * (len(full) - 1) / (SPREAD - 1)) for k in range(SPREAD)}) if len(full) > SPREAD else range(len(full))
    for i in chosen:
        row = index.row(i)
        assert rendered(indexer.exchange(row)) == rendered(full[i]), (path.name, row.id)


SPREAD = 60
"""Exchanges of a large capture read again by test_a_body_read_again_from_the_file_is_the_one_the_whole_pass_decoded."""


# -- a capture browsed again opens from the pass an earlier browse kept ------------------------------------------


@pytest.mark.parametrize("path", CAPTURES + sorted(PUBLIC.glob("*.pcap*")), ids=lambda p: p.name)
def test_a_kept_pass_serves_the_next_browse_as_the_pass_itself_did(path, tmp_path, monkeypatch):
    """The pass kept (index/browsed.py) and served to a second browse: the same rows, interned values and
    connections, flows, lanes and findings; bodies opened from what it learnt print as the first pass's do; and
    filters answered from it (read back even where the candidates span most of the file) match what a pass over
    the file matches, a TLS connection among the candidates (never read back alone), a file with no
    checkpoints (a pcapng, a compressed capture) and one holding its own registry's records excepted."""
    keylog = path.with_suffix(".keylog")
    options = Options(tls_keylog=keylog.read_bytes()) if keylog.exists() else Options()
    monkeypatch.setenv("KDISSECT_CACHE", str(tmp_path / "cache"))  # read's index, made on the way, kept there
    keeping = Kept(str(tmp_path / "capture.kdb"), str(path), options)
    first, index, sent = passed(path, options, keeping)
    assert not first.loaded and keeping.load() is None
    keeping.save(index, first.offsets[-1], first.learnt())
    again, served, resent = passed(path, options, keeping)
    assert again.loaded and sent[Indexer.Done].failure is None and resent[Indexer.Done].failure is None
    assert [a.tobytes() for a in served.arrays()] == [a.tobytes() for a in index.arrays()] and len(served) > 0
    assert (served.clients, served.error_sets, served.diagnostic_sets, served.group_sets, served.connections) == (
        index.clients,
        index.error_sets,
        index.diagnostic_sets,
        index.group_sets,
        index.connections,
    )
    assert (resent[Indexer.Flows].rows, resent[Indexer.Flows].more) == (sent[Indexer.Flows].rows, sent[Indexer.Flows].more)
    assert resent[Indexer.Lanes].lanes == sent[Indexer.Lanes].lanes
    assert resent[Indexer.Findings].findings == sent[Indexer.Findings].findings
    for i in sorted({0, len(index) // 2, len(index) - 1}):
        assert rendered(again.exchange(served.row(i))) == rendered(first.exchange(index.row(i))), (path.name, i + 1)
    monkeypatch.setattr(answer, "SHARE", 0)
    full = [e for e in events(path, options) if isinstance(e, Exchange)]
    tls = any(e.connection.tls is not None for e in full)
    for expression in INDEX_FILTERS:
        wanted = compile_filter([("-Y", expression)], BUILTIN)
        answered = keeping.matches(served, again.learnt(), wanted, again.options, lambda: False)
        expected = [e.id - 1 for e in full if wanted.matches(e)]
        declines = tls or not keeping.plain or keeping.registry() or path.name in PICKED_UP_ONLY_WHOLE
        assert answered == expected or (answered is None and declines), (path.name, expression)


INDEX_FILTERS = (
    'client_id == ""',  # an empty client id is not a missing one (arkime__kafka.pcap sends one)
    "status == malformed",  # a frame cut short is malformed before any body is read
    "api == JoinGroup or api == SyncGroup",  # the session a SyncGroup's assignment is read with
    "connection >= 2 and latency_ms > 1",
    "api != Metadata and (queue_ms > 0 or queued_behind > 0)",  # what the index holds of waiting in line
)
"""Filters a browse answers from its complete index, by test_a_kept_pass_serves_the_next_browse_as_the_pass_itself_did."""
PICKED_UP_ONLY_WHOLE = {"hostile-strings-kafka-python.pcap"}
"""Read back alone, most of its connections' exchanges are not found as the whole pass had them (their client ids
are not text), so a filter that reads them back is answered by a pass over the file, as `read -Y`
answers from the file where its own index declines (test_index.py)."""


def test_a_second_browse_opens_from_the_kept_pass_and_says_so(tmp_path, monkeypatch):
    """Through the app as `kdissect browse` makes it: the first browse keeps its pass in the cache when the index is
    complete, the second opens from it (its status line says so) and shows the same list, findings and bodies;
    a changed capture, a damaged entry and --no-cache's None are indexed from the file. Once the index is
    complete, a filter typed is answered from it, without a pass over the file."""
    monkeypatch.setenv("KDISSECT_CACHE", str(tmp_path / "cache"))
    capture = tmp_path / "group.pcap"
    capture.write_bytes(GROUP.read_bytes())
    joins = [e.id for e in exchanges(GROUP, "api == JoinGroup")]
    monkeypatch.setattr(answer, "SHARE", 0)  # small as it is, the capture is all JoinGroups' waits
    passes = []
    file_pass = exchange_list.events
    monkeypatch.setattr(exchange_list, "events", lambda path, options: passes.append(options.keep) or file_pass(path, options))

    def browse(keeping, filtered=False):
        async def script(app, pilot):
            await open_exchange(app, pilot, 40)
            for _ in range(200):  # the keeping worker, started when the index completed
                if not app.workers or all(w.is_finished for w in app.workers):
                    break
                await pilot.pause(0.05)
            status = str(app.query_one("#status", Static).render())
            shown = app.indexer.loaded, list_lines(app), app.findings.findings, rendered(app.detail.exchange), status
            if not filtered:
                return shown
            await pilot.press("slash", *"api == JoinGroup")
            await settled(app, pilot)
            passes.clear()
            await pilot.press("backspace", "p", "enter")  # the same filter once more: its pass, or its answer
            await settled(app, pilot)
            assert listed(app) == joins and bool(passes) == (keeping is None)
            return shown

        async def run():
            app = BrowseApp(capture, Options(), keeping=keeping)
            async with app.run_test(size=(160, 45)) as pilot:
                await settled(app, pilot)
                return await script(app, pilot)

        return asyncio.run(run())

    loaded, lines, findings, body, status = browse(kept(capture, Options()), filtered=True)
    assert not loaded and "earlier browse" not in status and len(lines) == 96 and findings
    (entry,) = (tmp_path / "cache" / "index").glob("*.kdb")
    again = browse(kept(capture, Options()), filtered=True)
    assert again[0] and again[1:4] == (lines, findings, body) and "96 exchanges, indexed by an earlier browse" in again[4]
    whole = entry.read_bytes()
    assert zstandard.get_frame_parameters(whole).has_checksum  # a bit flipped where zstd would not notice is refused too
    for damaged in (whole[:-40], whole[:-100] + bytes([whole[-100] ^ 1]) + whole[-99:]):  # cut short, a bit flipped
        entry.write_bytes(damaged)  # refused, removed, and the file indexed again
        assert not browse(kept(capture, Options()))[0] and browse(kept(capture, Options()))[0]
    assert not browse(None, filtered=True)[0]  # --no-cache
    with capture.open("ab") as f:  # the capture changed: its place in the cache is another
        f.write(b"\0" * 16)
    assert not browse(kept(capture, Options()))[0]
    assert kept(capture, Options(tls_keylog=b"CLIENT_RANDOM 00 00\n")) is None  # secrets are not in the key
    monkeypatch.setenv("KDISSECT_CACHE", "")
    assert kept(capture, Options()) is None


def test_a_compressed_capture_is_read_again_from_its_start(tmp_path):
    """No offsets into a gzip stream: a body on demand comes from reading the packets before it again."""
    packed = tmp_path / "group.pcap.gz"
    packed.write_bytes(gzip.compress(GROUP.read_bytes()))
    indexer, index = indexed(packed)
    full = exchanges(GROUP, spans=True)
    assert len(index) == len(full)
    for i in (0, len(full) // 2, len(full) - 1):
        assert rendered(indexer.exchange(index.row(i))) == rendered(full[i])


def test_the_index_holds_what_the_list_needs():
    indexer, index = indexed(GROUP)
    for i, exchange in enumerate(exchanges(GROUP)):
        row = index.row(i)
        assert (row.id, row.ts, row.connection, row.api_key, row.api_version) == (
            exchange.id,
            exchange.ts,
            exchange.connection,
            exchange.api_key,
            exchange.api_version,
        )
        assert (row.correlation_id, row.client_id, row.latency, row.status) == (
            exchange.correlation_id,
            exchange.client_id or "",
            exchange.latency,
            exchange.status,
        )
        assert row.errors == tuple(code for _, code, _ in exchange_errors(exchange))
        assert row.groups == tuple(dict.fromkeys(g for m in (exchange.request, exchange.response) if m for g in m.body.groups))
    assert len(indexer.offsets) == 6  # 96 exchanges over 330-odd packets: a checkpoint every 64


def test_a_raw_sasl_token_is_listed_as_the_terminal_view_lists_it(tmp_path):
    """An index row has no messages: what the line reads of it (the label "SASL token" among the rest) it holds."""
    from tests.test_sasl_tokens import conversation

    packets = conversation(b"PLAIN", [(b"\0alice\0pw", b"")])
    path = tmp_path / "tokens.pcap"
    with open(path, "wb") as stream:
        PcapWriter(stream, packets[0].linktype).write_all(packets)
    _, index = indexed(path)
    columns = row_columns(200)
    lines = [row_cells(index.row(i), columns, index.row(i).completed) for i in range(len(index))]
    assert lines == [row_cells(exchange, columns) for exchange in exchanges(path)]
    assert any("SASL token" in line for line in lines)


# -- the app ----------------------------------------------------------------------------------------------------


def test_the_first_screen_lists_flows_and_exchanges():
    async def script(app, pilot):
        lines = list_lines(app)
        assert len(lines) == 96
        first = exchanges(GROUP)[0]
        assert lines[0].split()[:4] == ["1", clock(completed(first)), "1", "ApiVersions"]
        assert "MEMBER_ID_REQUIRED" in lines[24] and "JoinGroup v5" in lines[24]
        flows = app.query_one("#flows")
        assert flows.row_count == len({e.connection.id for e in exchanges(GROUP)})
        assert "96 exchanges" in str(app.query_one("#status", Static).render())

    drive(GROUP, script)


def test_a_filter_updates_the_list_as_typed_and_enter_applies_it():
    joins = [e.id for e in exchanges(GROUP, "api == JoinGroup")]

    async def script(app, pilot):
        await pilot.press("slash")
        assert app.query_one("#filter", Input).has_focus
        await pilot.press(*"api == JoinGroup")
        await settled(app, pilot)
        assert listed(app) == joins  # before Enter
        assert all("JoinGroup" in line for line in list_lines(app))
        await pilot.press("enter")
        assert not app.query_one("#filter-bar").has_class("open")
        lines = app.query_one("#list", Lines)
        assert lines.has_focus and lines.cursor == 0
        assert app.exchanges.applied == "api == JoinGroup"

    drive(GROUP, script)


def test_a_filter_that_matches_nothing_says_so_on_the_list():
    async def script(app, pilot):
        await pilot.press("slash", *"api == Heartbeat and latency_ms > 100000", "enter")
        await settled(app, pilot)
        assert app.query_one("#list", Lines).count == 0
        assert "no exchange matches api == Heartbeat and latency_ms > 100000" in screen_text(app)
        await pilot.press("slash")
        app.query_one("#filter", Input).value = ""
        await pilot.press(*"api == Heartbeat", "enter")
        await settled(app, pilot)
        assert app.query_one("#list", Lines).count > 0
        assert "no exchange matches" not in screen_text(app)

    drive(GROUP, script)


def test_a_capture_without_kafka_says_so_on_the_list(tmp_path):
    conversation = Conversation(client_port=41000, clock=Clock())
    path = tmp_path / "handshake.pcap"
    with open(path, "wb") as f:
        PcapWriter(f, LINKTYPE_ETHERNET).write_all(conversation.handshake())

    async def script(app, pilot):
        assert "no Kafka exchange in this capture" in screen_text(app)

    drive(path, script)


def test_a_filter_with_a_mistake_says_so_inline_and_keeps_the_list():
    joins = [e.id for e in exchanges(GROUP, "api == JoinGroup")]

    async def script(app, pilot):
        await pilot.press("slash", *"api == JoinGroup", "enter")
        await settled(app, pilot)
        await pilot.press("slash", *" and latncy_ms > 5")
        await settled(app, pilot)
        error = str(app.query_one("#filter-error", Static).render())
        assert "unknown field 'latncy_ms' (did you mean 'latency_ms'?)" in error
        assert listed(app) == joins  # the last that parsed
        await pilot.press("enter")  # not applied: the bar stays
        assert app.query_one("#filter-bar").has_class("open")
        await pilot.press("escape")
        await settled(app, pilot)
        assert app.exchanges.applied == "api == JoinGroup" and not app.query_one("#filter-bar").has_class("open")

    drive(GROUP, script)


def test_opening_an_exchange_shows_its_fields_and_a_field_lights_its_bytes():
    join = next(e for e in exchanges(GROUP, "api == JoinGroup and not error", spans=True))

    async def script(app, pilot):
        await open_exchange(app, pilot, join.id)
        labels = [str(node.label) for node in tree_nodes(app)]
        assert labels[0].startswith(f"Exchange {join.id}  JoinGroup v5")
        assert "Body JoinGroupRequest v5" in labels and "Body JoinGroupResponse v5" in labels
        assert any(label.startswith("Protocols [") for label in labels)
        assert any("(read by kdissect)" in label for label in labels)  # the consumer protocol payload, read out
        node = next(n for n in tree_nodes(app) if str(n.label).startswith("GroupId: "))
        app.query_one("#detail", Tree).move_cursor(node)
        await pilot.pause(0.3)
        start, end = join.request.body.fields.span("GroupId")
        assert str(app.query_one("#hex-title", Static).render()).endswith(f"bytes {start}-{end} selected")
        hex_lines = app.query_one("#hex", Lines)
        lit = [
            (span.start, text.plain[span.start : span.end])
            for text in (hex_lines.line(i) for i in range(hex_lines.count))
            for span in text.spans
            if "reverse" in str(span.style)
        ]
        data = join.request.frame.data[start:end]
        assert "".join(t for at, t in lit if at < 58).replace(" ", "") == data.hex()  # the hex columns end at 58
        assert "".join(t for at, t in lit if at >= 58) == "".join(chr(b) if 32 <= b < 127 else "." for b in data)

    drive(GROUP, script)


def test_a_records_value_shows_what_it_says_and_a_filter_reads_its_fields():
    """The rig's Avro capture, its schemas learnt from the registry's HTTP answers it holds (docs/values.md)."""
    pytest.importorskip("fastavro")
    from kdissect.values.http_sink import HttpLearning
    from kdissect.values.reader import ValueReader
    from kdissect.values.schemas import Book

    path = ROOT / "captures" / "values-avro-confluent.pcap"
    book = Book()
    list(events(path, Options(side_streams=HttpLearning(book.learn))))
    values = ValueReader(book)
    expression = 'record.value.id == "order-42"'
    wanted = compile_filter([("-Y", expression)], BUILTIN, values)
    expected = [e.id for e in events(path, Options()) if isinstance(e, Exchange) and wanted.matches(e)]

    async def script(app, pilot):
        assert listed(app) == expected and len(expected) == 2  # produced once, fetched once
        await open_exchange(app, pilot, expected[0])
        labels = [str(node.label) for node in tree_nodes(app)]
        assert any(label.startswith("value avro, confluent framing: magic byte 0 and schema id 2") for label in labels)
        assert "id: 'order-42'" in labels and "type: kdrig.shop.Order" in labels

    drive(path, script, initial=expression, values=values)


def test_clicking_a_byte_selects_its_field():
    join = next(e for e in exchanges(GROUP, "api == JoinGroup and not error", spans=True))
    start, _ = join.request.body.fields.span("SessionTimeoutMs")

    async def script(app, pilot):
        await open_exchange(app, pilot, join.id)
        hex_lines = app.query_one("#hex", Lines)
        hex_lines.scroll_to(y=0, animate=False)
        await pilot.pause(0.1)
        await pilot.click("#hex", offset=(10 + 3 * (start % 16), start // 16))
        await pilot.pause(0.3)
        assert str(app.query_one("#detail", Tree).cursor_node.label).startswith("SessionTimeoutMs: ")

    drive(GROUP, script)


def test_a_flow_chosen_shows_its_exchanges_and_a_double_click_opens_one():
    ids = [e.id for e in exchanges(GROUP, "connection == 7")]

    async def script(app, pilot):
        flows = app.query_one("#flows")
        flows.focus()
        flows.move_cursor(row=6)
        await pilot.press("enter")
        await settled(app, pilot)
        assert app.exchanges.applied == "connection == 7"
        assert listed(app) == ids
        await pilot.click("#list", offset=(5, 1), times=2)
        for _ in range(200):
            if app.detail.exchange is not None:
                break
            await pilot.pause(0.05)
        assert app.detail.exchange.id == ids[1]

    drive(GROUP, script)


def test_n_and_N_jump_between_exchanges_with_errors_or_diagnostics():
    flagged = [e.id for e in exchanges(GROUP) if exchange_errors(e) or [d for d in e.diagnostics if d.severity != "note"]]
    assert len(flagged) >= 2

    async def script(app, pilot):
        lines = app.query_one("#list", Lines)
        seen = []
        for _ in flagged:
            await pilot.press("n")
            seen.append(app.exchanges.position(lines.cursor) + 1)
        assert seen == flagged
        await pilot.press("N")
        assert app.exchanges.position(lines.cursor) + 1 == flagged[-2]

    drive(GROUP, script)


def test_c_follows_the_connection_and_g_the_group():
    join = next(e for e in exchanges(GROUP, "api == JoinGroup"))
    group = join.request.body.groups[0]

    async def script(app, pilot):
        lines = app.query_one("#list", Lines)
        lines.cursor = join.id - 1
        await pilot.press("c")
        await settled(app, pilot)
        assert app.exchanges.applied == f"connection == {join.connection.id}"
        assert listed(app) == [e.id for e in exchanges(GROUP) if e.connection == join.connection]
        lines.cursor = next(i for i in range(lines.count) if app.exchanges.position(i) + 1 == join.id)
        await pilot.press("g")
        await settled(app, pilot)
        assert app.exchanges.applied == f'group == "{group}"'
        assert listed(app) == [e.id for e in exchanges(GROUP, f'group == "{group}"')]

    drive(GROUP, script)


@pytest.mark.parametrize("suffix", [".pcap", ".ndjson", ".html"])
def test_w_writes_the_filtered_exchanges(tmp_path, suffix):
    chosen = exchanges(GROUP, "api == SyncGroup or api == Heartbeat")
    out = tmp_path / f"chosen{suffix}"

    async def script(app, pilot):
        await pilot.press("slash", *"api == SyncGroup or api == Heartbeat", "enter")
        await settled(app, pilot)
        await pilot.press("w")
        field = app.screen.query_one("#write-name", Input)
        field.value = str(out)
        await pilot.press("enter")
        for _ in range(200):
            if out.exists() and out.stat().st_size and not [w for w in app.workers if w.group == "write" and not w.is_finished]:
                break
            await pilot.pause(0.05)

    drive(GROUP, script)
    if suffix == ".pcap":
        # -w's cut: the written file holds the chosen exchanges and nothing else
        again = exchanges(out)
        assert sorted((e.api_key, e.correlation_id, str(e.connection.client), e.status) for e in again) == sorted(
            (e.api_key, e.correlation_id, str(e.connection.client), e.status) for e in chosen
        )
    elif suffix == ".html":  # the report page of what the list shows, as `kdissect report -Y` writes it
        from tests.test_report import page_data

        page, command = page_data(out.read_text()), page_data(report(GROUP, "-Y", "api == SyncGroup or api == Heartbeat"))
        assert page["stats"] == command["stats"] and page["findings"] == command["findings"] and page["verdict"] == command["verdict"]
        assert page["stats"]["apis"] and {row["api_name"] for row in page["stats"]["apis"]} == {"SyncGroup", "Heartbeat"}
    else:
        written = [json.loads(line) for line in out.read_text().splitlines()]
        assert [w["id"] for w in written] == [e.id for e in chosen]


def report(capture: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kdissect", "report", str(capture), *args],
        capture_output=True,
        cwd=ROOT,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return done.stdout


def test_x_hides_the_hex_pane_and_question_mark_shows_the_keys():
    async def script(app, pilot):
        await open_exchange(app, pilot, 1)
        assert app.query_one("#hex-pane").display
        await pilot.press("x")
        assert app.query_one("#hex-pane").has_class("hidden")
        await pilot.press("x", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "next / previous exchange with an error or a diagnostic" in screen_text(app)
        await pilot.press("space")
        assert not isinstance(app.screen, HelpScreen)

    drive(GROUP, script)


def test_s_sorts_by_a_column():
    async def script(app, pilot):
        while app.exchanges.sort_column != "latency":
            await pilot.press("s")
        await pilot.pause(0.2)
        latencies = [app.index.row(app.exchanges.position(i)).latency for i in range(app.query_one("#list", Lines).count)]
        known = [ns for ns in latencies if ns is not None]
        assert known == sorted(known) and len(known) > 50
        await pilot.press("S")
        latencies = [app.index.row(app.exchanges.position(i)).latency for i in range(app.query_one("#list", Lines).count)]
        assert [ns for ns in latencies if ns is not None] == sorted(known, reverse=True)
        assert "latency ▼" in screen_text(app)

    drive(GROUP, script)


# -- the screens, as text ---------------------------------------------------------------------------------------


def test_the_main_screen_at_80_by_24():
    async def script(app, pilot):
        text = screen_text(app).splitlines()
        assert len(text) == 24 and all(len(line) <= 80 for line in text)
        assert text[0].split() == ["Exchanges", "Charts", "Findings", f"({len(doctor_findings(GROUP))})"]
        assert any(line.split()[:3] == ["#", "client", "→"] for line in text)
        header = next(line for line in text if "completed" in line)
        assert header.split()[:4] == ["#", "completed", "conn", "API"]  # read's columns at 80: milliseconds, no corr
        first = exchanges(GROUP)[0]
        assert any(line.split()[:4] == ["1", clock(completed(first), 3), "1", "ApiVersions"] for line in text)
        assert "96 exchanges" in text[-2] and "/ filter" in text[-1]

    drive(GROUP, script, size=(80, 24))


def test_the_screens_at_200_by_50():
    join = next(e for e in exchanges(GROUP, "api == JoinGroup and error"))

    async def script(app, pilot):
        text = screen_text(app)
        assert f"{join.id} " in text and "MEMBER_ID_REQUIRED" in text  # the status column fits at this width
        await open_exchange(app, pilot, join.id)
        text = screen_text(app)
        assert "Body JoinGroupRequest v5" in text and "GroupId: " in text
        assert "Request frame" in text and "00000000  00 0b 00 05" in text  # JoinGroup is API key 11, version 5
        error = next(n for n in tree_nodes(app) if str(n.label).startswith("ErrorCode: 79"))
        app.query_one("#detail", Tree).move_cursor(error)
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "ErrorCode: 79  MEMBER_ID_REQUIRED" in text and "Response frame" in text
        await pilot.press("t")
        await pilot.pause(0.6)
        assert app.query_one("#tabs").active == "charts-tab"
        text = screen_text(app)
        assert "Latency per API" in text and "Exchanges per second" in text and "Consumer groups" in text
        groups = {g for e in exchanges(GROUP) if e.request and e.request.body for g in e.request.body.groups}
        assert all(group in text for group in groups)
        assert "gen 1:" in text
        await pilot.press("t")
        assert app.query_one("#tabs").active == "browse" and app.query_one("#list", Lines).has_focus

    drive(GROUP, script, size=(200, 50))


def test_a_click_on_a_column_name_sorts_by_it_and_again_reverses():
    async def script(app, pilot):
        at = sum(c.width + 1 for c in app.exchanges.columns[: [c.key for c in app.exchanges.columns].index("client")])
        await pilot.click("#list-header", offset=(at + 2, 0))
        await pilot.pause(0.2)
        clients = [app.index.row(app.exchanges.position(i)).client_id for i in range(app.query_one("#list", Lines).count)]
        assert app.exchanges.sort_column == "client" and clients == sorted(clients)
        await pilot.click("#list-header", offset=(at + 2, 0))
        await pilot.pause(0.2)
        clients = [app.index.row(app.exchanges.position(i)).client_id for i in range(app.query_one("#list", Lines).count)]
        assert app.exchanges.reverse and clients == sorted(clients, reverse=True)

    drive(GROUP, script)


def test_the_list_makes_only_the_lines_on_screen():
    """A million rows: scrolling to the end and back makes a few screens of lines, not a million."""
    made = []

    def line(i: int) -> Text:
        made.append(i)
        return Text(f"row {i}")

    class OneList(App[None]):
        def compose(self):
            yield Lines(line, id="lines")

    async def run():
        app = OneList()
        async with app.run_test(size=(80, 24)) as pilot:
            lines = app.query_one(Lines)
            lines.reset(1_000_000)
            lines.focus()
            await pilot.pause(0.1)
            await pilot.press("end")
            await pilot.pause(0.1)
            assert lines.cursor == 999_999
            shown = [lines.render_line(y).text.strip() for y in range(lines.size.height)]
            assert "row 999999" in shown, shown
            await pilot.press("pageup", "home")
            await pilot.pause(0.1)
            assert lines.cursor == 0

    asyncio.run(run())
    assert 999_999 in made and 0 in made
    assert len(set(made)) < 200


def sasl_capture(tmp_path: Path) -> tuple[Path, str]:
    """A capture of a SASL PLAIN login, written by kdissect's own encoders: its password must never show."""
    from kdissect.capture.writer import PcapWriter
    from kdissect.testing.body_encoder import encode_body
    from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response

    password = "hunter2-very-secret"
    conv = Conversation(clock=Clock())
    packets = conv.handshake()
    calls = [(17, 1, {"Mechanism": "PLAIN"}, {"Mechanisms": ["PLAIN"]}), (36, 2, {"AuthBytes": f"\0alice\0{password}".encode()}, {})]
    for correlation, (key, version, req, resp) in enumerate(calls, 1):
        packets += conv.send(CLIENT, request(key, version, correlation, encode_body(key, version, "request", req)))
        packets += conv.send(SERVER, response(correlation, encode_body(key, version, "response", resp), 1 if key == 36 else 0))
    path = tmp_path / "sasl.pcap"
    with open(path, "wb") as stream:
        PcapWriter(stream, packets[0].linktype).write_all(packets)
    return path, password


@pytest.mark.parametrize("show_secrets", [False, True])
def test_secrets_stay_redacted_in_the_tree_and_the_bytes(tmp_path, show_secrets):
    """The SASL mechanism comes from the handshake, which the pass saw and the re-read does not: the session
    handed over is what lets the password be found, and hidden, in a body decoded on demand."""
    path, password = sasl_capture(tmp_path)

    async def run():
        app = BrowseApp(path, Options(show_secrets=show_secrets))
        async with app.run_test(size=(200, 50)) as pilot:
            await settled(app, pilot)
            await open_exchange(app, pilot, 2)
            labels = " ".join(str(node.label) for node in tree_nodes(app))
            hex_lines = app.query_one("#hex", Lines)
            dump = "".join(hex_lines.line(i).plain for i in range(hex_lines.count))
            return labels, dump

    labels, dump = asyncio.run(run())
    assert "username: 'alice'" in labels
    shown = password.encode().hex(" ")[:20]
    if show_secrets:
        assert password in labels and shown in dump
    else:
        assert password not in labels and "redacted" in labels
        assert shown not in dump and "hunter2" not in dump and "** ** **" in dump


def test_matches_a_filter_pass_found_before_the_index_wait_for_it():
    """The filter's pass can run ahead of the index's: a match not indexed yet is not on the list (nor written)."""

    async def script(app, pilot):
        await pilot.press("slash", *"api == JoinGroup", "enter")
        await settled(app, pilot)
        exchanges = app.exchanges
        joins = list(exchanges.matches)
        exchanges.matches.extend([len(app.index) + 5, len(app.index) + 9])  # what a pass ahead would have found
        exchanges.grown(tail=False)
        app.list_changed()
        await pilot.pause()
        assert exchanges.shown() == len(joins) and exchanges.count == len(joins)
        assert "(2 not indexed yet)" in str(app.query_one("#status", Static).render())
        await pilot.press("end", "n")  # nothing past the indexed ones
        assert app.exchanges.position(app.query_one("#list", Lines).cursor) == joins[-1]

    drive(GROUP, script)


# -- the findings tab --------------------------------------------------------------------------------------------

STORM = ROOT / "captures" / "doctor-rebalance-storm.pcap"


def doctor_findings(path: Path):
    """What `kdissect doctor --json` says of the capture: the findings the tab must show."""
    from kdissect.cli import main

    out = io.StringIO()
    stdout, sys.stdout = sys.stdout, out
    try:
        with pytest.raises(SystemExit) as exit_:
            main(["doctor", str(path), "--json"])
    finally:
        sys.stdout = stdout
    assert exit_.value.code in (0, None)
    return [o for o in map(json.loads, out.getvalue().splitlines()) if o["type"] == "finding"]


def findings_rows(app: BrowseApp) -> list[list[str]]:
    table = app.query_one("#findings")
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def test_the_findings_tab_shows_what_doctor_finds_and_enter_lists_the_evidence():
    expected = doctor_findings(STORM)
    storm = next(f for f in expected if f["id"] == "group.rebalance-storm")

    async def script(app, pilot):
        await pilot.press("f")
        await pilot.pause(0.3)
        assert app.query_one("#tabs").active == "findings-tab" and app.query_one("#findings").has_focus
        assert str(app.query_one("#tabs").get_tab("findings-tab").label) == f"Findings ({len(expected)})"
        assert findings_rows(app) == [[f["severity"], f["id"], f["title"]] for f in expected]
        detail = str(app.query_one("#finding", Static).render())
        first = expected[0]
        assert first["title"] in detail and first["advice"][:60] in detail and first["explanation"][:60] in detail
        assert "exchanges " + ", ".join(map(str, first["evidence"]["exchanges"])) in detail
        at = expected.index(storm)
        for _ in range(at):
            await pilot.press("down")
        await pilot.pause(0.2)
        assert storm["title"] in str(app.query_one("#finding", Static).render())
        await pilot.press("enter")
        await settled(app, pilot)
        assert app.query_one("#tabs").active == "browse" and app.query_one("#list", Lines).has_focus
        assert app.exchanges.applied == storm["evidence"]["filter"]  # exactly what the finding counts
        lines = app.query_one("#list", Lines)
        assert listed(app) == [e.id for e in exchanges(STORM, storm["evidence"]["filter"])] and lines.cursor == 0
        assert len(listed(app)) == storm["evidence"]["count"]
        assert all(" JoinGroup " in line for line in list_lines(app))
        # c and g on a finding: its connections, its groups
        await pilot.press("f")
        app.query_one("#findings").move_cursor(row=at)
        await pilot.press("c")
        await settled(app, pilot)
        connections = storm["evidence"]["connections"]
        assert app.exchanges.applied == "connection in {" + ", ".join(map(str, connections)) + "}"
        assert {app.index.row(app.exchanges.position(i)).connection.id for i in range(lines.count)} == set(connections)
        await pilot.press("f")
        app.query_one("#findings").move_cursor(row=at)
        await pilot.press("g")
        await settled(app, pilot)
        assert app.exchanges.applied == 'group == "kdrig-storm"' and storm["evidence"]["groups"] == ["kdrig-storm"]
        assert listed(app) == [e.id for e in exchanges(STORM, 'group == "kdrig-storm"')]

    drive(STORM, script)


def test_findings_wait_for_the_whole_index_and_come_when_it_completes(monkeypatch):
    """The rules judge the capture as a whole: while the index runs the tab says so; its end fills the tab."""
    gate = threading.Event()
    run = Indexer.run

    def held(self, stop, post):
        gate.wait(30)
        run(self, stop, post)

    monkeypatch.setattr(Indexer, "run", held)

    async def script(app, pilot):
        await pilot.press("f")
        await pilot.pause()
        assert not app.indexed and findings_rows(app) == []
        assert "findings come when the index is complete" in str(app.query_one("#finding", Static).render())
        gate.set()
        await settled(app, pilot)
        assert [row[1] for row in findings_rows(app)] == [f["id"] for f in doctor_findings(STORM)]

    async def run_app():
        app = BrowseApp(STORM, Options())
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.pause(0.2)
            return await script(app, pilot)

    asyncio.run(run_app())


def test_a_finding_without_exchanges_lists_its_connections_groups_or_topics():
    from kdissect.browse.findings import evidence_filter
    from kdissect.doctor.finding import Evidence

    assert evidence_filter(Evidence(connections=(3,), groups=("g",))) == "connection == 3"
    assert evidence_filter(Evidence(groups=('a "b"', "c"))) == 'group in {"a \\"b\\"", "c"}'
    assert evidence_filter(Evidence(partitions=(("t", 0), ("t", 1), ("u", None)))) == 'topic in {"t", "u"}'
    assert evidence_filter(Evidence(connections=(3,)), "groups") is None
    for expression in ('group in {"a \\"b\\"", "c"}', 'topic in {"t", "u"}', "id in {1, 2}"):
        compile_filter([("-Y", expression)], BUILTIN)  # each is a filter the language reads


def test_the_findings_tab_at_80_by_24_and_200_by_50():
    expected = doctor_findings(STORM)

    async def script(app, pilot):
        await pilot.press("f")
        await pilot.pause(0.4)
        text = screen_text(app).splitlines()
        width, height = app.size
        assert len(text) == height and all(len(line) <= width for line in text)
        assert text[0].split() == ["Exchanges", "Charts", "Findings", f"({len(expected)})"]
        assert text[2].split() == ["severity", "finding", "title"]
        for line, finding in zip(text[3:], expected):
            assert line.split()[:2] == [finding["severity"], finding["id"]]
            assert finding["title"][: width - 40] in line
        body = "\n".join(text[3 + len(expected) :])
        assert f"{expected[0]['severity'].upper()}  {expected[0]['id']}" in body
        assert "f findings" in text[-1] and "? help" in text[-1]
        if height >= 50:  # the whole finding fits, its evidence and keys too
            assert "advice " in body and "evidence" in body and "Enter lists them: " in body
        return text

    small = drive(STORM, script, size=(80, 24))
    large = drive(STORM, script, size=(200, 50))
    assert small[3 : 3 + len(expected)] != large[3 : 3 + len(expected)]  # the titles take the width there is


# -- text from the wire is data, never markup --------------------------------------------------------------------


def screen_strips(app: BrowseApp) -> list:
    """What the screen is made of, line by line, as Textual hands it to the terminal."""
    return list(app.screen._compositor.render_strips())


def assert_inert(app: BrowseApp, *literal: str) -> str:
    """Nothing on screen a terminal would act on, no link made of markup, and each of `literal` shown as it is."""
    strips = screen_strips(app)
    text = "\n".join(strip.text for strip in strips)
    unsafe = [strip.text for strip in strips if printable(strip.text) != strip.text]
    assert not unsafe, unsafe
    assert not [segment for strip in strips for segment in strip if segment.style is not None and segment.style.link]
    for each in literal:
        assert each in text, each
    return text


async def charts_drawn(app: BrowseApp, pilot, words: str) -> str:
    """The charts as plain text, once their worker has drawn `words`."""

    def text() -> str:
        out = Console(width=app.size.width, file=io.StringIO(), record=True, color_system=None)
        out.print(app.query_one("#charts", Static).content)
        return out.export_text()

    for _ in range(200):
        if words in text():
            break
        await pilot.pause(0.05)
    return text()


def test_text_from_the_wire_reaches_every_pane_as_data_never_markup(tmp_path):
    """Client ids, topics, groups, record header keys, error messages, findings and flows from a hostile capture:
    no pane dies, nothing on screen is a control character (each shows as printable() writes it), no markup is
    read (`[/x]` shows, `[bold red]` and `[link=…]` are words)."""
    path = hostile_capture(tmp_path / "hostile.pcap")
    escaped = [printable(text) for text in HOSTILE]
    assert len(exchanges(path)) == CALLS * len(HOSTILE)

    async def script(app, pilot):
        assert_inert(app, "a[/x]b", "[bold red]x[/]", "\\x1b]0;pwned\\x07", "line\\x0abreak")  # the list, the flows
        flows = app.query_one("#flows")
        flows.focus()
        flows.move_cursor(row=flows.row_count - 1)
        await pilot.pause()
        assert_inert(app, "[link=https://example.com]click[/link]", "\\u202e")
        # each Produce and JoinGroup opened, the detail following the cursor: show's tree, every label; a Produce's
        # whole tree (topic, records, header keys, error messages) expanded and looked at a screen at a time
        exchanges_list, tree = app.exchanges, app.query_one("#detail", Tree)
        exchanges_list.focus()
        await pilot.press("enter")
        every = []
        for line in [line for line in range(exchanges_list.count) if line % 3]:
            exchanges_list.cursor = line
            await shown(app, pilot, line + 1)
            tree.root.expand_all()
            labels = [str(node.label) for node in tree_nodes(app)]
            assert all(printable(label) == label for label in labels)
            every += labels
            if app.detail.exchange.api_key == 0:
                await pilot.pause()
                for y in range(0, tree.virtual_size.height, tree.size.height):
                    tree.scroll_to(y=y, animate=False)
                    await pilot.pause()
                    assert_inert(app)
        labels = "\n".join(every)
        for text in HOSTILE:  # show writes a string as Python writes its repr
            assert f"client_id: {text!r}" in labels and f"Name: {text!r}" in labels and f"header {text!r}: " in labels
            assert f"ErrorMessage: {text!r}" in labels and f"GroupId: {text!r}" in labels and f"Reason: {text!r}" in labels
        # the findings: each one's row and text
        await pilot.press("f")
        await pilot.pause()
        findings = app.query_one("#findings")
        assert findings.row_count >= len(HOSTILE)
        for row in range(findings.row_count):
            findings.move_cursor(row=row)
            await pilot.pause()
            assert_inert(app)
        told = str(app.query_one("#finding", Static).render()).split("\n")  # its own line breaks, none of the wire's
        assert len(told) > 10 and all(printable(line) == line for line in told)
        # the charts: each group's lane, its reasons
        await pilot.press("t")
        drawn = await charts_drawn(app, pilot, "Consumer groups")
        assert all(f"{text}  1 members" in drawn for text in escaped) and "JoinGroup: a[/x]b×1" in drawn
        scroll = app.query_one("#charts-scroll")
        for y in range(0, scroll.virtual_size.height, scroll.size.height):
            scroll.scroll_to(y=y, animate=False)
            await pilot.pause()
            assert_inert(app)
        # g on each exchange of a group: the filter bar, the status line and the list's own words
        await pilot.press("t")
        for k in range(len(HOSTILE)):
            app.follow("")  # every exchange again
            await settled(app, pilot)
            exchanges_list.cursor = next(i for i in range(exchanges_list.count) if exchanges_list.position(i) == CALLS * k + 2)
            await pilot.press("g")
            await settled(app, pilot)
            assert listed(app) == [CALLS * k + 3]  # a control character in the filter's text still matches
            await pilot.press("slash")
            assert_inert(app, f"{len(listed(app))} match group == ")
            await pilot.press("escape")
        await pilot.press("slash")
        app.query_one("#filter", Input).value = 'client_id == "[bold red]x[/]" or client_id == "a[/x]b"'
        await settled(app, pilot)
        assert_inert(app, 'client_id == "[bold red]x[/]" or client_id == "a[/x]b"')
        assert len(listed(app)) == 6
        app.query_one("#filter", Input).value = 'client_id == "[link=https://example.com]click[/link]" and latency_ms > 1000'
        await settled(app, pilot)
        assert_inert(app, 'no exchange matches client_id == "[link=https://example.com]click[/link]" and latency_ms > 1000')

    drive(path, script, size=(200, 50))


# -- panes, keys, passes ------------------------------------------------------------------------------------------


def shown_on_screen(widget) -> bool:
    return all(node.display for node in widget.ancestors_with_self if hasattr(node, "display"))


def test_tab_visits_only_the_panes_shown():
    async def script(app, pilot):
        seen = []
        for _ in range(3):
            await pilot.press("tab")
            seen.append(app.focused.id)
            assert shown_on_screen(app.focused)
        assert seen == ["flows", "list", "flows"]  # no detail yet
        await open_exchange(app, pilot, 1)
        assert app.focused.id == "detail"
        for expected in ("hex", "flows", "list", "detail"):
            await pilot.press("tab")
            assert app.focused.id == expected
        await pilot.press("x", "shift+tab", "shift+tab")
        assert app.focused.id == "flows"  # the hex pane hidden: no longer on the way
        await pilot.press("slash", "tab")
        assert app.focused.id == "flows"  # from the filter field
        await pilot.press("escape", "f")
        for expected in ("finding-scroll", "findings"):
            await pilot.press("tab")
            assert app.focused.id == expected and shown_on_screen(app.focused)

    drive(GROUP, script)


def test_with_the_detail_open_it_follows_the_cursor():
    """n and N, the arrows, a click: the detail shows the exchange under the cursor; closed, it stays closed."""
    flagged = [e.id for e in exchanges(GROUP) if exchange_errors(e) or [d for d in e.diagnostics if d.severity != "note"]]

    async def script(app, pilot):
        await pilot.press("n")
        assert not app.detail.opened and app.detail.exchange is None
        await open_exchange(app, pilot, flagged[0])
        for number in flagged[1:4]:
            await pilot.press("n")
            await shown(app, pilot, number)
            assert app.exchanges.has_focus and str(tree_nodes(app)[0].label).startswith(f"Exchange {number} ")
        await pilot.press("N")
        await shown(app, pilot, flagged[2])
        await pilot.press("down")
        await shown(app, pilot, flagged[2] + 1)
        assert app.detail.exchange.id == flagged[2] + 1

    drive(GROUP, script)


def test_the_charts_draw_what_the_list_shows():
    heartbeats = exchanges(GROUP, "api == Heartbeat")

    async def script(app, pilot):
        await pilot.press("t")
        text = await charts_drawn(app, pilot, "All 96 exchanges")
        assert "JoinGroup" in text and "Heartbeat" in text and str(app.query_one("#tabs").get_tab("charts-tab").label) == "Charts"
        await pilot.press("t", "slash", *"api == Heartbeat", "enter")
        await settled(app, pilot)
        await pilot.press("t")
        text = await charts_drawn(app, pilot, f"The {len(heartbeats)} exchanges the filter lists: api == Heartbeat")
        table = text[text.index("Latency per API") : text.index("Exchanges per second")]
        assert "Heartbeat" in table and "JoinGroup" not in table
        assert str(app.query_one("#tabs").get_tab("charts-tab").label) == "Charts (filtered)"
        assert "the listed exchanges name" in text

    drive(GROUP, script)


def test_a_slow_filter_leaves_typing_alone_and_the_next_one_cancels_it(monkeypatch):
    """A filter's pass runs in a worker: while it is held up, keys still reach the filter bar; each new filter
    cancels the pass of the one before, and the last one's matches fill the list."""
    from kdissect.browse import exchange_list

    gate, events_of = threading.Event(), exchange_list.events

    def held(*args):
        gate.wait(30)
        yield from events_of(*args)

    joins = [e.id for e in exchanges(GROUP, "api == JoinGroup or api == SyncGroup")]

    async def script(app, pilot):
        monkeypatch.setattr(exchange_list, "events", held)
        await pilot.press("slash", *"api == JoinGroup")
        (first,) = [w for w in app.workers if w.group == "filter"]
        await pilot.press(*" or api == SyncGroup")
        assert app.query_one("#filter", Input).value == "api == JoinGroup or api == SyncGroup"
        assert not app.exchanges.pass_done and "(searching…)" in str(app.query_one("#status", Static).render())
        (last,) = [w for w in app.workers if w.group == "filter"]  # a cancelled one leaves the app's workers
        assert first.is_cancelled and last is not first and not last.is_cancelled
        gate.set()
        await settled(app, pilot)
        assert listed(app) == joins

    drive(GROUP, script)


# -- TLS secrets a pcapng embeds ---------------------------------------------------------------------------------

SECRETS = ROOT / "captures" / "tls13-secrets-kafka-python.pcapng"


def test_a_pcapng_that_embeds_its_tls_secrets_is_browsed_decrypted():
    """Its Decryption Secrets Block reaches the index's pass, a filter's pass and a body read again on demand,
    as it reaches `read`: the list is the plaintext twin's, and an exchange opens to its fields."""
    plain = exchanges(ROOT / "captures" / "tls13-secrets-kafka-python-plain.pcap")
    assert plain and all(e.status == "ok" for e in plain)
    fetch = next(e for e in plain if e.api_key == 1)

    async def script(app, pilot):
        index = app.index
        rows = [index.row(i) for i in range(len(index))]
        assert [(r.api_key, r.api_version, r.correlation_id, r.client_id, r.status) for r in rows] == [
            (e.api_key, e.api_version, e.correlation_id, e.client_id, e.status) for e in plain
        ]
        assert {f.id for f in app.findings.findings}.isdisjoint({"capture.tls-hidden"})
        await pilot.press("slash", *"api == Fetch", "enter")
        await settled(app, pilot)
        assert listed(app) == [e.id for e in plain if e.api_key == 1]
        await open_exchange(app, pilot, fetch.id)
        labels = [str(n.label) for n in tree_nodes(app)]
        assert any(label.startswith("Body FetchRequest v") for label in labels)
        assert app.detail.exchange.request.frame.data == fetch.request.frame.data
        assert app.detail.exchange.response.frame.data == fetch.response.frame.data

    drive(SECRETS, script)


# -- live: rows as they are captured -----------------------------------------------------------------------------


class Replay:
    """A live capture (`capture.live.LiveCapture`) handing out a capture file's packets as the test releases them."""

    interface = "replay"
    expression = ""

    def __init__(self, path: Path) -> None:
        from kdissect.capture import open_capture
        from kdissect.capture.live import CaptureStats

        with open_capture(path) as capture:
            self.all = [p._replace(offset=-1) for p in capture.packets()]
        self.linktype = self.all[0].linktype
        self.stats = CaptureStats()
        self.released = 0
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)

    def release(self, count: int) -> None:
        self.released = min(len(self.all), self.released + count)
        os.write(self._write, b".")

    def fileno(self) -> int:
        return self._read

    def read(self, limit: int):
        with contextlib.suppress(BlockingIOError):
            os.read(self._read, 4096)
        out = self.all[self.stats.packets : min(self.released, self.stats.packets + limit)]
        self.stats.packets += len(out)
        return out

    def update_stats(self) -> None:
        pass

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


def test_live_rows_arrive_as_captured_and_open_from_the_kept_file(tmp_path, monkeypatch):
    """`live --browse`: the list grows as packets come; a filter covers what was captured and what comes after;
    a body opens from the pcap the packets were kept in; the findings so far, and all of them once it stops."""
    from kdissect.browse.live import LiveFeed

    replay = Replay(GROUP)
    total = len(replay.all)
    expected = exchanges(GROUP)
    joins = [e.id for e in exchanges(GROUP, "api == JoinGroup")]
    kept = tmp_path / "kept.pcap"

    async def run():
        with open(kept, "wb") as store:
            app = BrowseApp(kept, Options(), live=LiveFeed(replay, store, packets=total))
            async with app.run_test(size=(160, 45)) as pilot:
                lines = app.query_one("#list", Lines)

                async def until(test):
                    for _ in range(200):
                        if test():
                            return
                        await pilot.pause(0.05)
                    raise AssertionError("the browser did not get there")

                def counted() -> int:
                    """The exchanges the core made of the packets captured so far, as the pass counts them."""
                    return app.indexer.ask(lambda: app.indexer.indexed).result()

                assert lines.count == 0
                replay.release(total // 2)
                await until(lambda: replay.stats.packets == total // 2 and 0 < lines.count == counted())
                half = lines.count
                assert half < len(expected) and not app.indexed
                assert "capturing on replay" in str(app.query_one("#status", Static).render())
                assert lines.cursor == half - 1  # the cursor on the last line follows the rows as they come
                rows = [app.index.row(app.exchanges.position(i)) for i in range(half)]
                assert [(r.id, r.api_key, r.correlation_id, r.status) for r in rows] == [
                    (e.id, e.api_key, e.correlation_id, e.status) for e in expected[:half]
                ]
                assert [line.split()[0] for line in list_lines(app)] == [str(e.id) for e in expected[:half]]
                await pilot.press("f")
                await until(lambda: "so far)" in str(app.query_one("#tabs").get_tab("findings-tab").label))
                await pilot.press("f", "slash", *"api == JoinGroup", "enter")
                await until(lambda: app.exchanges.pass_done)
                before = listed(app)
                assert before == [i for i in joins if i <= half]
                # another filter, whose pass over the kept file is slow: what is captured meanwhile is not lost
                from kdissect.browse import exchange_list

                scan_may_go, events_of = threading.Event(), exchange_list.events

                def held(*args):
                    scan_may_go.wait(30)
                    yield from events_of(*args)

                monkeypatch.setattr(exchange_list, "events", held)
                app.follow("api == JoinGroup or api == SyncGroup")
                replay.release(total)
                await until(lambda: app.indexed)
                scan_may_go.set()
                await settled(app, pilot)
                chosen = [e.id for e in exchanges(GROUP, "api == JoinGroup or api == SyncGroup")]
                assert listed(app) == chosen and max(chosen) > half
                await pilot.press("slash", "ctrl+u", *"api == JoinGroup", "enter")
                await settled(app, pilot)
                assert listed(app) == joins and len(joins) > len(before)
                status = str(app.query_one("#status", Static).render())
                assert f"capture stopped after {total} packets (--packets)" in status
                assert [r[1] for r in findings_rows(app)] == [f["id"] for f in doctor_findings(GROUP)]
                assert str(app.query_one("#tabs").get_tab("findings-tab").label) == f"Findings ({len(doctor_findings(GROUP))})"
                late = next(e for e in expected if e.id == joins[-1])
                await open_exchange(app, pilot, late.id)
                assert app.detail.exchange.request.frame.data == late.request.frame.data
                assert app.detail.exchange.response.frame.data == late.response.frame.data
                assert any(str(n.label).startswith("Body JoinGroupRequest v") for n in tree_nodes(app))
        # the kept file holds every packet captured, as captured
        from kdissect.capture import open_capture

        with open_capture(kept) as capture:
            assert [(p.ts, p.data) for p in capture.packets()] == [(p.ts, p.data) for p in replay.all]

    asyncio.run(run())


@needs_capture
def test_live_browse_on_loopback(tmp_path):
    """A real capture on `lo`: a client sends a real client's request frames to a server that answers each with
    the broker's recorded response; the rows come as they are captured and a body opens from the kept file."""
    import socket
    import struct

    from kdissect.browse.live import LiveFeed
    from kdissect.capture.live import capture_filter, open_live

    recorded = [e for e in exchanges(GROUP) if e.connection.id == 1 and e.request and e.response]
    assert len(recorded) >= 2
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            for exchange in recorded:
                size = struct.unpack("!i", conn.recv(4, socket.MSG_WAITALL))[0]
                conn.recv(size, socket.MSG_WAITALL)
                data = exchange.response.frame.data
                conn.sendall(struct.pack("!i", len(data)) + data)

    def client() -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            for exchange in recorded:
                data = exchange.request.frame.data
                sock.sendall(struct.pack("!i", len(data)) + data)
                size = struct.unpack("!i", sock.recv(4, socket.MSG_WAITALL))[0]
                sock.recv(size, socket.MSG_WAITALL)

    capture = open_live("lo", capture_filter([port]))
    threading.Thread(target=serve, daemon=True).start()

    async def run():
        with open(tmp_path / "kept.pcap", "wb") as store:
            app = BrowseApp(tmp_path / "kept.pcap", Options(ports=frozenset({port})), live=LiveFeed(capture, store))
            async with app.run_test(size=(160, 45)) as pilot:
                await pilot.pause(0.3)
                talk = threading.Thread(target=client)
                talk.start()
                lines = app.query_one("#list", Lines)
                for _ in range(200):
                    if lines.count == len(recorded):
                        break
                    await pilot.pause(0.05)
                talk.join(10)
                rows = [app.index.row(app.exchanges.position(i)) for i in range(lines.count)]
                assert [(r.api_key, r.correlation_id, r.client_id, r.status) for r in rows] == [
                    (e.api_key, e.correlation_id, e.client_id, e.status) for e in recorded
                ]
                assert "capturing on lo" in str(app.query_one("#status", Static).render())
                await open_exchange(app, pilot, len(recorded))
                assert app.detail.exchange.response.frame.data == recorded[-1].response.frame.data
                assert any(str(n.label).startswith("Body ") for n in tree_nodes(app))
        return app

    try:
        app = asyncio.run(run())
        assert app.indexer.ended.wait(5)  # closing the browser ends the capture's pass
    finally:
        capture.close()
        server.close()


def test_live_browse_follows_a_key_log_the_clients_write_during_the_session(tmp_path):
    """`live --browse --tls-keylog FILE`: secrets written to the file after the browser started decrypt the
    connections captured after them, as in `live`."""
    from kdissect.browse.live import LiveFeed

    tls = ROOT / "captures" / "tls13-aes128-kafka-python.pcap"
    plain = exchanges(ROOT / "captures" / "tls13-aes128-kafka-python-plain.pcap")
    replay = Replay(tls)
    log = tmp_path / "keys.log"
    log.write_bytes(b"")

    async def run():
        with open(tmp_path / "kept.pcap", "wb") as store:
            feed = LiveFeed(replay, store, packets=len(replay.all), keylog=log)
            app = BrowseApp(tmp_path / "kept.pcap", Options(tls_keylog=b""), live=feed)
            async with app.run_test(size=(160, 45)) as pilot:
                await pilot.pause(0.3)
                log.write_bytes(tls.with_suffix(".keylog").read_bytes())  # the clients log their secrets
                replay.release(len(replay.all))
                await settled(app, pilot)
                rows = [app.index.row(i) for i in range(len(app.index))]
                assert [(r.api_key, r.correlation_id, r.status) for r in rows] == [(e.api_key, e.correlation_id, e.status) for e in plain]

    asyncio.run(run())


@pytest.mark.parametrize("extra", [["--json"], ["--count", "3"]])
def test_live_browse_refuses_what_only_a_printed_session_does(extra):
    import subprocess

    from tests.test_live import live_command

    done = subprocess.run(live_command("-i", "lo", "--browse", *extra), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "kdissect: error: --browse shows every exchange in the browser: --json, --count and --all-events do not go with it"
    ]


def test_live_browse_starts_with_a_filter_before_any_packet(tmp_path):
    """`live --browse -Y EXPR`: the filter applies before anything was captured; its rows come as they do."""
    from kdissect.browse.live import LiveFeed

    replay = Replay(GROUP)
    joins = [e.id for e in exchanges(GROUP, "api == JoinGroup")]

    async def run():
        with open(tmp_path / "kept.pcap", "wb") as store:
            app = BrowseApp(tmp_path / "kept.pcap", Options(), "api == JoinGroup", live=LiveFeed(replay, store, packets=len(replay.all)))
            async with app.run_test(size=(160, 45)) as pilot:
                await pilot.pause(0.3)
                assert app.exchanges.matches == [] and app.exchanges.pass_done
                replay.release(len(replay.all))
                await settled(app, pilot)
                assert listed(app) == joins

    asyncio.run(run())


def test_the_flows_pane_shows_the_first_connections_and_sums_the_rest(monkeypatch):
    """Past `ROWS` connections (here 3), one row counts the rest and sums their exchanges and errors; Enter on it
    changes nothing."""
    import kdissect.browse.flows as flows_pane

    monkeypatch.setattr(flows_pane, "ROWS", 3)
    by_connection, errors = Counter(), Counter()
    for e in exchanges(GROUP):
        by_connection[e.connection.id] += 1
        errors[e.connection.id] += len(exchange_errors(e))
    rest = sorted(by_connection)[3:]
    assert rest

    async def script(app, pilot):
        flows = app.query_one("#flows")
        assert flows.row_count == 4
        last = [cell.plain for cell in flows.get_row_at(3)]
        assert last[0] == f"{len(rest)} more"
        assert last[3] == str(sum(by_connection[c] for c in rest)) and last[4] == str(sum(errors[c] for c in rest))
        flows.focus()
        flows.move_cursor(row=3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.exchanges.applied in (None, "")

    drive(GROUP, script)
