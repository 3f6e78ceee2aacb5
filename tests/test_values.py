"""Record values read for what they say (docs/values.md), on the rig's captures of confluent-kafka's Avro, Protobuf and
JSON Schema serializers and of KafkaJS with @kafkajs/confluent-schema-registry (Avro): every record decodes to the
value its manifest says the serializer was given, with schemas from each source (the capture itself, a folder, a
registry); wrong and missing schemas are named diagnostics; record filters select exactly the records the manifest
says; the doctor names the producer of the unframed records; and
captured text reaches a terminal escaped."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytest.importorskip("fastavro")
pytest.importorskip("google.protobuf")
pytest.importorskip("jsonschema")

from kdissect.capture import open_capture
from kdissect.capture.writer import PcapWriter
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.records.encode import Draft, encode_batch
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, Clock, Conversation, request
from kdissect.values.framing import APICURIO, CONFLUENT_GUID, CONFLUENT_HEADER, GLUE, from_headers, from_prefix, read_indexes
from kdissect.values.reader import ValueReader
from kdissect.values.schemas import AVRO, Book, Schema
from kdissect.views.json_lines import decode_bytes
from rig.manifest import Manifest
from rig.registry import running_registry
from rig.scenarios.values import ITEM_SCHEMA, ITEM_SCHEMA_V2, ORDER_V1, ORDER_V2, PROTO_V1, PROTO_V2

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
FORMATS = ("avro", "protobuf", "json")
CAPTURED = (*FORMATS, "avro-kafkajs")
"""The value captures: confluent-kafka's, one a format, and KafkaJS's (values-avro-kafkajs), named by what follows
"values-"; the first word is the format."""
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "KDISSECT_CACHE": ""}


def capture(name: str) -> Path:
    """values-NAME.pcap, a bare format standing for confluent-kafka's (values-avro-confluent.pcap)."""
    return CAPTURES / (f"values-{name}.pcap" if "-" in name else f"values-{name}-confluent.pcap")


def manifest(fmt: str) -> list[dict]:
    return Manifest(str(capture(fmt).with_suffix(".manifest.jsonl"))).read()


def kdissect(*args: object, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect", *map(str, args)], capture_output=True, text=True, env=env or ENV, cwd=ROOT)


def records(path: Path, *args: object, env: dict | None = None) -> list[dict]:
    done = kdissect("records", path, "--json", *args, env=env)
    assert done.returncode in (0, 1), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def produced(fmt: str) -> dict[tuple[str, int], dict]:
    """The manifest's produced records that carry a decoded value, by (topic, offset)."""
    return {(line["topic"], line["offset"]): line for line in manifest(fmt) if line["kind"] == "produced" and "decoded" in line}


def assert_as_manifest(fmt: str, got: list[dict], source: str | None = None) -> None:
    """Every produced and fetched record of the manifest's topics reads as the manifest says the serializer was given."""
    expected = produced(fmt)
    topics = {topic for topic, _ in expected}
    seen = 0
    for record in got:
        if record["topic"] not in topics:
            continue
        line = expected[(record["topic"], record["offset"])]
        decoded, told = record.get("value_decoded"), line["decoded"]
        assert decode_bytes(record["value"]) == decode_bytes(line["value"])
        if told["framing"] == "none":
            assert decoded is None or decoded["framing"] == "none", record
            if told["format"] == "json":
                assert decoded["value"] == told["value"]
            else:
                assert decoded is None  # plain text: nothing more to say
        elif "error" in told:
            assert decoded["diagnostics"], record  # a value that breaks its schema says so
        else:
            assert decoded["value"] == told["value"], record["offset"]
            assert decoded["format"] == told["format"]
            assert decoded["framing"] == told["framing"]
            if told["schema_id"] is not None:
                assert decoded["schema_id"] == told["schema_id"]
            else:
                assert decoded["schema_id"] == told["guid"]
            assert not decoded["diagnostics"]
            if source is not None:
                assert source in decoded["why"] or decoded["subject"], decoded
        seen += 1
    assert seen == 2 * len(expected)  # each record produced and fetched once


# -- schemas learnt from the capture: the registry's HTTP answers and the _schemas topic -----------------------------


@pytest.mark.parametrize("fmt", CAPTURED)
def test_every_record_decodes_to_its_manifest_value_learnt_from_the_capture(fmt: str) -> None:
    assert_as_manifest(fmt, records(capture(fmt)))


@pytest.mark.parametrize("fmt", CAPTURED)
def test_the_registrys_http_answers_alone_teach_every_schema(fmt: str) -> None:
    """The core hands the registry's connections to the HTTP reader: every schema the clients registered or fetched."""
    from kdissect.values.http_sink import HttpLearning

    book = Book()
    dissector = make_dissector(Options(side_streams=HttpLearning(book.learn)))
    with open_capture(capture(fmt)) as source:
        list(dissector.run(source.packets()))
    assert sorted(s.id for s in book) == [1, 2]
    assert all(s.sources[0].startswith("capture: HTTP answer of 127.0.0.1:") for s in book)
    texts = {line["id"]: line["schema"] for line in manifest(fmt) if line["kind"] == "schema"}
    assert {s.id: s.text for s in book} == texts  # what the registry kept, byte for byte


def without(path: Path, out: Path, drop: set[int]) -> Path:
    """The capture without the packets of these TCP ports (the registry's, the connection writing _schemas)."""
    from kdissect.net.segments import SegmentDecoder

    decoder = SegmentDecoder(1 << 20)
    with open_capture(path) as source, open(out, "wb") as stream:
        writer = None
        for packet in source.packets():
            segment = decoder.decode(packet)
            if segment is not None and (segment[3] in drop or segment[5] in drop):
                continue
            writer = writer or PcapWriter(stream, packet.linktype)
            writer.write(packet)
    return out


def bare(fmt: str, tmp_path: Path) -> Path:
    """The capture without any schema in it: neither the registry's HTTP nor the registry's own Kafka connection."""
    dissector = make_dissector(Options())
    ports = {8081}
    with open_capture(capture(fmt)) as source:
        for event in dissector.run(source.packets()):
            if isinstance(event, Exchange) and event.client_id == "kdrig-schema-registry":
                ports.add(event.connection.client.port)
    return without(capture(fmt), tmp_path / f"bare-{fmt}.pcap", ports)


@pytest.mark.parametrize("fmt", CAPTURED)
def test_without_a_schema_values_are_named_framed_and_unknown(fmt: str, tmp_path: Path) -> None:
    got = records(bare(fmt, tmp_path))
    framed = [r["value_decoded"] for r in got if r.get("value_decoded") and r["value_decoded"]["framing"] != "none"]
    assert framed and all(d["format"] == "unknown" and d["value"] is None for d in framed)
    assert all([x["code"] for x in d["diagnostics"]] == ["value.schema-unknown"] for d in framed)
    done = kdissect("doctor", bare(fmt, tmp_path), "--json")
    told = [json.loads(line) for line in done.stdout.splitlines()]  # the findings, then the verdict
    assert "values.schema-unknown" in {f["id"] for f in told if f["type"] == "finding"}


# -- schemas from a folder -----------------------------------------------------------------------------------------


def folder(fmt: str, tmp_path: Path, swap: bool = False) -> Path:
    """The scenario's own schema sources in a folder, tied to ids 1 and 2 by a manifest (swapped: each id given the
    other's schema)."""
    where = tmp_path / f"schemas-{fmt}"
    where.mkdir()
    sources = {
        "avro": (".avsc", json.dumps(ORDER_V1), json.dumps(ORDER_V2)),
        "protobuf": (".proto", PROTO_V1, PROTO_V2),
        "json": (".json", json.dumps(ITEM_SCHEMA), json.dumps(ITEM_SCHEMA_V2)),
    }[fmt.split("-")[0]]
    suffix, first, second = sources
    if swap:
        first, second = second, first
    (where / f"first{suffix}").write_text(first)
    (where / f"second{suffix}").write_text(second)
    guids = {line["id"]: line["guid"] for line in manifest(fmt) if line["kind"] == "schema"}  # a GUID header names them so
    entries = [{"file": f"first{suffix}", "id": 1, "guid": guids[1]}, {"file": f"second{suffix}", "id": 2, "guid": guids[2]}]
    (where / "schemas.json").write_text(json.dumps({"schemas": entries}))
    return where


@pytest.mark.parametrize("fmt", CAPTURED)
def test_every_record_decodes_with_the_schemas_of_a_folder(fmt: str, tmp_path: Path) -> None:
    """.proto source here goes through protoc (the capture's registry holds descriptors)."""
    assert_as_manifest(fmt, records(bare(fmt, tmp_path), "--schemas", folder(fmt, tmp_path)))


def test_a_folder_tied_by_file_name_and_by_subject(tmp_path: Path) -> None:
    where = tmp_path / "named"
    where.mkdir()
    (where / "1.avsc").write_text(json.dumps(ORDER_V1))
    (where / "orders-value.avsc").write_text(json.dumps(ORDER_V2))  # ids unknown: the topic's subject reads them
    got = records(bare("avro", tmp_path), "--schemas", where)
    by_offset = {r["offset"]: r.get("value_decoded") for r in got if r["topic"] == "orders" and r["direction"] == "fetch"}
    assert by_offset[0]["value"]["id"] == "order-1" and by_offset[0]["schema_id"] == 1
    assert by_offset[6]["value"]["currency"] == "USD" and "orders-value" in by_offset[6]["why"]


def test_wrong_schemas_are_named_diagnostics(tmp_path: Path) -> None:
    got = records(bare("avro", tmp_path), "--schemas", folder("avro", tmp_path, swap=True))
    codes = {x["code"] for r in got if r.get("value_decoded") for x in r["value_decoded"]["diagnostics"]}
    assert codes & {"value.malformed", "value.trailing-bytes"}
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "1.avsc").write_text('{"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]}')
    (broken / "2.proto").write_text("message {")
    got = records(bare("avro", tmp_path), "--schemas", broken)
    codes = {x["code"] for r in got if r.get("value_decoded") for x in r["value_decoded"]["diagnostics"]}
    assert "value.schema-invalid" in codes
    got = records(bare("protobuf", tmp_path), "--schemas", broken)
    invalid = {
        x["message"]
        for r in got
        if r.get("value_decoded")
        for x in r["value_decoded"]["diagnostics"]
        if x["code"] == "value.schema-invalid"
    }
    assert any("protoc" in message for message in invalid)  # id 2's .proto, which protoc refuses


def test_values_that_break_their_schema_say_where(tmp_path: Path) -> None:
    """The rig's cut Avro value and its JSON value that the schema refuses: named, with the offset in the value."""
    avro = [r for r in records(capture("avro")) if r["key"] == "order-6"]
    assert [x["code"] for x in avro[0]["value_decoded"]["diagnostics"]] == ["value.malformed"]
    assert 5 < avro[0]["value_decoded"]["diagnostics"][0]["offset"] <= len(decode_bytes(avro[0]["value"]))
    items = [r for r in records(capture("json")) if r["key"] == "item-5"]
    problem = items[0]["value_decoded"]["diagnostics"][0]
    assert problem["code"] == "value.schema-mismatch" and "/qty" in problem["message"] and problem["offset"] == 5


# -- schemas from a registry -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", CAPTURED)
def test_every_record_decodes_with_a_registry(fmt: str, tmp_path: Path) -> None:
    """The rig's stand-in, given the schemas as the serializers registered them; its answers are kept on disk, so a
    second run needs no registry."""
    import urllib.request

    registered = [line for line in manifest(fmt) if line["kind"] == "schema"]
    cache = tmp_path / "cache"
    env = {**ENV, "KDISSECT_CACHE": str(cache)}
    with running_registry(0) as url:
        for told in registered:
            body = json.dumps({"schema": told["schema"], "schemaType": told["schemaType"]}).encode()
            urllib.request.urlopen(urllib.request.Request(f"{url}/subjects/{told['subject']}/versions", body, method="POST"), timeout=5)
        assert_as_manifest(fmt, records(bare(fmt, tmp_path), "--schema-registry", url, env=env))
    assert sorted(p.name for p in (cache / "registry").glob("*/*")) == ["id-1.json", "id-2.json"]
    assert_as_manifest(fmt, records(bare(fmt, tmp_path), "--schema-registry", url, env=env))  # the registry is gone


def test_an_unreachable_registry_is_one_line_and_decoding_goes_on(tmp_path: Path) -> None:
    done = kdissect("records", bare("avro", tmp_path), "--json", "--schema-registry", "http://127.0.0.1:9")
    assert done.stderr.count("unreachable") == 1 and done.stderr.count("\n") == 1
    assert sum("value_decoded" in line for line in done.stdout.splitlines()) > 0


# -- filters on what records say --------------------------------------------------------------------------------------


def manifest_keys(fmt: str, test) -> list[str]:
    """The keys of the produced records whose decoded value passes `test`, each produced once and fetched once."""
    return sorted(line["key"] for line in produced(fmt).values() for _ in (0, 1) if test(line["decoded"]))


@pytest.mark.parametrize(
    "fmt, expression, test",
    [
        ("avro", 'key == "order-42"', lambda d: d["value"] and d["value"].get("id") == "order-42"),
        (
            "avro",
            'record.value.customer.name == "customer 2"',
            lambda d: d["value"] and d["value"].get("customer", {}).get("name") == "customer 2",
        ),
        ("avro", "record.value.amount > 20", lambda d: d["framing"] != "none" and d["value"] and d["value"]["amount"] > 20),
        ("avro", "record.format == json and record.topic == orders", lambda d: d["format"] == "json"),
        ("avro", "record.schema_id == 2", lambda d: d["schema_id"] == 2),
        ("avro-kafkajs", "record.schema_id == 2", lambda d: d["schema_id"] == 2),
        ("avro-kafkajs", "record.format == json and record.topic == orders", lambda d: d["format"] == "json"),
        (
            "protobuf",
            "record.value.billing.city == Lyon",
            lambda d: isinstance(d["value"], dict) and d["value"].get("billing", {}).get("city") == "Lyon",
        ),
        ("protobuf", "record.framing == confluent-header-guid", lambda d: d["framing"] == "confluent-header-guid"),
        ("protobuf", "record.header.__value_schema_id", lambda d: d["framing"] == "confluent-header-guid"),
        ("protobuf", "record.format == text and record.topic == payments", lambda d: d["format"] == "text"),
        ("json", 'record.value.warehouse == "east"', lambda d: isinstance(d["value"], dict) and d["value"].get("warehouse") == "east"),
        (
            "json",
            "record.value.qty >= 3 and record.format == json",
            lambda d: isinstance(d["value"].get("qty"), int) and d["value"]["qty"] >= 3,
        ),
    ],
)
def test_records_filter_returns_exactly_the_matching_records(fmt: str, expression: str, test) -> None:
    got = records(capture(fmt), "-Y", expression)
    assert sorted(r["key"] for r in got) == manifest_keys(fmt, test)


def test_an_exchange_matches_when_one_of_its_records_does() -> None:
    done = kdissect("read", capture("avro"), "-Y", 'key == "order-42"', "-e", "id", "-e", "api")
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert [api for _, api in rows] == ["Produce", "Fetch"]
    mistake = kdissect("read", capture("avro"), "-Y", "record.vlue == 2")
    assert mistake.returncode == 2 and "did you mean 'value'" in mistake.stderr


# -- the doctor and stats ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", CAPTURED)
def test_doctor_finds_the_unframed_records_and_their_producer(fmt: str) -> None:
    done = kdissect("doctor", capture(fmt), "--json")
    findings = {f["id"]: f for f in map(json.loads, done.stdout.splitlines()) if f["type"] == "finding"}  # then the verdict
    unframed = findings["values.unframed"]
    plain = [line for line in produced(fmt).values() if line["decoded"]["framing"] == "none"]
    assert unframed["evidence"]["client_ids"] == ["kdrig-legacy-writer"]
    for line in plain:
        assert f"0@{line['offset']}" in unframed["title"]
    assert "values.schema-changed" in findings and "1 → " not in findings["values.schema-changed"]["title"]


def test_a_topic_of_two_formats_is_told(tmp_path: Path) -> None:
    """Avro and JSON Schema values framed on one topic (crafted: the rig's serializers each keep to their topic)."""
    from kdissect.doctor.engine import Doctor
    from kdissect.values.framing import ID, SchemaRef
    from kdissect.values.schemas import JSON

    avro = [Draft(b"k", b"\x00\x00\x00\x00\x01\x06abc", (), 0)] * 2
    json_schema = [Draft(b"k", b'\x00\x00\x00\x00\x02{"a": 1}', (), 0)] * 2
    records = encode_batch(avro) + encode_batch(json_schema, base_offset=2)
    body = encode_body(
        0,
        9,
        "request",
        {"Acks": 0, "TimeoutMs": 1000, "TopicData": [{"Name": "mixed", "PartitionData": [{"Index": 0, "Records": records}]}]},
    )
    conversation = Conversation(client_port=40001, clock=Clock())
    book = Book()
    book.add(Schema(AVRO, '"string"', [SchemaRef(ID, 1)], "mixed-value", 1))
    book.add(Schema(JSON, '{"type": "object"}', [SchemaRef(ID, 2)], "mixed-value", 2))
    doctor = Doctor(values=ValueReader(book))
    for event in make_dissector(Options()).run(conversation.handshake() + conversation.send(CLIENT, request(0, 9, 1, body))):
        doctor.add(event)
    found = {f.id: f for f in doctor.findings()}
    assert (
        "values.mixed-formats" in found
        and "2 avro" in found["values.mixed-formats"].title
        and "2 json" in found["values.mixed-formats"].title
    )
    assert found["values.schema-changed"].evidence.exchanges == (1,)


def test_stats_has_a_serialization_table_per_topic() -> None:
    done = kdissect("stats", capture("avro"), "--json")
    table = next(t for t in map(json.loads, done.stdout.splitlines()) if t.get("table") == "serialization")
    orders = {(row["format"], row["framing"]): row for row in table["rows"] if row["topic"] == "orders"}
    assert orders["avro", "confluent"]["schema_ids"] == [1, 2] and orders["avro", "confluent"]["subjects"] == ["orders-value"]
    assert orders["json", "none"]["produced_records"] == 2


def test_schemas_lists_what_it_knows_and_where_it_learnt_it() -> None:
    done = kdissect("schemas", capture("protobuf"), "--json")
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["id"], r["subject"], r["version"], r["format"]) for r in rows] == [
        (1, "payments-value", 1, "protobuf"),
        (2, "payments-value", 2, "protobuf"),
    ]
    assert rows[0]["topics"] == ["payments", "addresses"] and rows[0]["produced_records"] == 5
    assert any(s.startswith("capture: HTTP answer") for s in rows[0]["sources"])


# -- framing, byte by byte ------------------------------------------------------------------------------------------------


def test_framings_each_named() -> None:
    confluent = from_prefix(b"\x00\x00\x00\x00\x07avro")
    assert (confluent.kind, confluent.ref.id, confluent.start) == ("confluent", 7, 5)
    apicurio = from_prefix(b"\x00" + struct.pack(">q", 12) + b"value")
    assert (apicurio.kind, apicurio.ref.id, apicurio.start) == (APICURIO, 12, 9)
    version = uuid.uuid4()
    glue = from_prefix(b"\x03\x05" + version.bytes + b"zlib")
    assert (glue.kind, glue.ref.id, glue.compression, glue.start) == (GLUE, str(version), "zlib", 18)
    assert from_prefix(b"\x00\x00\x00\x00\x00") is None  # id 0 is no registry's
    guid = from_headers("value", (("__value_schema_id", b"\x01" + version.bytes + b"\x02\x02"),))
    assert (guid.kind, guid.ref.id, guid.indexes) == (CONFLUENT_GUID, str(version), (1,))
    header = from_headers("key", (("__value_schema_id", b"\x00\x00\x00\x00\x09"), ("__key_schema_id", b"\x00\x00\x00\x00\x05")))
    assert (header.kind, header.ref.id) == (CONFLUENT_HEADER, 5)
    assert read_indexes(b"\x00", 0) == ((0,), 1)  # the [0] shortcut
    assert read_indexes(b"\x04\x02\x06", 0) == ((1, 3), 3)


def test_a_text_value_that_starts_with_a_zero_byte_is_text() -> None:
    reader = ValueReader()
    looks = b"\x00\x00\x00\x00\x01hello"
    decoded = reader.read("value", looks, (), "greetings", explain=True)
    assert decoded.plain and [d.code for d in decoded.diagnostics] == ["value.ambiguous"]
    book = Book()
    from kdissect.values.framing import ID, SchemaRef

    book.add(Schema(AVRO, '"string"', [SchemaRef(ID, 1)], "greetings-value", 1))
    decoded = ValueReader(book).read("value", b"\x00\x00\x00\x00\x01\x0ahello", (), "greetings")
    assert decoded.ok and decoded.value == "hello"


# -- captured text on a terminal ------------------------------------------------------------------------------------------------


def hostile_capture(path: Path) -> Path:
    """A Produce of one JSON value whose field name and text hold a terminal escape, a line break and rich markup."""
    value = json.dumps({"a\x1b]0;x\x07": "[/x]\nline", "[b]": 1}).encode()
    batch = encode_batch([Draft(b"k", value, (("h\x1b[2J", b"v"),), 0)])
    body = encode_body(
        0, 9, "request", {"Acks": 0, "TimeoutMs": 1000, "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": batch}]}]}
    )
    conversation = Conversation(client_port=40001, clock=Clock())
    packets = conversation.handshake() + conversation.send(CLIENT, request(0, 9, 1, body))
    with open(path, "wb") as stream:
        PcapWriter(stream, packets[0].linktype).write_all(packets)
    return path


def test_decoded_text_reaches_a_terminal_escaped(tmp_path: Path) -> None:
    path = hostile_capture(tmp_path / "hostile.pcap")
    for args in (("show", path, "--exchange", "1"), ("records", path)):
        done = kdissect(*args)
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout, args
        assert "\\x1b" in done.stdout or "\\u001b" in done.stdout
    shown = kdissect("show", path, "--exchange", "1").stdout
    assert "[/x]" in shown and "[b]" in shown  # markup stays text
    assert "\\nline" in shown  # the line break is visible, not a new line
