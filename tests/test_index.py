"""A capture asked twice is read once (kdissect/index/): the first `read` keeps the capture's index in the cache,
and `read -Y` answers from it, reading back only the frames of the exchanges the filter may keep.

What the index answers must be what a full read prints, byte for byte: on every capture here and in
../shared/captures-public, for filters the index decides and filters it cannot, with the read-back forced even
where the candidates span most of the file (`answer.SHARE`). A pcapng file is not indexed (its packets have no
checkpoints yet) and reads as before. A changed file is never answered from its stale
index, and --no-cache neither answers nor keeps one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kdissect.browse import scan
from kdissect.capture import open_capture
from kdissect.cli import main
from kdissect.dissector import Options
from kdissect.filter import compile_filter
from kdissect.index import answer, entry
from kdissect.schema import BUILTIN

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT.parent / "shared" / "captures-public"
CAPTURES = sorted(ROOT.glob("captures/*.pcap")) + sorted(PUBLIC.glob("*.pcap"))
FILTERS = (
    "api == JoinGroup or api == SyncGroup",  # the session a SyncGroup's assignment is read with
    "api == Produce",
    "latency_ms > 100",
    "connection == 2 and api != Fetch",
    "status == malformed",
    'client_id contains "-" and version >= 3',
    'client_id == ""',  # an empty client id is not a missing one: arkime__kafka.pcap sends one
    "error",  # the index does not hold errors: every exchange is a candidate
)


def run(*args: str | Path) -> int:
    try:
        main([str(a) for a in args])
    except SystemExit as exit:
        return int(exit.code or 0)
    return 0


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("KDISSECT_CACHE", str(folder))
    return folder


def answered(capture: Path, expression: str) -> list | None:
    index = entry.load(str(capture), Options())
    assert index is not None
    return answer.exchanges(str(capture), Options(), index, answer.candidates(index, compile_filter([("-Y", expression)], BUILTIN).keep))


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_the_index_answers_as_a_full_read(capture: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answer, "SHARE", 0)  # read back however many candidates there are
    full = tmp_path / "full"
    status = run("read", capture, "--json", "--jobs", "1", "-o", full)
    with open_capture(capture) as source:
        plain = source.format == "pcap" and source.compression is None
    assert bool(list(cache.glob("index/*.kdx"))) == plain, "the first read of a plain pcap file keeps its index"
    for expression in FILTERS:
        shown, told = tmp_path / "index.json", tmp_path / "full.json"
        assert run("read", capture, "-Y", expression, "--json", "-o", shown) == status
        assert run("read", capture, "-Y", expression, "--json", "--no-cache", "-o", told) == status
        assert shown.read_bytes() == told.read_bytes(), expression


def test_a_filter_on_headers_is_answered_from_a_few_frames(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a capture of a consumer group, `api == JoinGroup` reads back the packets from each JoinGroup's request to
    its response on its connection; `error` (which the index does not hold) and a capture without an index are
    read the usual way."""
    capture = ROOT / "captures" / "consumer-group-confluent.pcap"
    assert run("read", capture, "--json", "-o", tmp_path / "all.json") == 0
    index = entry.load(str(capture), Options())
    assert index is not None and len(index.columns) == 96 and index.packets == 357
    monkeypatch.setattr(answer, "SHARE", 0)  # small as it is, the capture is all JoinGroups' waits
    fed = []
    between = scan._between
    monkeypatch.setattr(scan, "_between", lambda packets, first, last: (fed.append(p) or p for p in between(packets, first, last)))
    joins = answered(capture, "api == JoinGroup")
    assert joins is not None and [e.id for e in joins] == [25, 26, 43, 51, 52, 80]
    assert [e.queued is not None for e in joins] == [True] * 6
    assert 0 < len(fed) < index.packets
    chosen = answer.candidates(index, compile_filter([("-Y", "api == JoinGroup")], BUILTIN).keep)
    assert answer.exchanges(str(capture), Options(), index, chosen, stopping=lambda: True) is None  # a browse's new filter
    assert compile_filter([("-Y", "error")], BUILTIN).keep is None  # headers never decide it: read reads the file
    assert answered(capture, "error or api == JoinGroup") is not None
    monkeypatch.setattr(answer, "SHARE", 3)
    assert answered(capture, "api != JoinGroup") is None  # most of the file: read the usual way
    shutil.rmtree(cache)
    assert entry.load(str(capture), Options()) is None


def test_a_changed_file_is_never_answered_from_its_stale_index(cache: Path, tmp_path: Path) -> None:
    capture = tmp_path / "capture.pcap"
    shutil.copy(ROOT / "captures" / "consumer-group-confluent.pcap", capture)
    assert run("read", capture, "--json", "-o", tmp_path / "first.json") == 0
    assert entry.load(str(capture), Options()) is not None
    shutil.copy(ROOT / "captures" / "admin-confluent.pcap", capture)  # another capture in its place
    os.utime(capture, ns=(1, 1))
    assert entry.load(str(capture), Options()) is None
    shown, told = tmp_path / "shown.json", tmp_path / "told.json"
    assert run("read", capture, "-Y", "api == Metadata", "--json", "-o", shown) == 0
    assert run("read", capture, "-Y", "api == Metadata", "--json", "--no-cache", "-o", told) == 0
    assert shown.read_bytes() == told.read_bytes() and b"Metadata" in told.read_bytes()
    with capture.open("ab") as f:  # appended to, same modification time: the digest of its end tells
        f.write(b"\0" * 16)
    os.utime(capture, ns=(1, 1))
    assert entry.load(str(capture), Options()) is None


def test_no_cache_neither_answers_nor_keeps(cache: Path, tmp_path: Path) -> None:
    capture = ROOT / "captures" / "consumer-group-confluent.pcap"
    assert run("read", capture, "--json", "--no-cache", "-o", tmp_path / "a.json") == 0
    assert not list(cache.glob("index/*.kdx"))
    os.environ["KDISSECT_CACHE"] = ""
    assert run("read", capture, "--json", "-o", tmp_path / "a.json") == 0
    assert entry.load(str(capture), Options()) is None


@pytest.mark.parametrize("name", ["consumer-group-confluent.pcap", "admin-kafka-python.pcap", "values-protobuf-confluent.pcap"])
def test_show_answers_from_the_index_as_from_the_file(name: str, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`show` by number, correlation id, packet and filter, with and without bytes, reads back what it prints."""
    monkeypatch.setattr(answer, "SHARE", 0)
    capture = ROOT / "captures" / name
    assert run("read", capture, "--json", "-o", tmp_path / "all.json") == 0
    index = entry.load(str(capture), Options())
    assert index is not None
    n = len(index.columns)
    read_back = []
    exchanges = answer.exchanges
    monkeypatch.setattr(answer, "exchanges", lambda *args: read_back.append(exchanges(*args)) or read_back[-1])
    for choice in (["--exchange", f"1,{n // 2},{n}"], ["--correlation-id", "3", "-x"], ["--frame", "40"], ["-Y", "api == Metadata"]):
        shown, told = tmp_path / "index.txt", tmp_path / "full.txt"
        assert run("show", capture, *choice, "-o", shown) == run("show", capture, *choice, "--no-cache", "-o", told)
        assert shown.read_bytes() == told.read_bytes(), choice
    assert len(read_back) == 4 and (index.registry or all(found is not None for found in read_back))


def test_the_indexes_are_held_to_the_cache_budget(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `$KDISSECT_CACHE_MB`, the least recently used index goes first; the one just made stays."""
    monkeypatch.setenv("KDISSECT_CACHE_MB", "0")
    first, second = ROOT / "captures" / "consumer-group-confluent.pcap", ROOT / "captures" / "admin-confluent.pcap"
    assert run("read", first, "--json", "-o", tmp_path / "a.json") == 0
    assert entry.load(str(first), Options()) is not None
    assert run("read", second, "--json", "-o", tmp_path / "b.json") == 0
    assert entry.load(str(second), Options()) is not None and entry.load(str(first), Options()) is None
    assert len(list(cache.glob("index/*.kdx"))) == 1


@pytest.mark.parametrize("name", ["client-confluent.pcap", "client-kafka-python.pcap", "consumer-group-kafka-python.pcap"])
def test_records_answer_from_the_index_as_from_the_file(name: str, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`records` on a filter of headers (a connection, a client, a time) reads back the Produce and Fetch exchanges
    it keeps, and prints their records as a read of the file does, --count and per-record filters included."""
    monkeypatch.setattr(answer, "SHARE", 0)
    capture = ROOT / "captures" / name
    assert run("read", capture, "--json", "-o", tmp_path / "all.json") == 0
    read_back = []
    exchanges = answer.exchanges
    monkeypatch.setattr(answer, "exchanges", lambda *args: read_back.append(exchanges(*args)) or read_back[-1])
    choices = (
        ["-Y", "connection >= 2"],
        ["-Y", "api == Fetch", "--json"],
        ["-Y", 'client_id contains "-" and record.offset >= 1', "-f", "%t %p %o %k %s\\n"],
        ["-Y", "api == Produce or api == Fetch", "-c", "3"],
    )
    for choice in choices:
        shown, told = tmp_path / "index.txt", tmp_path / "full.txt"
        assert run("records", capture, *choice, "-o", shown) == run("records", capture, *choice, "--no-cache", "-o", told)
        assert shown.read_bytes() == told.read_bytes(), choice
        assert told.stat().st_size > 0, choice
    assert len(read_back) == len(choices) and all(found is not None for found in read_back)


def test_a_damaged_index_is_read_as_none(cache: Path, tmp_path: Path) -> None:
    """An entry that is not what kdissect wrote (cut short, overwritten) is never answered from: the file is read."""
    import zstandard

    capture = ROOT / "captures" / "consumer-group-confluent.pcap"
    assert run("read", capture, "--json", "-o", tmp_path / "all.json") == 0
    (kept,) = cache.glob("index/*.kdx")
    whole = zstandard.ZstdDecompressor().decompress(kept.read_bytes())
    for damaged in (whole[:-7], b"{}\n" + whole.partition(b"\n")[2], b"not json\n", whole.replace(b'"lengths":96', b'"lengths":97')):
        kept.write_bytes(zstandard.ZstdCompressor().compress(damaged))
        assert entry.load(str(capture), Options()) is None and not kept.exists()
        shown, told = tmp_path / "shown.json", tmp_path / "told.json"
        assert run("read", capture, "-Y", "api == JoinGroup", "--json", "-o", shown) == 0
        assert run("read", capture, "-Y", "api == JoinGroup", "--json", "--no-cache", "-o", told) == 0
        assert shown.read_bytes() == told.read_bytes()
        assert entry.load(str(capture), Options()) is not None  # the read kept a whole index in its place
    kept.write_bytes(b"\x28\xb5\x2f\xfd garbage")
    assert entry.load(str(capture), Options()) is None


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_a_browse_keeps_the_index_a_read_keeps(capture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first browse of a plain pcap file makes `read`'s index on its pass (index/browsed.py): the same numbers,
    checkpoints, sessions, topic names and damage as the index a whole `read` keeps, so the next `read -Y`, `show`
    and `records` answer from it as from the read's."""
    same_index(capture, tmp_path, monkeypatch)


def test_a_browse_counts_what_a_damaged_capture_lost_as_a_read_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment lost in the middle of a frame and a last record cut short: the damage the index keeps (a `read -Y`
    answered from it exits 1, as the whole read did) is counted by a browse's pass as by a read."""
    from kdissect.capture.writer import PcapWriter
    from kdissect.testing.damage import data_segments, drop

    with open_capture(ROOT / "captures" / "many-records-mtu1500.pcap") as source:
        packets = list(source.packets())
    lost = drop(packets, [s for s in data_segments(packets) if s.length > 1000][5].position)  # inside a Produce's batch
    capture = tmp_path / "damaged.pcap"
    with capture.open("wb") as out:
        PcapWriter(out, lost[0].linktype).write_all(lost)
    capture.write_bytes(capture.read_bytes()[:-10])
    index = same_index(capture, tmp_path, monkeypatch)
    assert index is not None and {"tcp.gap", "frame.incomplete", "pcap.truncated"} <= set(index.damage), index.damage


def same_index(capture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> entry.CaptureIndex | None:
    """The index a browse of `capture` keeps, once checked to be the one a read keeps (None for a file neither indexes)."""
    import threading

    from kdissect.browse.app import BrowseApp

    def index_pass_alone(app: BrowseApp) -> None:  # `kdissect browse` as a user runs it, its screen aside
        app.indexer.run(threading.Event(), lambda message: None)

    monkeypatch.setattr(BrowseApp, "run", index_pass_alone)

    def index_of(made_by: str) -> entry.CaptureIndex | None:
        monkeypatch.setenv("KDISSECT_CACHE", str(tmp_path / made_by))
        assert run(made_by, capture, *(["--json", "--jobs", "1", "-o", tmp_path / "all.json"] if made_by == "read" else [])) in (0, 1)
        return entry.load(str(capture), Options())

    by_read, by_browse = index_of("read"), index_of("browse")
    with open_capture(capture) as source:
        if not entry.indexable(source):  # a pcapng file, whatever its name says
            assert by_read is None and by_browse is None
            return None
    assert by_read is not None and by_browse is not None
    assert [a.tobytes() for a in by_browse.columns.named().values()] == [a.tobytes() for a in by_read.columns.named().values()]
    assert {name: value for name, value in vars(by_browse).items() if name != "columns"} == {
        name: value for name, value in vars(by_read).items() if name != "columns"
    }
    return by_browse


def test_a_browse_of_a_registrys_own_records_keeps_an_index_that_declines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the registry's HTTP, its `_schemas` records alone teach a read's values as they come: a read's index
    then declines, and so does the one a browse keeps, though a browse's list reads no value."""
    import threading

    from kdissect.browse.index import Index
    from kdissect.browse.indexer import Indexer
    from kdissect.index.browsed import kept
    from tests.test_values import without

    capture = without(ROOT / "captures" / "values-avro-confluent.pcap", tmp_path / "no-http.pcap", {8081})
    index = same_index(capture, tmp_path, monkeypatch)
    assert index is not None and index.registry
    keeping, rows = kept(capture, Options()), Index(BUILTIN.names)  # browse's own, kept and served: it still knows
    assert keeping is not None and not keeping.registry()
    indexer = Indexer(capture, Options(), keeping=keeping)
    indexer.run(threading.Event(), lambda message: rows.extend(message.batch) if isinstance(message, Indexer.Indexed) else None)
    keeping.save(rows, 0, indexer.learnt())
    again = kept(capture, Options())
    assert again is not None and not again.registry() and again.load() is not None and again.registry()
