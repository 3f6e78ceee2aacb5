"""`kdissect anonymize` (issue 30): the same exchanges, nothing of the owner's.

Every capture of captures/ (and the public ones when present) is anonymized and read back. It must hold the same
exchanges (APIs, versions, statuses, error codes where they are, latencies, diagnostics; SASL exchanges removed) and
the same number of records per partition (topics by their pseudonyms); and none of the original record keys, values
and header values (the manifests' and the decoder's), names (client ids, topics, groups, transactional ids, members,
hosts as the original's JSON names them) or addresses may be found in the file or in its JSON, as text, as hex or as
base64. tshark, when installed, must find no more malformed packets than in the original.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kdissect.capture import open_capture
from kdissect.capture.destination import CaptureDestination
from kdissect.capture.writer import PcapWriter, pcap_bytes
from kdissect.decode.body import Body
from kdissect.dissector import Options, file_dissector
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.records.encode import Draft, encode_batch
from kdissect.records.values import KafkaRecord
from kdissect.rewrite.anonymize import Report, anonymize
from kdissect.rewrite.pseudonyms import KEPT
from kdissect.schema import ApiKey
from kdissect.schema.tree import Struct
from kdissect.testing import craft
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER
from kdissect.views.json_lines import JsonLinesWriter
from tests.test_cli import kdissect

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT.parent / "shared" / "captures-public"
CAPTURES = sorted((ROOT / "captures").glob("*.pcap*")) + sorted(PUBLIC.glob("*.pcap*"))
SASL = {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
NAMED = {"client_id", "ClientId", "GroupId", "TransactionalId", "MemberId", "GroupInstanceId", "Host", "Leader", "ClientHost", "Key"}
"""JSON fields whose values are the owner's names, besides each exchange's `topics` and `groups`."""
INTERNAL_NAMED = {"Group", "Topic", "MemberId", "ClientId", "ClientHost", "TransactionalId", "GroupInstanceId", "Leader"}
"""Fields of the records of Kafka's own topics (camelCase there) whose values are the owner's names."""
BENIGN = {"ClientSoftwareName", "ClientSoftwareVersion"}
"""Fields kept on purpose (a client library's name and version; and records' header keys, which anonymize keeps as a
body's field names are kept): a record value that happens to spell one is found."""
EDGE = (rb"(?<![A-Za-z0-9._-])", rb"(?![A-Za-z0-9._-])")
"""A name is found where it stands whole (`txn` is no leak inside `transaction`)."""


def keylog_of(path: Path) -> bytes:
    keylog = path.with_suffix(".keylog")
    return keylog.read_bytes() if keylog.exists() else b""


def events(path: Path, keylog: bytes = b"") -> list:
    with open_capture(path) as capture:
        return list(file_dissector(capture, Options(tls_keylog=keylog, show_secrets=True)).run(capture.packets()))


def as_json(found: list) -> str:
    out = io.StringIO()
    writer = JsonLinesWriter(out)
    for event in found:
        if isinstance(event, Exchange):
            writer.write_exchange(event)
    return out.getvalue()


def anonymized(path: Path, out: Path, drop_values: bool = False) -> Report:
    with CaptureDestination(out) as destination:
        return anonymize(functools.partial(open_capture, path), Options(tls_keylog=keylog_of(path)), destination.write, drop_values)


def facts(exchange: Exchange) -> tuple:
    """What anonymizing must keep of an exchange."""
    errors = []
    for message in (exchange.request, exchange.response):
        if message is not None and isinstance(message.body, Body):
            errors += [(e.path, e.code) for e in message.body.errors]
    diagnostics = tuple(sorted(d.code for d in exchange.diagnostics))
    return exchange.api_key, exchange.api_version, exchange.status, tuple(sorted(errors)), exchange.latency, diagnostics


def records(found: list, topics: dict[str, str]) -> Counter:
    """Records per (request or response, topic, partition), topics by their pseudonyms."""
    counted: Counter = Counter()
    for exchange in found:
        if not isinstance(exchange, Exchange):
            continue
        for side, message in (("request", exchange.request), ("response", exchange.response)):
            if message is not None and isinstance(message.body, Body):
                for placed in message.body.records:
                    topic = topics.get(placed.topic, placed.topic) if placed.topic else None
                    counted[(side, topic, placed.partition)] += sum(1 for _ in placed.records.data_records())
    return counted


def secrets_of(path: Path, found: list) -> set[str]:
    """Everything of the owner's that the original holds: names, record data, addresses."""
    names: set[str] = set()
    benign: set[str] = set()

    def walk(value: object, key: str | None = None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k in ("topics", "groups") and isinstance(v, list):
                    names.update(t for t in v if isinstance(t, str))
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and key in NAMED:
            names.add(value)
        elif isinstance(value, str) and key in BENIGN:
            benign.add(value)

    for line in as_json(found).split("\n")[:-1]:  # not splitlines: a name may hold U+0085 or U+2028, which JSON leaves as they are
        walk(json.loads(line))
    for exchange in found:
        if isinstance(exchange, Exchange):
            for message in (exchange.request, exchange.response):
                if message is not None and isinstance(message.body, Body):
                    for placed in message.body.records:
                        for record in placed.records.data_records():
                            if record.reading is not None:  # Kafka's own topics: their names, not their numbers
                                held, fields = _reading_names(record.reading)
                                names.update(held)
                                benign.update(fields)  # the JSON names its fields: a group called "group" is no leak there
                                names.update(_text(h) for _, h in record.headers if h)
                                continue
                            names.update(_text(v) for v in (record.key, record.value, *(h for _, h in record.headers)) if v)
                            benign.update(_text(k) if isinstance(k, bytes) else k for k, _ in record.headers if k)  # kept
        elif isinstance(exchange, ConnectionEnd):
            names.update((exchange.connection.client.address, exchange.connection.broker.address))
    manifest = path.with_suffix(".manifest.jsonl")
    if manifest.exists():
        for line in manifest.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("kind") in ("produced", "consumed") and not entry.get("record"):  # not Kafka's own records
                names.update(v for v in (entry.get("key"), entry.get("value"), entry.get("topic")) if isinstance(v, str))
                names.update(h[1] for h in entry.get("headers") or () if isinstance(h[1], str))
    kept = set(KEPT)
    return {n for n in names - benign - kept if len(n) >= 4 and set(n) - set("kvhm")}


def _reading_names(reading: KafkaRecord) -> tuple[set[str], set[str]]:
    """The names a record of Kafka's own topics holds (a group, a topic, a member, a client, a host...), and the names
    of its fields."""
    found: set[str] = set()
    fields: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, Struct):
            fields.update(value.names)
            for name, item in zip(value.names, value.values):
                if isinstance(item, str) and name[:1].upper() + name[1:] in NAMED | INTERNAL_NAMED:
                    found.add(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(reading.key)
    walk(reading.value)
    return found, fields


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def found_in(needle: str, haystack: bytes) -> bool:
    raw = needle.encode()
    for form in (raw, raw.hex().encode(), base64.b64encode(raw).rstrip(b"=")):
        if form in haystack and re.search(EDGE[0] + re.escape(form) + EDGE[1], haystack):  # `in` first: far faster
            return True
    return False


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_an_anonymized_capture_has_the_same_exchanges_and_nothing_of_the_owners(path, tmp_path):
    keylog = keylog_of(path)
    original = events(path, keylog)
    out = tmp_path / ("anonymized.pcapng" if path.suffix == ".pcapng" else "anonymized.pcap")
    report = anonymized(path, out)
    back = events(out)
    kept = [e for e in original if isinstance(e, Exchange) and not (e.sasl_token or e.api_key in SASL)]
    assert Counter(facts(e) for e in back if isinstance(e, Exchange)) == Counter(map(facts, kept))
    topics = report.names.mapping().get("topics", {})
    assert records(back, {}) == records(original, topics)
    damage = {e.diagnostic.code for e in back if isinstance(e, Notice) and e.diagnostic.severity == "error"}
    assert damage <= {e.diagnostic.code for e in original if isinstance(e, Notice) and e.diagnostic.severity == "error"}
    haystack = out.read_bytes() + as_json(back).encode()
    leaked = sorted(s for s in secrets_of(path, original) if found_in(s, haystack))
    assert not leaked


def test_anonymizing_is_deterministic_and_drop_values_empties_the_records(tmp_path):
    path = ROOT / "captures" / "produce-codecs-confluent.pcap"
    anonymized(path, tmp_path / "a.pcap")
    anonymized(path, tmp_path / "b.pcap")
    assert (tmp_path / "a.pcap").read_bytes() == (tmp_path / "b.pcap").read_bytes()
    anonymized(path, tmp_path / "dropped.pcap", drop_values=True)
    back = events(tmp_path / "dropped.pcap")
    leaves = [
        r
        for e in back
        if isinstance(e, Exchange)
        for m in (e.request, e.response)
        if m is not None and isinstance(m.body, Body)
        for placed in m.body.records
        for r in placed.records.data_records()
    ]
    assert leaves and all(r.key in (None, b"") and r.value in (None, b"") for r in leaves)
    assert any(r.key is None for r in leaves) and any(r.value is None for r in leaves), "null stays null"


def test_names_are_mapped_the_same_everywhere(tmp_path):
    """A topic is one pseudonym in Metadata, Produce, Fetch and inside the consumer protocol's subscriptions."""
    path = ROOT / "captures" / "consumer-group-kafka-python.pcap"
    report = anonymized(path, tmp_path / "a.pcap")
    mapping = report.names.mapping()
    back = [e for e in events(tmp_path / "a.pcap") if isinstance(e, Exchange)]
    assert {t for e in back for t in (e.request.body.topics if e.request and isinstance(e.request.body, Body) else ())} == set(
        mapping["topics"].values()
    )
    joins = [e for e in back if e.api_key == ApiKey.JOIN_GROUP and e.request is not None]
    subscribed = {
        topic
        for e in joins
        for protocol in e.request.body.fields["Protocols"]
        if protocol.annotations and "Metadata" in protocol.annotations
        for topic in protocol.annotations["Metadata"]["Topics"]
    }
    assert subscribed == set(mapping["topics"].values())
    assert {e.client_id for e in back} <= set(mapping["client_ids"].values())


def sasl_conversation() -> list:
    """A client that authenticates with SASL/PLAIN (a password on the wire), then produces one record."""
    talk = craft.Conversation()
    handshake = encode_body(ApiKey.SASL_HANDSHAKE, 1, "request", {"Mechanism": "PLAIN"})
    handshook = encode_body(ApiKey.SASL_HANDSHAKE, 1, "response", {"ErrorCode": 0, "Mechanisms": ["PLAIN"]})
    authenticate = encode_body(ApiKey.SASL_AUTHENTICATE, 2, "request", {"AuthBytes": b"\0alice\0hunter2-secret"})
    authenticated = encode_body(ApiKey.SASL_AUTHENTICATE, 2, "response", {"ErrorCode": 0, "AuthBytes": b""})
    batch = encode_batch([Draft(b"customer-key", b"customer-value", timestamp=1)])
    produce = encode_body(
        ApiKey.PRODUCE,
        8,
        "request",
        {"Acks": -1, "TimeoutMs": 1000, "TopicData": [{"Name": "orders", "PartitionData": [{"Index": 0, "Records": batch}]}]},
    )
    produced = encode_body(
        ApiKey.PRODUCE,
        8,
        "response",
        {"Responses": [{"Name": "orders", "PartitionResponses": [{"Index": 0, "BaseOffset": 0, "LogAppendTimeMs": -1}]}]},
    )
    packets = talk.handshake()
    for n, (key, version, request, response) in enumerate(
        [
            (ApiKey.SASL_HANDSHAKE, 1, handshake, handshook),
            (ApiKey.SASL_AUTHENTICATE, 2, authenticate, authenticated),
            (ApiKey.PRODUCE, 8, produce, produced),
        ],
        start=1,
    ):
        packets += talk.send(CLIENT, craft.request(key, version, n, request, client_id="billing\x1b]0;owned\x07"))
        packets += talk.send(SERVER, craft.response(n, response))
    return packets + talk.close()


def test_sasl_is_removed_and_the_summary_escapes_what_came_from_the_wire(tmp_path):
    source = tmp_path / "sasl.pcap"
    source.write_bytes(pcap_bytes(sasl_conversation(), 1))
    out = tmp_path / "anonymized.pcapng.gz"
    done = kdissect("anonymize", source, "-o", out)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.decode()
    assert "\x1b" not in printed and "billing\\x1b]0;owned\\x07" in printed
    assert "SASL exchanges removed" in printed
    back = [e for e in events(out) if isinstance(e, Exchange)]
    assert [(e.api_key, e.status) for e in back] == [(ApiKey.PRODUCE, "ok")]
    with open_capture(out) as capture:
        data = b"".join(p.data for p in capture.packets())
    assert b"hunter2" not in data and b"alice" not in data and b"customer" not in data and b"orders" not in data
    mapping = json.loads((tmp_path / "anonymized.pcapng.gz.mapping.json").read_text())
    assert mapping["topics"] == {"orders": "topic-1"} and mapping["client_ids"] == {"billing\x1b]0;owned\x07": "client-1"}
    assert mapping["addresses"] == {"10.0.0.1": "10.0.0.3", "10.0.0.2": "10.0.0.4"}  # never one of the capture's own


@pytest.mark.parametrize(
    "args,says",
    [
        (["anonymize", "{capture}"], "-o FILE"),
        (["anonymize", "{capture}", "-o", "{out}/x.txt"], ".pcap or .pcapng"),
        (["anonymize", "-", "-o", "{out}/x.pcap"], "standard input"),
        (["anonymize", "{capture}", "-o", "{capture}"], "a capture being read"),
        (["anonymize", "{out}/missing.pcap", "-o", "{out}/x.pcap"], "no such file"),
    ],
)
def test_mistakes_are_one_line(args, says, tmp_path):
    capture = ROOT / "captures" / "client-kcat.pcap"
    done = kdissect(*(a.format(out=tmp_path, capture=capture) for a in args), stdin=capture.read_bytes())
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr


TSHARK = shutil.which("tshark")


def malformed(path: Path) -> int:
    """Packets tshark calls malformed, Kafka decoded on the TLS captures' port too (the anonymized ones are in the clear)."""
    done = subprocess.run(
        [TSHARK, "-r", str(path), "-d", "tcp.port==9093,kafka", "-Y", "_ws.malformed"], capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return len(done.stdout.splitlines())


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_wireshark_finds_no_new_malformed_packet(path, tmp_path):
    out = tmp_path / ("anonymized.pcapng" if path.suffix == ".pcapng" else "anonymized.pcap")
    anonymized(path, out)
    twin = path.with_name(path.name.replace(".pcapng", ".pcap").replace(".pcap", "-plain.pcap"))
    assert malformed(out) <= malformed(twin if twin.exists() else path)


def test_no_pseudonym_is_an_address_the_capture_holds_even_one_first_seen_late(tmp_path):
    """The first conversation's Metadata names its broker 127.0.0.1, the first host to get a pseudonym (10.0.0.1);
    a conversation an hour later is between 10.0.0.1 and 10.0.0.2: both were reserved before any pseudonym was made."""
    with open_capture(ROOT / "captures" / "consumer-group-kafka-python.pcap") as source:
        packets = list(source.packets())
    start = packets[0].ts
    early = list(craft.conversation_copy(packets, 1, bytes([192, 168, 7, 1]), start, start))
    late = []
    for p in craft.conversation_copy(packets, 0, bytes([10, 0, 0, 2]), start, start + 3600 * 10**9):
        data = p.data.replace(bytes([10, 100, 0, 0]), bytes([10, 0, 0, 1]))  # the copy's client, 10.100.0.0
        late.append(p._replace(data=data))
    path = tmp_path / "late.pcap"
    with open(path, "wb") as out:
        PcapWriter(out, 1, nanosecond=True).write_all(early + late)
    report = anonymized(path, tmp_path / "anonymized.pcap")
    addresses = report.names.mapping()["addresses"]
    assert {"127.0.0.1", "10.0.0.1", "10.0.0.2", "10.100.0.1", "192.168.7.1"} <= set(addresses)
    assert not set(addresses.values()) & (set(addresses) - {"127.0.0.1"}), addresses
    assert len(set(addresses.values())) == len(addresses)
