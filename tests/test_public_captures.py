"""End to end on the public captures in ../shared/captures-public: through the core, the Decoder and the CLI.

What each capture holds comes from its SOURCES.md and from tshark's reading of the same files, not from
kdissect. Every frame must be found, every request paired with its response where the capture has both, and
the only diagnostics are the ones that are true of the bytes, each named below with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from kdissect.capture import open_capture
from kdissect.decode.body import Body
from kdissect.decode.meaning import ErrorAt
from kdissect.dissector import Options, make_dissector
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.records import LegacyMessage, RecordBatch

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT.parent / "shared" / "captures-public"
PORTS = frozenset({9092, 36333})

pytestmark = pytest.mark.skipif(
    not CAPTURES.is_dir(), reason=f"the public captures are not here ({CAPTURES} is absent); see docs for where they come from"
)

RDKAFKA = "rdkafka"
CONSOLE = "console-producer"
FRAUD = "consumer-frauddetectionservice-1"
NDPI_2024 = [
    ("ok", 18, 0, 129, RDKAFKA),
    ("ok", 3, 2, 130, RDKAFKA),
    ("orphan-response", None, None, 131, None),  # SOURCES.md: responses whose requests are not in the capture
    ("orphan-response", None, None, 140, None),
    ("orphan-response", None, None, 141, None),
    ("ok", 3, 2, 142, RDKAFKA),
    ("ok", 3, 2, 164, RDKAFKA),
    ("ok", 18, 0, 168, RDKAFKA),
    ("ok", 0, 3, 2, RDKAFKA),
    ("ok", 0, 3, 3, RDKAFKA),
    ("unanswered", 3, 2, 212, RDKAFKA),
    ("unanswered", 18, 0, 4, RDKAFKA),
    ("unanswered", 18, 0, 15, RDKAFKA),
]
NDPI_2023 = [("ok", 18, 3, 3, CONSOLE), ("ok", 22, 4, 4, CONSOLE), ("ok", 3, 12, 5, CONSOLE), ("ok", 0, 9, 6, CONSOLE)]

EXCHANGES: dict[str, list[tuple]] = {
    # file: (status, api key, api version, correlation id, client id) for every exchange; "error" where the
    # response carries an error code (the deepflow captures' error codes are made up, e.g. 5120)
    "arkime__kafka.pcap": [("unanswered", 2, 0, 0, "")],  # ListOffsets v0 request only; its client id is empty, not null
    "deepflow__00-produce-v2.pcap": [("ok", 0, 2, 1, "console-producer")],
    "deepflow__00-produce-v7-sw8.pcap": [("ok", 0, 7, 1, "kafka-python-producer-1")],
    "deepflow__00-produce-v9.pcap": [("ok", 0, 9, 47, "console-producer")],
    "deepflow__01-fetch-v12-ok.pcap": [("ok", 1, 12, 15603, "consumer-console-consumer-8919-1")],
    "deepflow__01-fetch-v12-perf.pcap": [("ok", 1, 12, 20, "consumer-console-consumer-84107-1")],
    "deepflow__01-fetch-v12-unknown.pcap": [("error", 1, 12, 20, "consumer-console-consumer-84107-1")],
    "deepflow__11-join-group-v7.pcap": [("error", 11, 7, 120, "consumer-zzzz12-1")],
    "deepflow__13-leave-group-v4.pcap": [("ok", 13, 4, 201, "consumer-zzzz12-1")],
    "deepflow__14-sync-group-v5.pcap": [("error", 14, 5, 120, "consumer-zzzz12-1")],
    "deepflow__18-api-versions-v3.pcap": [("ok", 18, 3, 2, "adminclient-1")],
    "deepflow__mixed-with-unsupported.pcap": [
        ("ok", 1, 13, 15551976, FRAUD),
        ("ok", 8, 8, 15551977, FRAUD),
        ("ok", 12, 4, 15551978, FRAUD),
    ],
    "deepflow__produce-v9_old.pcap": [("unanswered", 0, 9, 5, "console-producer")],  # one packet: request only
    "go-sniffer__kafka.pcap": [("ok", 3, 0, 1, "kafka-python-producer-1"), ("ok", 0, 1, 1, "kafka-python-producer-1")],
    "ndpi__kafka_2023.pcapng": NDPI_2023,
    "ndpi__kafka_2024.pcap": NDPI_2024,
    "ndpi__kafka_merged.pcapng": NDPI_2024 + NDPI_2023,
}

FRAMES = {
    # file: (request frames, response frames), as tshark counts them
    "arkime__kafka.pcap": (1, 0),
    "deepflow__mixed-with-unsupported.pcap": (3, 3),
    "deepflow__produce-v9_old.pcap": (1, 0),
    "go-sniffer__kafka.pcap": (2, 2),
    "ndpi__kafka_2023.pcapng": (4, 4),
    "ndpi__kafka_2024.pcap": (10, 10),
    "ndpi__kafka_merged.pcapng": (14, 14),
}

TOPICS = {
    "arkime__kafka.pcap": {"integration.test.topic1475007069352"},
    "deepflow__00-produce-v2.pcap": {"topic2"},
    "deepflow__00-produce-v7-sw8.pcap": {"quickstart-events"},
    "deepflow__00-produce-v9.pcap": {"zqy-test"},
    "deepflow__01-fetch-v12-ok.pcap": {"zqy-test"},
    "deepflow__mixed-with-unsupported.pcap": {"orders"},
    "deepflow__produce-v9_old.pcap": {"quickstart-events"},
    "go-sniffer__kafka.pcap": {"test"},
    "ndpi__kafka_2023.pcapng": {"sampleTopic"},
    "ndpi__kafka_2024.pcap": {"LB_MAIN_LOG_INPUT"},
    "ndpi__kafka_merged.pcapng": {"LB_MAIN_LOG_INPUT", "sampleTopic"},
}

LIBRDKAFKA_TRAILER = [("body.trailing-bytes", corr) for corr in (129, 168, 4, 15)]
"""librdkafka sends 4 zero bytes after the empty body of its ApiVersions v0 requests (SOURCES.md)."""

ORPHAN_APIS = {131: ("MetadataResponse", 2), 140: ("ApiVersionsResponse", 0), 141: ("MetadataResponse", 2)}
"""The orphan responses of ndpi 2024 read whole as one API each: the versions its rdkafka asks for elsewhere."""
ORPHANS_READ = [("body.guessed", c) for c in ORPHAN_APIS]

DIAGNOSTICS = {
    # file: every diagnostic kdissect may give, (code, correlation id or None for capture-level ones)
    "go-sniffer__kafka.pcap": [("pcap.caplen-exceeds-origlen", None)],  # incl_len 92 > orig_len 76 on every record
    "ndpi__kafka_2024.pcap": LIBRDKAFKA_TRAILER
    + ORPHANS_READ
    + [
        ("capture.misnamed", None),  # pcapng despite the .pcap name
        ("capture.time-backwards", None),  # packet 19 is 2.5 s earlier than packet 18 (tshark: frame.time_delta < 0)
    ],
    "ndpi__kafka_merged.pcapng": LIBRDKAFKA_TRAILER + ORPHANS_READ + [("capture.time-backwards", None)],  # the same packet 19
}


@cache
def run(name: str) -> tuple[list[Exchange], list[Notice], list[ConnectionEnd], list]:
    dissector = make_dissector(Options(ports=PORTS))
    exchanges, notices, ends = [], [], []
    with open_capture(CAPTURES / name) as capture:
        for event in dissector.run(capture.packets()):
            if isinstance(event, Exchange):
                exchanges.append(event)
            elif isinstance(event, Notice):
                notices.append(event)
            elif isinstance(event, ConnectionEnd):
                ends.append(event)
        return exchanges, notices, ends, capture.diagnostics()


def one(name: str, api_key: int) -> Exchange:
    (exchange,) = [e for e in run(name)[0] if e.api_key == api_key]
    return exchange


def test_every_capture_is_described():
    """A capture added to the folder must be added here, with what it holds."""
    assert {p.name for p in CAPTURES.iterdir() if p.name != "SOURCES.md"} == set(EXCHANGES)


@pytest.mark.parametrize("name", sorted(EXCHANGES))
def test_exchanges_and_pairing(name):
    """Every exchange, with its status: paired, unanswered, or an orphan response."""
    exchanges = run(name)[0]
    got = [(e.status, e.api_key, e.api_version, e.correlation_id, e.client_id) for e in exchanges]
    assert sorted(got, key=repr) == sorted(EXCHANGES[name], key=repr)


@pytest.mark.parametrize("name", sorted(EXCHANGES))
def test_every_frame_found(name):
    ends = run(name)[2]
    requests = sum(e.requests for e in ends)
    responses = sum(e.responses for e in ends)
    expected = FRAMES.get(name, (len(EXCHANGES[name]), len(EXCHANGES[name])))
    assert (requests, responses) == expected
    assert sum(e.gaps for e in ends) == 0


@pytest.mark.parametrize("name", sorted(EXCHANGES))
def test_every_body_decoded(name):
    """Each message whose API is known has a decoded body of its own version; orphans (no request) keep their bytes,
    read as the one API they fit."""
    for e in run(name)[0]:
        for message, side in ((e.request, "Request"), (e.response, "Response")):
            if message is None:
                continue
            if e.request is None:
                assert isinstance(message.body, Body) and message.body.raw == message.frame.data[message.header.length :]
                assert (message.body.schema, message.body.version) == ORPHAN_APIS[e.correlation_id] and message.body.assumed
                continue
            body = message.body
            assert isinstance(body, Body) and body.fields is not None
            assert body.version == e.api_version and not body.assumed
            assert body.schema.endswith(side)


@pytest.mark.parametrize("name", sorted(EXCHANGES))
def test_only_true_diagnostics(name):
    """No diagnostic except the named ones, which are true of the bytes."""
    exchanges, notices, _, capture = run(name)
    got = [(d.code, e.correlation_id) for e in exchanges for d in e.diagnostics]
    got += [(n.diagnostic.code, None) for n in notices]
    got += [(d.code, None) for d in capture]
    assert Counter(got) == Counter(DIAGNOSTICS.get(name, []))


@pytest.mark.parametrize("name", ["ndpi__kafka_2024.pcap", "ndpi__kafka_merged.pcapng"])
def test_librdkafka_trailer_is_four_zero_bytes(name):
    for e in run(name)[0]:
        for d in e.diagnostics:
            if d.code == "body.guessed":
                continue
            assert (e.api_key, e.api_version) == (18, 0)
            assert d.code == "body.trailing-bytes" and d.severity == "warning"
            assert e.request.frame.data[d.offset :] == b"\x00\x00\x00\x00"


@pytest.mark.parametrize("name", sorted(EXCHANGES))
def test_topics(name):
    topics = {t for e in run(name)[0] for m in (e.request, e.response) if m and isinstance(m.body, Body) for t in m.body.topics}
    assert topics == TOPICS.get(name, set())


def test_sw8_record_header():
    """kafka-python with SkyWalking: one v2 batch, one record, its trace context in a record header."""
    produce = one("deepflow__00-produce-v7-sw8.pcap", 0)
    body = produce.request.body
    (placed,) = body.records
    assert (placed.path, placed.topic, placed.partition) == ("TopicData[0].PartitionData[0].Records", "quickstart-events", 0)
    (batch,) = placed.records.batches
    assert isinstance(batch, RecordBatch) and batch.crc_valid and batch.codec == "none"
    (record,) = batch.records
    assert (record.key, record.value, record.timestamp) == (b"MyKey", b"Hello Kafka", 1700037570325)
    assert record.headers == (
        (
            "sw8",
            b"1-YmI3OWZhMzQtZDAzZi00YmMyLThmYTktOTc5YWY3ODc3NDI2-MGQ4Y2U2MWEtZWYyYS00ZTIzLWI4ZjQtMmM1OWUzZjQ0ZDQ4"
            b"-0-YWdlbnQ6OnVp-djEuMC4w-L2hvbWVwYWdl-YXBw",
        ),
    )
    (response_topic,) = produce.response.body.fields["Responses"]
    (partition,) = response_topic["PartitionResponses"]
    assert (partition["Index"], partition["ErrorCode"], partition["BaseOffset"], partition["LogAppendTimeMs"]) == (0, 0, 7, -1)


@pytest.mark.parametrize("name, magic", [("deepflow__00-produce-v2.pcap", 1), ("go-sniffer__kafka.pcap", 0)])
def test_legacy_message_sets(name, magic):
    produce = one(name, 0)
    (placed,) = produce.request.body.records
    assert placed.records.diagnostics == ()
    assert placed.records.batches and all(isinstance(m, LegacyMessage) and m.magic == magic and m.crc_valid for m in placed.records.batches)


def test_join_group_consumer_subscription():
    """The consumer protocol inside JoinGroup v7: both assignors subscribe to zqy-topic1."""
    join = one("deepflow__11-join-group-v7.pcap", 11)
    request = join.request.body.fields
    assert request["ProtocolType"] == "consumer" and request["GroupId"] == "zzzz12"
    protocols = request["Protocols"]
    assert [p["Name"] for p in protocols] == ["range", "cooperative-sticky"]
    readings = [p.annotations["Metadata"] for p in protocols]
    assert [r["Topics"] for r in readings] == [["zqy-topic1"], ["zqy-topic1"]]
    assert [r["Version"] for r in readings] == [1, 1]
    assert readings[0]["UserData"] is None and readings[1]["UserData"] == b"\xff\xff\xff\xff"
    response = join.response.body
    assert response.fields["ErrorCode"] == -1 and response.errors == (ErrorAt("ErrorCode", -1),)
    assert response.fields["MemberId"] == "consumer-zzzz12-1-d8e04a09-9f69-4efe-8f78-617db03d8090"


def test_sync_group_consumer_assignment():
    """SyncGroup v5 carries the range assignment: zqy-topic1 partitions 0, 1, 2, in the request and the response."""
    sync = one("deepflow__14-sync-group-v5.pcap", 14)
    (assignment,) = sync.request.body.fields["Assignments"]
    for reading in (assignment.annotations["Assignment"], sync.response.body.fields.annotations["Assignment"]):
        (owned,) = reading["AssignedPartitions"]
        assert (owned["Topic"], owned["Partitions"]) == ("zqy-topic1", [0, 1, 2])
        assert reading["UserData"] is None


def test_fetch_error_5120_is_a_value():
    """The odd Fetch v12 response: ErrorCode 5120 (0x1400) is read as a value, not a decoding failure.

    Everything around it is consistent: the session id echoes the request's, the topic list is empty and the
    body ends exactly at the frame's end.
    """
    fetch = one("deepflow__01-fetch-v12-unknown.pcap", 1)
    assert fetch.diagnostics == ()
    response = fetch.response.body
    assert response.fields["ErrorCode"] == 5120 and response.errors == (ErrorAt("ErrorCode", 5120),)
    assert response.fields["SessionId"] == fetch.request.body.fields["SessionId"] == 43854734
    assert response.fields["Responses"] == []


def test_ndpi_2023_client_ids_and_nulls():
    """SOURCES.md says this capture "includes client_id = null"; the bytes say otherwise.

    Every request header carries client id length 0x0010 "console-producer" (tshark agrees). The nulls in the
    capture are the TransactionalId of InitProducerId v4 and Produce v9, checked here.
    """
    exchanges = run("ndpi__kafka_2023.pcapng")[0]
    assert {e.client_id for e in exchanges} == {CONSOLE}
    by_key = {e.api_key: e for e in exchanges}
    assert by_key[22].request.body.fields["TransactionalId"] is None
    assert by_key[0].request.body.fields["TransactionalId"] is None
    (topic,) = by_key[3].request.body.fields["Topics"]
    assert (topic["Name"], topic["TopicId"]) == ("sampleTopic", "00000000-0000-0000-0000-000000000000")


def test_api_versions_v3_table():
    """The broker's ApiVersions v3 answer: 0.. its keys in order, with the versions it supports."""
    body = one("deepflow__18-api-versions-v3.pcap", 18).response.body.fields
    keys = body["ApiKeys"]
    assert (keys[0]["ApiKey"], keys[0]["MinVersion"], keys[0]["MaxVersion"]) == (0, 0, 9)
    assert (keys[1]["ApiKey"], keys[1]["MaxVersion"]) == (1, 12)
    assert [k["ApiKey"] for k in keys] == sorted(k["ApiKey"] for k in keys)
    assert body["ErrorCode"] == 0


def test_orphan_responses_keep_their_correlation_ids():
    orphans = [e for e in run("ndpi__kafka_2024.pcap")[0] if e.status == "orphan-response"]
    assert sorted(e.correlation_id for e in orphans) == [131, 140, 141]
    assert all(e.request is None and e.response.body.raw for e in orphans)


def test_cli_json_matches_the_core():
    """`kdissect read F --json -p 9092 -p 36333`: one parseable object per exchange, saying what the core says."""
    name = "ndpi__kafka_2024.pcap"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from kdissect.cli import main; main()",
            "read",
            str(CAPTURES / name),
            "--json",
            "-p",
            "9092",
            "-p",
            "36333",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(line["type"] == "exchange" for line in lines)
    got = [(o["status"], o["api_key"], o["api_version"], o["correlation_id"], o["client_id"]) for o in lines]
    assert sorted(got, key=repr) == sorted(EXCHANGES[name], key=repr)
    by_corr = {o["correlation_id"]: o for o in lines}
    assert by_corr[130]["topics"] == ["LB_MAIN_LOG_INPUT"]
    assert by_corr[130]["request"]["body"] == {"Topics": [{"Name": "LB_MAIN_LOG_INPUT"}]}
    assert by_corr[130]["api_name"] == "Metadata" and by_corr[130]["response"]["schema"] == "MetadataResponse"
    assert [d["code"] for d in by_corr[129]["request"]["diagnostics"]] == ["body.trailing-bytes"]
    assert by_corr[131]["request"] is None and by_corr[131]["response"]["schema"] == "MetadataResponse"
    assert by_corr[131]["response"]["body_raw"] is not None
    produce = by_corr[2]["request"]["body"]["TopicData"][0]["PartitionData"][0]
    assert produce["Index"] == 0 and produce["Records"]["batches"][0]["crc_valid"] is True
