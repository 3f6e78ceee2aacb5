"""The project's captures of real clients and a real broker, decoded end to end and held to their manifests.

Each capture in captures/ comes with a manifest (rig/README.md): every record a client produced, with the
offset its delivery report gave, and every record a consumer received. The decoder must find each produced
record in a Produce request (its offset computed from the response's base offset), each consumed record in a
Fetch response at its offset, and pair every request. TLS captures are read with their key log (NAME.keylog
beside them, or the secrets their pcapng embeds), as a user would.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from kdissect.capture import open_capture
from kdissect.decode.body import Body
from kdissect.dissector import Options, make_dissector
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.records.values import LegacyMessage
from kdissect.views.json_lines import decode_bytes

CAPTURES = sorted((Path(__file__).resolve().parent.parent / "captures").glob("*.pcap*"))
PRODUCE, FETCH = 0, 1

TRUE_DIAGNOSTICS = {
    # librdkafka 2.16 writes 3 bytes past the end of its Metadata v12 request body (tshark sees them too)
    ("admin-confluent.pcap", "body.trailing-bytes"),
    # noida-db has ApiVersions up to v3: it answers kafka-python's v4 in the v0 layout, as Kafka does (a note)
    ("doctor-fetch-spin-noida.pcap", "body.version-fallback"),
    # tansu's ListOffsets v0 and OffsetFetch v3 responses end early (captures/README.md)
    ("doctor-truncated-responses.pcap", "body.malformed"),
}
TRUE_NOTICES = {
    # kafka-python closes its TLS connections with a bare FIN; stunnel answers with a fatal decode_error alert (tshark agrees)
    (name, "tls.alert")
    for name in (
        "tls13-aes128-kafka-python.pcap",
        "tls13-chacha20-kafka-python.pcap",
        "tls12-aes256gcm-kafka-python.pcap",
        "tls13-secrets-kafka-python.pcapng",
    )
}


@cache
def dissect(path: Path) -> tuple[list[Exchange], list[Notice], list[ConnectionEnd]]:
    exchanges, notices, ends = [], [], []
    keylog = path.with_suffix(".keylog")
    with open_capture(path) as capture:
        dissector = make_dissector(Options(tls_keylog=keylog.read_bytes() if keylog.exists() else b""))
        capture.secrets_to(dissector.add_tls_keylog)
        for event in dissector.run(capture.packets()):
            if isinstance(event, Exchange):
                exchanges.append(event)
            elif isinstance(event, Notice):
                notices.append(event)
            else:
                ends.append(event)
    return exchanges, notices, ends


def manifest(path: Path, kind: str) -> list[dict]:
    lines = (json.loads(line) for line in path.with_suffix(".manifest.jsonl").read_text().splitlines())
    return [line for line in lines if line["kind"] == kind]


def headers_of(record) -> list[tuple[str | bytes, bytes | None]]:
    return list(getattr(record, "headers", ()))


def manifest_headers(entry: dict) -> list[tuple[str, bytes | None]]:
    return [(key, decode_bytes(value)) for key, value in entry["headers"]]


def produced(exchanges: list[Exchange]) -> list[dict]:
    """Every record of every Produce request, with the offset the broker assigned (None if it refused)."""
    out = []
    for exchange in exchanges:
        if exchange.api_key != PRODUCE or not isinstance(exchange.request.body, Body):
            continue
        base_offsets = {}
        if exchange.response is not None and isinstance(exchange.response.body, Body):
            for topic in exchange.response.body.fields.get("Responses") or ():
                for partition in topic.get("PartitionResponses") or ():
                    if partition.get("ErrorCode") == 0:
                        base_offsets[(topic.get("Name"), partition.get("Index"))] = partition.get("BaseOffset")
        for placed in exchange.request.body.records:
            records = list(placed.records.records())
            first = records[0].offset if records else 0
            base = base_offsets.get((placed.topic, placed.partition))
            for record in records:
                out.append(
                    {
                        "topic": placed.topic,
                        "partition": placed.partition,
                        "key": record.key,
                        "value": record.value,
                        "headers": headers_of(record),
                        "timestamp": record.timestamp,
                        "offset": None if base is None else base + record.offset - first,
                    }
                )
    return out


def fetched(exchanges: list[Exchange]) -> dict[tuple[str, int, int], object]:
    out = {}
    for exchange in exchanges:
        if exchange.api_key != FETCH or exchange.response is None or not isinstance(exchange.response.body, Body):
            continue
        for placed in exchange.response.body.records:
            for record in placed.records.records():
                out[(placed.topic, placed.partition, record.offset)] = record
    return out


def test_captures_are_present():
    assert len(CAPTURES) >= 15, "captures/ should hold the rig's corpus (python -m rig all)"


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_every_request_is_paired(path):
    """Requests lack a response only at the end of a connection: the client closed before the broker answered.

    So on every connection, every answered request comes before every unanswered one.
    """
    exchanges, notices, _ = dissect(path)
    assert exchanges
    assert not [e for e in exchanges if e.status in ("orphan-response", "unreadable")]
    answered, unanswered = defaultdict(lambda: -1), defaultdict(lambda: 1 << 62)
    for e in exchanges:
        if e.status in ("ok", "error", "malformed"):  # answered
            answered[e.connection.id] = max(answered[e.connection.id], e.request.frame.offset)
        elif e.status == "unanswered":
            unanswered[e.connection.id] = min(unanswered[e.connection.id], e.request.frame.offset)
    for connection, offset in answered.items():
        assert offset < unanswered[connection], f"connection {connection} has a request unanswered mid-stream"
    assert not [n for n in notices if (path.name, n.diagnostic.code) not in TRUE_NOTICES], [n.diagnostic for n in notices]
    found = {(path.name, d.code) for e in exchanges for d in e.diagnostics}
    assert found <= TRUE_DIAGNOSTICS, found - TRUE_DIAGNOSTICS


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_produced_records_equal_the_manifest(path):
    expected = manifest(path, "produced")
    if not expected:
        pytest.skip("this scenario produces nothing")
    decoded = produced(dissect(path)[0])
    sent_to = {r["topic"] for r in decoded}
    for entry in expected:
        if entry.get("error") and entry["topic"] not in sent_to:
            continue  # a failed send whose topic no Produce request names never left the client (no such topic)
        key, value = decode_bytes(entry["key"]), decode_bytes(entry["value"])
        matches = [
            r
            for r in decoded
            if r["topic"] == entry["topic"]
            and r["key"] == key
            and r["value"] == value
            and (entry["partition"] is None or r["partition"] == entry["partition"])
            and [(k, v) for k, v in r["headers"]] == manifest_headers(entry)
        ]
        assert matches, f"produced record not found in any Produce request: {entry}"
        if entry["offset"] is not None:
            assert entry["offset"] in {r["offset"] for r in matches}, entry
        if entry.get("timestamp") is not None and not entry.get("magic") == 0:
            assert entry["timestamp"] in {r["timestamp"] for r in matches}, entry


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_consumed_records_equal_the_manifest(path):
    expected = manifest(path, "consumed")
    if not expected:
        pytest.skip("this scenario consumes nothing")
    records = fetched(dissect(path)[0])
    for entry in expected:
        record = records.get((entry["topic"], entry["partition"], entry["offset"]))
        assert record is not None, f"consumed record not in any Fetch response: {entry}"
        assert record.key == decode_bytes(entry["key"])
        assert record.value == decode_bytes(entry["value"])
        assert headers_of(record) == manifest_headers(entry)
        if entry.get("timestamp") is not None and not isinstance(record, LegacyMessage):
            assert record.timestamp == entry["timestamp"]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_connection_totals_add_up(path):
    """The bytes each connection summary counts are the bytes of the frames its exchanges hold (over TLS, the
    decrypted bytes)."""
    exchanges, _, ends = dissect(path)
    frames = defaultdict(lambda: [0, 0])
    for e in exchanges:
        if e.request is not None:
            frames[e.connection.id][0] += e.request.size
        if e.response is not None:
            frames[e.connection.id][1] += e.response.size
    for end in ends:
        assert tuple(frames[end.connection.id]) == (end.tls.plaintext if end.tls else end.bytes), end.connection
