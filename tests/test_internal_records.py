"""Kafka's own records read where they cross the wire: __consumer_offsets, __transaction_state, __share_group_state and
the remote log metadata topic, in every output (read --json, show, records, the Spark records table) and in -Y.

Byte examples are Kafka's: tests/kafka_written/payloads.tsv holds the keys and values Kafka's CoordinatorRecordSerde
writes for the values of its tests (GroupCoordinatorRecordSerdeTest, GroupCoordinatorRecordHelpersTest,
TransactionLogTest); every record type and value version makes a round trip through the project's encoder; and
captures/internal-topics-crafted.pcap carries them in a follower's replication Fetch and a tool's Fetch by topic id
(rig/crafted.py: tansu serves none of Kafka's own topics).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import normal, struct_of

from kdissect.capture import open_capture
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.filter import compile_filter
from kdissect.records.internal import read_kafka_record
from kdissect.schema import BUILTIN, pick
from kdissect.schema.generated_extras import INTERNAL_TOPICS
from kdissect.schema.tree import Struct
from kdissect.schema.versioned import known_versions
from kdissect.testing.payload_encoder import encode_internal
from kdissect.views.json_lines import decode_bytes, exchange_json, value_json

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "captures" / "internal-topics-crafted.pcap"
WRITTEN = dict(line.split("\t") for line in (ROOT / "tests" / "kafka_written" / "payloads.tsv").read_text().splitlines() if line[0] != "#")
WRITTEN = {name: bytes.fromhex(data) for name, data in WRITTEN.items()}
OFFSETS, TRANSACTIONS = INTERNAL_TOPICS["__consumer_offsets"], INTERNAL_TOPICS["__transaction_state"]
SETTINGS = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))


def test_the_tables_hold_every_record_type_of_the_specs():
    """From extras/: the group coordinator's 22 record types (9 and 18 are unused numbers in Kafka), the transaction
    coordinator's one, the share coordinator's two and the remote log metadata topic's four."""
    assert sorted(OFFSETS.types) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23]
    assert (OFFSETS.types[1].name, OFFSETS.types[2].name, OFFSETS.types[3].name) == (
        "OffsetCommit",
        "GroupMetadata",
        "ConsumerGroupMetadata",
    )
    assert [t.name for t in TRANSACTIONS.types.values()] == ["TransactionLog"]
    assert [t.name for t in INTERNAL_TOPICS["__share_group_state"].types.values()] == ["ShareSnapshot", "ShareUpdate"]
    assert INTERNAL_TOPICS["__remote_log_metadata"].framing == "metadata"


def test_kafkas_own_bytes():
    """GroupCoordinatorRecordSerdeTest.testSerializeKey/Value; GroupCoordinatorRecordHelpersTest.testNewOffsetCommitRecord
    (version 3: a leader epoch); TransactionLogTest.shouldReadWriteMessages ("one", Ongoing, five partitions)."""
    read, problem = read_kafka_record(
        OFFSETS, WRITTEN["offsets.consumer-group-metadata.key"], WRITTEN["offsets.consumer-group-metadata.value"]
    )
    assert problem == "" and value_json(read) == {
        "record": "ConsumerGroupMetadata",
        "type": 3,
        "key": {"GroupId": "group"},
        "value": {"Version": 0, "Epoch": 10},
    }
    read, problem = read_kafka_record(OFFSETS, WRITTEN["offsets.offset-commit.key"], WRITTEN["offsets.offset-commit.value"])
    assert problem == "" and value_json(read) == {
        "record": "OffsetCommit",
        "type": 1,
        "key": {"group": "group-id", "topic": "foo", "partition": 1},
        "value": {"Version": 3, "offset": 100, "leaderEpoch": 10, "metadata": "metadata", "commitTimestamp": 1234},
    }
    read, problem = read_kafka_record(TRANSACTIONS, WRITTEN["transactions.key"], WRITTEN["transactions.value"])
    value = value_json(read)["value"]
    assert problem == "" and value_json(read)["key"] == {"TransactionalId": "one"}
    assert (value["Version"], value["ProducerId"], value["ProducerEpoch"], value["TransactionTimeoutMs"], value["TransactionStatus"]) == (
        1,
        1,
        0,
        1000,
        1,
    )
    assert value["TransactionPartitions"] == [{"Topic": "topic1", "PartitionIds": [0, 1]}, {"Topic": "topic2", "PartitionIds": [0, 1, 2]}]


def test_a_tombstone_reads_its_key():
    read, problem = read_kafka_record(OFFSETS, WRITTEN["offsets.offset-commit.key"], None)
    assert problem == "" and read.record == "OffsetCommit" and read.value is None and read.key["topic"] == "foo"


CASES = [
    (topic, kind, version)
    for topic, table in sorted(INTERNAL_TOPICS.items())
    for kind, record_type in sorted(table.types.items())
    for version in known_versions(record_type.value)
]


def case(topic: str, kind: int, version: int):
    record_type = INTERNAL_TOPICS[topic].types[kind]
    value = pick(record_type.value, version)
    keys = struct_of(record_type.key[0].fields, 0, False) if record_type.key else st.none()
    return st.tuples(st.just((topic, kind, version)), keys, struct_of(value.fields, version, version in value.flexible))


@settings(max_examples=400, **SETTINGS)
@given(st.sampled_from(CASES).flatmap(lambda c: case(*c)))
def test_round_trip_every_record_type_and_version(drawn):
    """Random keys and values of every record type at every version, written by the project's encoder."""
    (name, kind, version), key, value = drawn
    topic = INTERNAL_TOPICS[name]
    record_type = topic.types[kind]
    read, problem = read_kafka_record(topic, *encode_internal(topic, kind, key or {}, version, value))
    assert problem == "" and (read.record, read.type) == (record_type.name, kind)
    assert normal(read.key) == normal(key)
    assert normal(read.value) == normal(Struct(("Version",) + value.names, [version] + value.values))


@pytest.mark.parametrize("name", ["offsets.offset-commit", "transactions"])
def test_every_cut_is_a_named_problem(name):
    key, value = WRITTEN[f"{name}.key"], WRITTEN[f"{name}.value"]
    topic = OFFSETS if name.startswith("offsets") else TRANSACTIONS
    for cut in range(len(value)):
        read, problem = read_kafka_record(topic, key, value[:cut])
        assert problem and read is not None and read.key is not None, cut
    for cut in range(len(key)):
        read, problem = read_kafka_record(topic, key[:cut], value)
        assert problem, cut


def test_odd_records_are_named():
    assert read_kafka_record(OFFSETS, b"\x00\x09abc", b"")[1] == "record type 9 is not one kdissect knows"
    assert read_kafka_record(OFFSETS, b"\x01", b"")[1] == "a key of 1 bytes holds no record type"
    remote = INTERNAL_TOPICS["__remote_log_metadata"]
    assert read_kafka_record(remote, None, b"\x00\x00\x00")[1] == "frame version 0, not 1"
    assert read_kafka_record(remote, None, b"\x01\x80")[1] == "the value's frame version, type and version do not read"


# -- in a capture -------------------------------------------------------------------------------------------------


def exchanges() -> list[Exchange]:
    with open_capture(CAPTURE) as source:
        return [e for e in make_dissector(Options()).run(source.packets()) if isinstance(e, Exchange)]


def kdissect(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "240"}
    done = subprocess.run(
        [sys.executable, "-m", "kdissect", *args], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True, env=env
    )
    return done.stdout


def manifest() -> list[dict]:
    lines = [json.loads(line) for line in CAPTURE.with_suffix(".manifest.jsonl").read_text().splitlines()]
    return [line for line in lines if line["kind"] == "consumed"]


def test_read_json_reads_every_record_as_the_manifest_says():
    """The follower's replication Fetch (by topic name) and the tool's (Fetch v13, by topic id named by Metadata):
    every record read, of the kind the manifest names; and no diagnostic."""
    found = {}
    for exchange in exchanges():
        tree = exchange_json(exchange)
        assert tree["status"] == "ok" and not tree["response"]["diagnostics"]
        for topic in (tree["response"]["body"] or {}).get("Responses", []):
            name = topic.get("Topic") or topic["_kdissect"]["TopicId"]
            for partition in topic["Partitions"]:
                for batch in partition["Records"]["batches"]:
                    for record in batch["records"]:
                        found[(tree["client_id"], name, partition["PartitionIndex"], record["offset"])] = record
    readers = {"broker 2 (replica fetcher)": "broker-2-fetcher-0", "offsets-reader": "offsets-reader"}
    for line in manifest():
        record = found[(readers[line["client"]], line["topic"], line["partition"], line["offset"])]
        assert record["_kdissect"]["record"] == line["record"]
        assert (decode_bytes(record["key"]), decode_bytes(record["value"])) == (decode_bytes(line["key"]), decode_bytes(line["value"]))
    assert len(found) == len(manifest())


def test_group_metadata_and_its_members():
    """A classic group's GroupMetadata value holds each member's subscription and assignment as bytes, as Kafka keeps them."""
    fetch = exchanges()[0]
    record = exchange_json(fetch)["response"]["body"]["Responses"][0]["Partitions"][0]["Records"]["batches"][0]["records"][0]
    value = record["_kdissect"]["value"]
    assert (value["Version"], value["protocolType"], value["generation"], value["protocol"]) == (3, "consumer", 5, "range")
    assert value["members"][0]["clientId"] == "orders-consumer-1"


def test_show_records_and_filters_reach_them():
    shown = kdissect("show", str(CAPTURE), "--exchange", "1")
    assert "OffsetCommit (type 1, read by kdissect)" in shown and "TransactionLog (type 0, read by kdissect)" in shown
    assert "ShareSnapshot (type 0, read by kdissect)" in shown and "'orders-consumers'" in shown
    lines = kdissect("records", str(CAPTURE)).splitlines()
    assert any(
        'key OffsetCommit {"group":"orders-consumers","topic":"orders","partition":0}  value {"Version":4,"offset":4211' in line
        for line in lines
    )
    assert any("key OffsetCommit" in line and "value null" in line for line in lines)  # the tombstone
    streamed = [json.loads(line) for line in kdissect("records", str(CAPTURE), "--json").splitlines()]
    assert sum(1 for r in streamed if r["_kdissect"]["record"] == "TransactionLog") == 2
    field = "response.Responses.Partitions.Records.records"
    ids = kdissect("read", str(CAPTURE), "-Y", f'{field}.key.group == "orders-consumers"', "-e", "id", "-e", "client_id").split()
    assert ids == ["1", "broker-2-fetcher-0", "3", "offsets-reader"]
    offsets = kdissect("read", str(CAPTURE), "-Y", f"{field}.value.offset > 1000", "-e", f"{field}.value.offset").split()
    assert offsets == ["100,4211", "100,4211"]  # every offset commit of the exchanges that hold one past 1000
    assert compile_filter([("-Y", f"{field}.value.TransactionStatus == 3")], BUILTIN)  # a path of the tables: checked before running


def test_the_spark_records_table_carries_the_reading():
    from kdissect.pipeline.rows import record_rows

    rows = [row for exchange in exchanges() for row in record_rows(exchange, "c", 1, 1)]
    read = [json.loads(row["reading"]) for row in rows]
    assert [r["record"] for r in read[:6]] == [
        "GroupMetadata",
        "OffsetCommit",
        "OffsetCommit",
        "ConsumerGroupMetadata",
        "ConsumerGroupMemberMetadata",
        "OffsetCommit",
    ]
    assert read[5]["value"] is None and read[1]["key"] == {"group": "group-id", "topic": "foo", "partition": 1}
