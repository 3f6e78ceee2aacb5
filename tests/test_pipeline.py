"""The Spark pipeline (kdissect/pipeline): splitting captures, shipping packets, and tables equal to the CLI's.

Three layers, each against the single-process CLI path (`make_dissector` over `open_capture`, `exchange_json`):

- pure functions: connection keys, blobs (record sync and range planning are tested with the capture formats);
- the stages without Spark: ranges planned, indexed, settled and read, rows sorted as the shuffle sorts them,
  the core stage run over them; tiny ranges so every capture is cut in many places;
- the Spark job in local mode (skipped, saying why, when pyspark or Java is missing): Parquet tables that
  pandas and pyarrow open, holding exactly the CLI's exchanges, records and diagnostics.
"""

from __future__ import annotations

import glob
import json
import os
from collections import Counter, defaultdict

import pytest

pa = pytest.importorskip("pyarrow", reason="the pipeline needs pyarrow: pip install 'kdissect[spark]'")

from kdissect.capture import open_capture, ranges
from kdissect.capture.linktypes import LINKTYPE_ETHERNET
from kdissect.capture.writer import PcapngWriter, PcapWriter
from kdissect.dissector import Options, make_dissector
from kdissect.events import (
    Exchange,
    Notice,
)
from kdissect.filter import compile_filter
from kdissect.net.flow_key import MALFORMED, flow_key
from kdissect.net.malformed import Malformed
from kdissect.net.segments import SegmentDecoder
from kdissect.pipeline import rows
from kdissect.pipeline.blobs import pack, unpack
from kdissect.pipeline.config import values_of
from kdissect.pipeline.core import CoreStage
from kdissect.pipeline.inputs import InputError, expand
from kdissect.pipeline.job import embedded_secrets
from kdissect.pipeline.reader import read_split
from kdissect.pipeline.tables import input_batch as to_batch
from kdissect.schema import BUILTIN
from kdissect.testing import craft
from kdissect.views.json_lines import decode_bytes, exchange_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT = sorted(glob.glob(os.path.join(ROOT, "captures", "*.pcap*")))
PUBLIC_DIR = os.path.normpath(os.path.join(ROOT, "..", "shared", "captures-public"))
PUBLIC = sorted(glob.glob(os.path.join(PUBLIC_DIR, "*.pcap*")))
ALL = PROJECT + PUBLIC


def is_pcapng(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x0a\x0d\x0d\x0a"


# the CLI's view of a capture


def cli(path: str, expression: str | None = None) -> tuple[list[dict], list[dict], list[tuple]]:
    """(exchange JSON objects, notices, file diagnostics) as the single-process path makes them (with -Y expression)."""
    exchanges, notices = [], []
    wanted = compile_filter([("-Y", expression)] if expression else [], BUILTIN)
    stable: dict[int, int] = {}
    with open_capture(path) as capture:
        dissector = make_dissector(Options(keep=wanted.keep))
        capture.secrets_to(dissector.add_tls_keylog)  # as the CLI does: a pcapng's own TLS secrets
        for event in dissector.run(capture.packets()):
            if isinstance(event, Exchange):
                stable[event.id] = rows.exchange_id(event)
                if wanted.matches(event):
                    exchanges.append(
                        with_stable_ahead(exchange_json(event, values_of({})), stable)
                    )  # values read as an executor reads them
            elif isinstance(event, Notice):
                d = event.diagnostic
                notices.append((d.code, d.message, d.scope, d.offset, event.packet or None))
        files = [(d.code, d.message, d.offset) for d in capture.diagnostics()]
    return exchanges, notices, files


def with_stable_ahead(exchange: dict, stable: dict[int, int]) -> dict:
    """The CLI's JSON with `queued_behind` the exchange_id of the exchange it names, as the tables' json has it."""
    if exchange["queued_behind"] is not None:
        exchange["queued_behind"] = stable[exchange["queued_behind"]]
    return exchange


def _strip_topic_annotations(value):
    """Drop `_kdissect.TopicId` (a name learnt on another connection): the job names topics in columns instead."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "_kdissect" and isinstance(v, dict):
                v = {a: b for a, b in v.items() if a != "TopicId"}
                if not v:
                    continue
            out[k] = _strip_topic_annotations(v)
        return out
    if isinstance(value, list):
        return [_strip_topic_annotations(v) for v in value]
    return value


def comparable(exchange: dict) -> str:
    """An exchange's JSON without what is numbered per run (ids) or named across connections (topics)."""
    e = _strip_topic_annotations(exchange)
    e.pop("id")
    e.pop("topics")
    e["connection"] = {k: v for k, v in e["connection"].items() if k != "id"}
    return json.dumps(e, sort_keys=True)


def cli_records(exchange: dict) -> list[tuple]:
    """(direction, partition, offset, timestamp, key, value, headers) of every record in a CLI exchange."""
    out = []
    for side, direction in (("request", "produce"), ("response", "fetch")):
        message = exchange[side]
        if not message or not message["body"]:
            continue
        _walk_records(message["body"], direction, None, out)
    return out


def _walk_records(node, side, partition, out):
    if isinstance(node, dict):
        for name in ("Partition", "PartitionIndex", "Index"):
            if isinstance(node.get(name), int):
                partition = node[name]
        for v in node.values():
            if isinstance(v, dict) and "batches" in v and "size" in v:
                for batch in v["batches"]:
                    _batch_records(batch, side, partition, out)
            else:
                _walk_records(v, side, partition, out)
    elif isinstance(node, list):
        for item in node:
            _walk_records(item, side, partition, out)


def _batch_records(batch, side, partition, out):
    if batch["format"] == "v2":
        for r in batch["records"]:
            headers = tuple(
                (h["key"] if isinstance(h["key"], str) else decode_bytes(h["key"]).decode(), decode_bytes(h["value"])) for h in r["headers"]
            )
            out.append((side, partition, r["offset"], r["timestamp"], decode_bytes(r["key"]), decode_bytes(r["value"]), headers))
        return
    if batch["codec"] == "none":
        out.append((side, partition, batch["offset"], batch["timestamp"], decode_bytes(batch["key"]), decode_bytes(batch["value"]), ()))
    for inner in batch["messages"]:
        _batch_records(inner, side, partition, out)


def true_offsets(path: str) -> list[int]:
    with open_capture(path) as capture:
        return [p.offset for p in capture.packets()]


# flow keys and blobs


def test_both_directions_of_a_connection_share_a_key_and_others_do_not():
    conv = craft.Conversation(linktype=LINKTYPE_ETHERNET)
    packets = conv.handshake() + conv.send(craft.CLIENT, b"x" * 100) + conv.send(craft.SERVER, b"y" * 50)
    keys = {flow_key(p.linktype, p.data) for p in packets}
    assert len(keys) == 1 and next(iter(keys))[:1] == b"T"
    other = craft.Conversation(linktype=LINKTYPE_ETHERNET, client="10.0.0.9")
    assert flow_key(LINKTYPE_ETHERNET, other.handshake()[0].data) not in keys


def test_fragments_group_by_addresses_and_non_tcp_is_not_shipped():
    conv = craft.Conversation(linktype=LINKTYPE_ETHERNET)
    pieces = conv.fragmented(craft.CLIENT, b"z" * 3000, 3)
    keys = {flow_key(p.linktype, p.data) for p in pieces}
    assert len(keys) == 1 and next(iter(keys))[:1] == b"F"
    udp = craft.frame(LINKTYPE_ETHERNET, craft.ip("10.0.0.1", "10.0.0.2", bytes(8), proto=17))
    assert flow_key(LINKTYPE_ETHERNET, udp) is None
    assert flow_key(LINKTYPE_ETHERNET, b"\0" * 12 + b"\x08\x00\x45") == MALFORMED
    assert flow_key(9999, b"anything") is None


@pytest.mark.parametrize("path", ALL, ids=os.path.basename)
def test_every_tcp_packet_is_keyed_by_the_ends_the_core_reads(path):
    """The key and the core's segments read the same headers: both ends of each segment make its key, and a
    packet the core calls malformed is shipped, not dropped."""
    decoder = SegmentDecoder(1 << 24)
    with open_capture(path) as capture:
        for packet in capture.packets():
            key = flow_key(packet.linktype, packet.data)
            try:
                segment = decoder.decode(packet)
            except Malformed:
                assert key is not None
                continue
            if segment is not None and key[:1] == b"T":
                ends = sorted([segment.src + segment.sport.to_bytes(2, "big"), segment.dst + segment.dport.to_bytes(2, "big")])
                assert key == b"T" + ends[0] + ends[1], packet.index
            elif segment is not None:
                assert key[:1] == b"F"  # the last fragment of a datagram completes it


def test_blobs_give_back_the_packets():
    conv = craft.Conversation(linktype=LINKTYPE_ETHERNET)
    packets = conv.handshake() + conv.send(craft.CLIENT, b"q" * 3000)
    blob = b"".join(pack(p._replace(index=100 + i)) for i, p in enumerate(packets))
    back = list(unpack(blob))
    assert [p._replace(index=0) for p in back] == [p._replace(index=0) for p in packets]
    assert [p.index for p in back] == list(range(100, 100 + len(packets)))


# the stages without Spark


def as_pcapng(path: str, out: str, sections: int = 1) -> None:
    """The capture rewritten as pcapng: two interfaces (the second described mid-file), and `sections`
    sections, the later ones big-endian, so ranges start with other sections' and interfaces' blocks in force."""
    with open_capture(path) as capture:
        packets = list(capture.packets())
    with open(out, "wb") as f:
        w = PcapngWriter(f)
        w.interface(packets[0].linktype, tsresol=9)
        per = max(1, len(packets) // sections)
        for i, p in enumerate(packets):
            if i and i % per == 0 and sections > 1 and i // per < sections:
                w.section(big_endian=True)
                w.interface(99)  # an interface no packet uses, so numbers shift
                w.interface(p.linktype, tsresol=6)
            elif i == len(packets) // 3 and sections == 1:
                w.interface(p.linktype, tsresol=6)
            iface = 1 if (sections > 1 and i >= per) or (sections == 1 and i > len(packets) // 3) else 0
            w.packet(p, iface)


def simulate(paths: list[str], split_size: int, tasks: int = 3, options: dict | None = None):
    """Every stage of the job but Spark's: returns (core output per kind as Python rows, settled ranges).
    `options` join the job's config, as `kdissect spark`'s do."""
    files = expand(paths)
    infos = []
    for file_id, f in enumerate(files):
        with open(f.path, "rb") as raw:
            infos.append(ranges.probe(file_id, f.path, raw, f.size, split_size))
    settled = []
    for info in infos:
        planned = ranges.plan(info, split_size)
        if info.kind in ("pcap", "pcapng"):
            found = []
            for s in planned:
                with open(s.path, "rb") as raw:
                    found.append(ranges.index_range(info, s, raw))
            settled.extend(ranges.settle(info, planned, found)[0])
        else:
            settled.extend(planned)
    shuffled = defaultdict(list)
    for s in settled:
        for row in read_split(s):
            shuffled[hash((row.file_id, row.key)) % tasks].append(row)
    config = {"paths": {str(i.file_id): i.path for i in infos}, "ports": [9092]}
    config["tls_secrets"] = embedded_secrets({i.file_id: i.path for i in infos})  # as the job does
    config.update(options or {})
    out = defaultdict(list)
    for task_rows in shuffled.values():
        task_rows.sort(key=lambda r: (r.file_id, r.key, r.split, r.chunk))
        batches = [to_batch(task_rows[i : i + 7]) for i in range(0, len(task_rows), 7)]
        for batch in CoreStage(config)(iter(batches)):
            table = batch.to_pydict()
            for i, kind in enumerate(table["kind"]):
                out[kind].append({**table[kind][i], "date": table["date"][i], "api": table["api"][i]})
    names = {t["topic_id"]: t["name"] for t in out["topic"]}
    for e in out["exchange"]:
        e["topics"] = list(dict.fromkeys(e["topics"] + [names[i] for i in e["unresolved_topic_ids"] if i in names]))
    for r in out["record"]:
        r["topic"] = r["topic"] or names.get(r["topic_id"])
    return out, settled


def assert_same_as_cli(out: dict, paths: list[str], rename: dict[str, str] | None = None, expression: str | None = None) -> None:
    """The pipeline's rows hold exactly what the CLI says about each capture (with -Y expression)."""
    rename = rename or {}
    by_capture = defaultdict(lambda: defaultdict(list))
    for kind in ("exchange", "record", "diagnostic"):
        for row in out[kind]:
            by_capture[rename.get(row["capture"], row["capture"])][kind].append(row)
    for path in paths:
        exchanges, notices, files = cli(path, expression)
        got = by_capture[path]
        want = Counter(comparable(e) for e in exchanges)
        assert Counter(comparable(json.loads(r["json"])) for r in got["exchange"]) == want, path
        assert len({r["exchange_id"] for r in got["exchange"]}) == len(got["exchange"])  # ids are unique
        want_topics = Counter(tuple(sorted(e["topics"])) for e in exchanges)
        assert Counter((tuple(sorted(r["topics"]))) for r in got["exchange"]) == want_topics, path
        want_records = Counter(r for e in exchanges for r in cli_records(e))
        got_records = Counter(
            (r["direction"], r["partition"], r["record_offset"], r["timestamp"], r["key"], r["value"])
            + (tuple((h["key"], h["value"]) for h in r["headers"]),)
            for r in got["record"]
        )
        assert got_records == want_records, path
        named = [r for r in got["record"] if r["topic"] is None]
        assert not named or all(r["topic_id"] is None for r in named)
        exchange_diagnostics = Counter(
            (d["code"], d["message"], d["scope"], d["offset"])
            for e in exchanges
            for side in ("request", "response")
            if e[side]
            for d in e[side]["diagnostics"]
        )
        by_source = defaultdict(list)
        for d in got["diagnostic"]:
            by_source[d["source"]].append(d)
        of_exchanges = [(d["code"], d["message"], d["scope"], d["scope_offset"]) for d in by_source["request"] + by_source["response"]]
        assert Counter(of_exchanges) == exchange_diagnostics, path
        of_streams = [
            (d["code"], d["message"], d["scope"], d["scope_offset"], d["packet"]) for d in by_source["stream"] + by_source["packet"]
        ]
        assert Counter(of_streams) == Counter(notices), path
        assert Counter((d["code"], d["message"], d["scope_offset"]) for d in by_source["file"]) == Counter(files), path


def test_stages_without_spark_match_the_cli_on_every_capture():
    out, settled = simulate(ALL, split_size=1 << 30)
    assert all(s.whole for s in settled)
    assert_same_as_cli(out, ALL)


def test_a_workers_next_task_reuses_its_decoder_with_the_capture_budget_again():
    """A Python worker keeps its compiled decoders for its next tasks (core.py); each task starts with the
    capture's whole record budget, so its tables do not depend on the tasks before it."""
    from kdissect.pipeline import config as core

    path = next(p for p in PROJECT if "consumer-group-confluent" in p)
    config = {"paths": {"0": path}, "ports": [9092]}
    with open(path, "rb") as raw:
        info = ranges.probe(0, path, raw, os.path.getsize(path), 1 << 30)
    task_rows = sorted((r for s in ranges.plan(info, 1 << 30) for r in read_split(s)), key=lambda r: (r.key, r.split, r.chunk))

    def task() -> tuple[list, object]:
        out = [b.to_pylist() for b in CoreStage(config)([to_batch(task_rows)])]
        return out, next(iter(core._decoders.values()))

    core._decoders.clear()
    first, decoder = task()
    assert any(row["kind"] == "record" for batch in first for row in batch)
    decoder.records_left = -(10**9)  # as if the tasks before had spent the budget
    second, again = task()
    assert again is decoder and len(core._decoders) == 1
    assert second == first


def test_the_job_decrypts_tls_with_the_key_log_it_is_given():
    """`kdissect spark --tls-keylog`: the key log travels in the config to every task, cut in ranges or not."""
    path = os.path.join(ROOT, "captures", "tls12-chacha20-aiokafka.pcap")
    keylog = open(path[: -len(".pcap")] + ".keylog", "rb").read()
    with open_capture(path) as capture:
        events = list(make_dissector(Options(tls_keylog=keylog)).run(capture.packets()))
    stable = {e.id: rows.exchange_id(e) for e in events if isinstance(e, Exchange)}
    want = Counter(comparable(with_stable_ahead(exchange_json(e), stable)) for e in events if isinstance(e, Exchange))
    assert want
    for split_size in (1 << 30, 4096):
        out, _ = simulate([path], split_size=split_size, options={"tls_keylog": keylog})
        assert Counter(comparable(json.loads(r["json"])) for r in out["exchange"]) == want


FILTER = "api == Fetch or error or latency_ms > 5"
"""No topic test: on the executors a topic id is named only from its own connection (docs/filters.md)."""


def test_a_filter_keeps_on_the_executors_what_the_cli_shows():
    out, _ = simulate(PROJECT, split_size=20000, options={"filter": FILTER})
    everything, _ = simulate(PROJECT, split_size=20000)
    assert 0 < len(out["exchange"]) < len(everything["exchange"]) and len(out["record"]) < len(everything["record"])
    assert_same_as_cli(out, PROJECT, expression=FILTER)


def test_the_records_table_carries_the_decoded_values_of_the_schemas_it_is_given(tmp_path):
    """`kdissect spark --schemas DIR`: the folder's schemas travel in the config; every record of the rig's Avro capture
    has the format, schema id and decoded JSON its manifest says (each record produced and fetched once)."""
    pytest.importorskip("fastavro")
    from kdissect.values.directory import load_folder
    from kdissect.values.schemas import Book, schema_record
    from rig.manifest import Manifest
    from rig.scenarios.values import ORDER_V1, ORDER_V2

    path = os.path.join(ROOT, "captures", "values-avro-confluent.pcap")
    lines = Manifest(path.replace(".pcap", ".manifest.jsonl")).read()
    guids = {line["id"]: line["guid"] for line in lines if line["kind"] == "schema"}
    (tmp_path / "v1.avsc").write_text(json.dumps(ORDER_V1))
    (tmp_path / "v2.avsc").write_text(json.dumps(ORDER_V2))
    entries = [{"file": f"v{n}.avsc", "id": n, "guid": guids[n]} for n in (1, 2)]
    (tmp_path / "schemas.json").write_text(json.dumps({"schemas": entries}))
    book = Book()
    load_folder(tmp_path, book)
    out, _ = simulate([path], split_size=20000, options={"schemas": [schema_record(s) for s in book]})
    told = {line["key"].encode(): line["decoded"] for line in lines if line["kind"] == "produced" and "decoded" in line}
    rows = [r for r in out["record"] if r["topic"] == "orders"]  # a produced record's offset is its batch's: keys tell them
    assert len(rows) == 2 * len(told)
    for row in rows:
        expected = told[row["key"]]
        assert row["value_format"] == expected["format"], row["key"]
        if expected["framing"] != "none":
            assert row["value_schema_id"] == str(expected["schema_id"])
        if "error" in expected:
            assert row["value_decoded"] is None  # a value that breaks its schema has no decoded JSON
        else:
            assert json.loads(row["value_decoded"]) == expected["value"], row["key"]


@pytest.mark.parametrize("split_size", [4096, 20000, 100_003])
def test_small_ranges_change_nothing(split_size):
    out, settled = simulate(PROJECT, split_size=split_size)
    assert max(s.ordinal for s in settled) >= 5  # the captures really were cut
    assert_same_as_cli(out, PROJECT)


@pytest.mark.parametrize("sections", [1, 3])
def test_pcapng_ranges_carry_the_sections_and_interfaces_in_force(tmp_path, sections):
    sources = [p for p in PROJECT if "mtu1500" in p or "consumer-group" in p]
    converted, rename = [], {}
    for path in sources:
        target = str(tmp_path / (os.path.basename(path) + ".pcapng"))
        as_pcapng(path, target, sections)
        converted.append(target)
        rename[target] = path
    out, settled = simulate(converted, split_size=8192)
    assert sum(not s.whole for s in settled) > len(converted)
    assert any(s.prefix[:4] == b"\x0a\x0d\x0d\x0a" and s.prefix[8:12] == b"\x1a\x2b\x3c\x4d" for s in settled) == (sections > 1)
    # packets keep their numbers and offsets: same as reading the pcapng file whole
    for target in converted:
        exchanges, _, _ = cli(target)
        got = [json.loads(r["json"]) for r in out["exchange"] if r["capture"] == target]
        assert Counter(comparable(e) for e in got) == Counter(comparable(e) for e in exchanges)


def test_packet_numbers_and_offsets_survive_the_cuts():
    path = next(p for p in PROJECT if "large-values" in p)
    out, _ = simulate([path], split_size=5000)
    exchanges, _, _ = cli(path)
    want = sorted((e["request"] or {}).get("packets", [0])[0] for e in exchanges)
    got = sorted(r["request_packets"][0] if r["request_packets"] else 0 for r in out["exchange"])
    assert got == want


def test_truncated_and_compressed_captures_read_whole_and_report_like_the_cli(tmp_path):
    import gzip

    path = next(p for p in PROJECT if "many-records" in p)
    data = open(path, "rb").read()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[: len(data) - 700])
    packed = tmp_path / "packed.pcap.gz"
    packed.write_bytes(gzip.compress(data))
    out, settled = simulate([str(cut), str(packed)], split_size=16384)
    assert [s.whole for s in settled if s.path == str(packed)] == [True]
    assert_same_as_cli(out, [str(cut), str(packed)])


def test_oddities_counted_in_every_range_add_up_to_the_cli_count(tmp_path):
    path = next(p for p in PROJECT if "many-records" in p)
    with open_capture(path) as capture:
        packets = [p._replace(orig_len=len(p.data) - 1) for p in capture.packets()]
    odd = tmp_path / "odd.pcap"
    with open(odd, "wb") as f:
        PcapWriter(f, packets[0].linktype).write_all(packets)
    out, settled = simulate([str(odd)], split_size=8192)
    assert len(settled) > 10
    assert_same_as_cli(out, [str(odd)])
    assert any(d["code"] == "pcap.caplen-exceeds-origlen" and f"({len(packets)} times" in d["message"] for d in out["diagnostic"])


def test_inputs_are_globs_directories_and_files(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("a.pcap", "sub/b.pcap", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    assert [os.path.basename(f.path) for f in expand([str(tmp_path)])] == ["a.pcap", "notes.txt", "b.pcap"]
    assert [os.path.basename(f.path) for f in expand([str(tmp_path / "**" / "*.pcap")])] == ["a.pcap", "b.pcap"]
    assert all(os.path.isabs(f.path) for f in expand([os.path.relpath(tmp_path / "a.pcap")]))
    with pytest.raises(InputError, match="no such file"):
        expand([str(tmp_path / "missing.pcap")])
    with pytest.raises(InputError, match="no file matches"):
        expand([str(tmp_path / "*.pcapng")])


def test_exchange_ids_are_the_first_packet_and_stream_offset():
    class Frame:
        first_packet, offset = 12345, (1 << 20) + 77

    class Message:
        frame = Frame

    class X:
        request, response = Message, None

    assert rows.exchange_id(X) == 12345 << 20 | 77


# the Spark job


@pytest.fixture(scope="module")
def spark(spark_ready):
    from kdissect.pipeline.session import start

    session = start("local[2]")
    yield session
    session.stop()


def test_missing_java_is_named_with_the_fix(monkeypatch, tmp_path):
    from kdissect.pipeline.session import SparkUnavailable, check_java

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkUnavailable, match="Java 17 or later.*JAVA_HOME"):
        check_java()


def test_missing_pyspark_is_named_with_the_fix(monkeypatch):
    import sys

    from kdissect.pipeline.session import SparkUnavailable, check_pyspark

    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(SparkUnavailable, match=r"pip install 'kdissect\[spark\]'"):
        check_pyspark()


@pytest.mark.parametrize("missing", ["pyspark", "pyarrow"])
def test_the_spark_command_without_its_extra_names_it(monkeypatch, tmp_path, capsys, missing):
    """As a user meets it: the command, not only the check, says what to install."""
    import sys

    from kdissect.cli import main

    for name in [m for m in sys.modules if m.split(".")[0] == missing or m.startswith("kdissect.pipeline")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(SystemExit) as exit:
        main(["spark", str(PROJECT[0]), "--out", str(tmp_path / "out"), "-q"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert f"({missing} is not installed): pip install 'kdissect[spark]'" in err and "internal error" not in err


def test_a_bad_format_fails_before_spark_starts(tmp_path):
    from kdissect.cli import UserError
    from kdissect.commands.spark import run_spark

    with pytest.raises(UserError, match="--format csv"):
        run_spark([PROJECT[0]], str(tmp_path / "out"), "local[1]", "csv", frozenset({9092}), True)


def test_missing_inputs_fail_before_spark_starts(tmp_path):
    from kdissect.cli import UserError
    from kdissect.commands.spark import run_spark

    with pytest.raises(UserError, match="no such file"):
        run_spark([str(tmp_path / "nothing.pcap")], str(tmp_path / "out"), "local[1]", "parquet", frozenset({9092}), True)


def read_table(out: str, name: str) -> list[dict]:
    import pyarrow.dataset as ds

    return ds.dataset(os.path.join(out, name), format="parquet", partitioning="hive").to_table().to_pylist()


INPUTS = [os.path.join(ROOT, "captures"), *PUBLIC]


@pytest.fixture(scope="module")
def every_capture(spark, tmp_path_factory):
    """The Spark job over every capture, the larger ones cut in ranges: (tables, totals, progress lines)."""
    from kdissect.pipeline.job import run

    out = str(tmp_path_factory.mktemp("spark") / "tables")
    lines: list[str] = []
    totals = run(spark, INPUTS, out, split_size=65536, progress=lines.append)
    return out, totals, lines


def test_spark_tables_hold_exactly_what_the_cli_finds(spark, every_capture):
    from kdissect.pipeline.job import run

    inputs = INPUTS
    out, totals, lines = every_capture
    assert totals.ranges > totals.files  # the larger captures were cut
    assert any("indexing" in line for line in lines)
    got = {kind: read_table(out, name) for kind, name in (("exchange", "exchanges"), ("record", "records"), ("diagnostic", "diagnostics"))}
    assert_same_as_cli(got, ALL)
    assert totals.exchanges == len(got["exchange"]) and totals.records == len(got["record"])
    assert totals.diagnostics == len(got["diagnostic"])
    assert totals.packets == sum(len(true_offsets(p)) for p in ALL)
    assert totals.files == len(ALL) and len(totals.skipped) == len(glob.glob(os.path.join(ROOT, "captures", "*"))) - len(PROJECT)
    # partitioned by date and API; pandas opens every table
    assert {os.path.basename(p).split("=")[0] for p in glob.glob(os.path.join(out, "exchanges", "*"))} >= {"date"}
    assert glob.glob(os.path.join(out, "records", "date=*", "api=Produce"))
    import pandas as pd

    frame = pd.read_parquet(os.path.join(out, "exchanges"))
    assert len(frame) == len(got["exchange"]) and {"api", "date", "json", "latency_ms"} <= set(frame.columns)
    assert "unresolved_topic_ids" not in frame.columns
    records = pd.read_parquet(os.path.join(out, "records"))
    assert records["value"].map(lambda v: v is None or isinstance(v, bytes)).all()
    diagnostics = pd.read_parquet(os.path.join(out, "diagnostics"))
    assert len(diagnostics) == len(got["diagnostic"])
    if PUBLIC:  # their file-level oddities have no API: the "none" partition must read back too
        assert "none" in set(diagnostics["api"])
    # the output directory is never overwritten
    from kdissect.pipeline.job import JobError

    with pytest.raises(JobError, match="exists already"):
        run(spark, inputs, out)


def test_both_engines_write_the_same_tables_row_by_row(every_capture, tmp_path):
    """`kdissect tables` (pyarrow, one process) and the Spark job (ranges of 64 KiB, keys spread over tasks) write
    the same four tables of every capture: the same schemas, partition directories and rows."""
    from kdissect.pipeline.local import LocalJob, captures_of

    spark_out = every_capture[0]
    paths, _ = captures_of(INPUTS)
    local_out = str(tmp_path / "local")
    totals = LocalJob(paths, local_out, {"ports": [9092]}).run()
    assert totals.exchanges == every_capture[1].exchanges and totals.findings == every_capture[1].findings > 0
    for name in ("exchanges", "records", "diagnostics", "findings"):
        assert assert_same_table(spark_out, local_out, name) > 0, name


def assert_same_table(one: str, other: str, name: str) -> int:
    """How many rows both tables hold, once they are found the same."""
    import pyarrow.dataset as ds

    tables = [ds.dataset(os.path.join(out, name), format="parquet", partitioning="hive") for out in (one, other)]
    assert tables[0].schema.remove_metadata().equals(tables[1].schema.remove_metadata()), name
    leaves = [{os.path.relpath(os.path.dirname(f), out) for f in t.files} for t, out in zip(tables, (one, other))]
    assert leaves[0] == leaves[1], name
    rows = [sorted(t.to_table().to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=repr)) for t in tables]
    assert len(rows[0]) == len(rows[1]), name
    different = [(a, b) for a, b in zip(*rows) if a != b]
    assert not different, (name, len(different), different[0])
    return len(rows[0])


def test_spark_applies_a_filter_on_the_executors(spark, tmp_path):
    from kdissect.pipeline.job import run

    path = next(p for p in PROJECT if "consumer-group-confluent" in p)
    out = str(tmp_path / "t")
    totals = run(spark, [path], out, options={"filter": FILTER})
    got = {"exchange": read_table(out, "exchanges"), "record": read_table(out, "records"), "diagnostic": read_table(out, "diagnostics")}
    assert 0 < totals.exchanges == len(got["exchange"]) < len(cli(path)[0])
    assert_same_as_cli(got, [path], expression=FILTER)
    # kdissect tables with the same filter: the same rows, and findings whose evidence the filter restricts
    from kdissect.pipeline.local import LocalJob

    LocalJob({0: path}, str(tmp_path / "local"), {"ports": [9092], "filter": FILTER}).run()
    same = {name: assert_same_table(out, str(tmp_path / "local"), name) for name in ("exchanges", "records", "diagnostics", "findings")}
    assert same["exchanges"] > 0 and same["findings"] > 0
    assert all(f"({FILTER})" in row["evidence_filter"] for row in read_table(out, "findings"))


def test_spark_reads_a_large_capture_in_ranges_with_the_cli_numbers(spark, tmp_path):
    from kdissect.pipeline.job import run

    path = next(p for p in PROJECT if "large-values" in p)
    out = str(tmp_path / "t")
    totals = run(spark, [path], out, split_size=32768)
    assert totals.ranges > 10
    got = {"exchange": read_table(out, "exchanges"), "record": read_table(out, "records"), "diagnostic": read_table(out, "diagnostics")}
    assert_same_as_cli(got, [path])
