"""Troubled traffic for `kdissect doctor`: each scenario reproduces conditions for real and writes, besides the
usual lines, one `expect` line per finding the capture must yield (its id and the evidence that must name it).

tansu 0.6 and the clients cannot show everything (../shared/rig-notes.md): tests/test_doctor.py crafts the rest
with the project's encoders, and says which.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from rig.clients import FIXED_TS, kafka_python_name
from rig.manifest import Manifest
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt
from rig.scenarios.kit import confluent_produce, kafka_python_consumed, kafka_python_create_topics, kafka_python_produce, text_value

TIMEOUTS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 6000}
"""Short group timeouts, so that removals and slow joins happen within seconds (tansu enforces them)."""


def expect(m: Manifest, finding: str, **evidence: object) -> None:
    """The capture must yield this finding, and its evidence must name each of `evidence` (client_id, group,
    topic, partition, api: an API among the evidence exchanges')."""
    m.write("expect", finding=finding, **evidence)


def expect_not(m: Manifest, finding: str, why: str, **evidence: object) -> None:
    """The capture must not yield this finding about `evidence`: what the traffic shows is not that problem."""
    m.write("expect-not", finding=finding, why=why, **evidence)


def records(tag: str, n: int, partitions: int = 1, start: int = 0) -> list[dict]:
    return [
        {
            "key": f"{tag}-{start + j}".encode(),
            "value": text_value(tag, start + j, 1),
            "partition": (start + j) % partitions,
            "timestamp": FIXED_TS + start + j,
            "headers": [],
        }
        for j in range(n)
    ]


def kafka_python_member(bootstrap: str, group: str, name: str, topic: str, **options):
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **{**TIMEOUTS, **options},
    )
    consumer.subscribe([topic])
    return consumer


def poll_all(m: Manifest, members: dict, seconds: float, group: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for name, consumer in members.items():
            for _tp, recs in sorted(consumer.poll(100).items()):
                for rec in recs:
                    kafka_python_consumed(m, rec, group=group, member=name)


MEMBER = """
import sys, time
from kafka import KafkaConsumer
consumer = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[2], client_id=sys.argv[3],
    enable_auto_commit=True, auto_commit_interval_ms=1000, auto_offset_reset="earliest",
    session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=6000)
consumer.subscribe([sys.argv[4]])
deadline = time.monotonic() + float(sys.argv[5])
while time.monotonic() < deadline:
    consumer.poll(100)
consumer.close()
"""
"""A group member in its own process, so that SIGSTOP freezes it whole (its heartbeat thread too)."""


@scenario(
    "doctor-member-removed",
    "Two kafka-python members with a 6 s session timeout; member B's process is frozen (SIGSTOP) for 10 s: the "
    "broker removes it and rebalances, and when it thaws its auto-commit and heartbeat get UNKNOWN_MEMBER_ID "
    "before it rejoins",
    expect_apis={8, 11, 12, 14},
)
def member_removed(ctx: Ctx) -> None:
    m, client = ctx.manifest, kafka_python_name()
    topic, group = "frozen", "kdrig-frozen"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 2})
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-frozen-producer", acks=1)
    kafka_python_produce(m, producer, topic, records("frozen", 4, 2), acks=1)
    a = kafka_python_member(ctx.bootstrap, group, "kdrig-frozen-a", topic)
    b = subprocess.Popen([sys.executable, "-c", MEMBER, ctx.bootstrap, group, "kdrig-frozen-b", topic, "28"])
    m.op(client, "start member", group=group, member="b", process="own")
    poll_all(m, {"a": a}, 8, group)
    kafka_python_produce(m, producer, topic, records("frozen", 4, 2, 4), acks=1)
    poll_all(m, {"a": a}, 2, group)
    os.kill(b.pid, signal.SIGSTOP)
    m.op(client, "freeze member", group=group, member="b", seconds=10)
    poll_all(m, {"a": a}, 10, group)
    os.kill(b.pid, signal.SIGCONT)
    m.op(client, "thaw member", group=group, member="b")
    poll_all(m, {"a": a}, 8, group)
    b.wait(30)
    attempt(m, client, "close", a.close, group=group, member="a")
    producer.close(5)
    expect(m, "group.member-removed", group=group, client_id="kdrig-frozen-b")
    expect(m, "group.commit-failed", group=group, client_id="kdrig-frozen-b", api="OffsetCommit")
    expect(m, "group.member-id-required", group=group, api="JoinGroup")
    expect(m, "consumer.never-commits", group=group, client_id="kdrig-frozen-a", api="Fetch")  # A never commits


@scenario(
    "doctor-lag",
    "A kafka-python producer writes 50 records a second while a kafka-python consumer (assigned, committing for its "
    "group) takes one record every half second: the high watermark runs away from the fetch offset and the lag grows",
    expect_apis={0, 1, 8},
)
def lag(ctx: Ctx) -> None:
    m, client = ctx.manifest, kafka_python_name()
    topic, group = "laggy", "kdrig-lag"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 1})
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-lag-producer", acks=1, linger_ms=0)
    consumer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap,
        group_id=group,
        client_id="kdrig-lag-consumer",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    consumer.assign([TopicPartition(topic, 0)])
    m.op(client, "slow consumer", group=group, seconds_per_record=0.5)
    sent = 0
    deadline = time.monotonic() + 16
    while time.monotonic() < deadline:
        kafka_python_produce(m, producer, topic, records("lag", 25, 1, sent), acks=1)
        sent += 25
        for _tp, recs in sorted(consumer.poll(100, max_records=1).items()):
            for rec in recs:
                kafka_python_consumed(m, rec, group=group)
        attempt(m, client, "commit", consumer.commit, group=group)
        time.sleep(0.5)
    attempt(m, client, "close", consumer.close, group=group)
    producer.close(5)
    expect(m, "consumer.lag", group=group, topic=topic, partition=0, client_id="kdrig-lag-consumer")


@scenario(
    "doctor-rebalance-storm",
    "A kafka-python member stays while a second one joins, polls until it has partitions, and leaves, six times "
    "over: two new generations per cycle (tansu holds each join about 3 s): eight generations in one to one and a half minutes",
    expect_apis={11, 13, 14},
)
def rebalance_storm(ctx: Ctx) -> None:
    m, client = ctx.manifest, kafka_python_name()
    topic, group = "stormy", "kdrig-storm"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 2})
    steady = kafka_python_member(ctx.bootstrap, group, "kdrig-storm-steady", topic)
    poll_all(m, {"steady": steady}, 4, group)
    for cycle in range(6):
        name = f"kdrig-storm-{cycle}"
        visitor = kafka_python_member(ctx.bootstrap, group, name, topic)
        m.op(client, "join", group=group, member=name)
        deadline = time.monotonic() + 15
        while not visitor.assignment() and time.monotonic() < deadline:
            poll_all(m, {"steady": steady, name: visitor}, 0.5, group)
        attempt(m, client, "close", visitor.close, group=group, member=name)
    poll_all(m, {"steady": steady}, 4, group)
    attempt(m, client, "close", steady.close, group=group, member="steady")
    expect(m, "group.rebalance-storm", group=group, api="JoinGroup")
    expect(m, "group.member-id-required", group=group, api="JoinGroup")


@scenario(
    "doctor-missing-topic",
    "A confluent-kafka producer (allow.auto.create.topics=false) sends one record to a topic that does not exist: "
    "tansu answers UNKNOWN_TOPIC_OR_PARTITION and librdkafka asks for metadata again and again until "
    "message.timeout.ms (4 s) fails the record",
    expect_apis={3},
)
def missing_topic(ctx: Ctx) -> None:
    conf = {
        "bootstrap.servers": ctx.bootstrap,
        "client.id": "kdrig-missing-producer",
        "allow.auto.create.topics": False,
        "message.timeout.ms": 4000,
        "topic.metadata.refresh.fast.interval.ms": 10,
        "retry.backoff.ms": 10,
    }
    confluent_produce(ctx.manifest, conf, "no-such-topic", records("missing", 1), acks=1)
    expect(ctx.manifest, "producer.unknown-topic", topic="no-such-topic", client_id="kdrig-missing-producer", api="Metadata")


@scenario(
    "doctor-churn-tiny-batches",
    "kafka-python makes a new producer for each of 40 records (connection churn), then one producer sends 150 "
    "records one at a time with linger.ms 0, flushing after each (tiny batches)",
    expect_apis={0, 3, 18},
)
def churn_tiny_batches(ctx: Ctx) -> None:
    m = ctx.manifest
    topic = "churny"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 1})
    from kafka import KafkaProducer

    for i in range(40):
        producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-churn", acks=1)
        kafka_python_produce(m, producer, topic, records("churn", 1, 1, i), acks=1)
        producer.close(5)
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-tiny", acks=1, linger_ms=0)
    for i in range(150):
        kafka_python_produce(m, producer, topic, records("tiny", 1, 1, i), acks=1)
    producer.close(5)
    expect(m, "protocol.connection-churn", client_id="kdrig-churn")
    expect(m, "producer.tiny-batches", client_id="kdrig-tiny", api="Produce")


@scenario(
    "doctor-empty-fetch-spin",
    "A kafka-python consumer with fetch_max_wait_ms=0 assigned an empty partition polls in a tight loop for 0.3 s: "
    "hundreds of empty fetches, thousands a second",
    expect_apis={1},
)
def empty_fetch_spin(ctx: Ctx) -> None:
    m, client = ctx.manifest, kafka_python_name()
    topic = "idle"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 1})
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap,
        client_id="kdrig-spinner",
        auto_offset_reset="earliest",
        fetch_max_wait_ms=0,
        enable_auto_commit=False,
    )
    consumer.assign([TopicPartition(topic, 0)])
    m.op(client, "spin", seconds=0.3, fetch_max_wait_ms=0)
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        consumer.poll(0)
    attempt(m, client, "close", consumer.close)
    expect(m, "consumer.empty-fetch-spin", client_id="kdrig-spinner", api="Fetch")


def idempotent_one_at_a_time(ctx: Ctx, topic: str, client_id: str, count: int) -> None:
    """An idempotent kafka-python producer (acks=all, request timeout 1 s, 5 retries) sends *count* records one at a
    time: behind a relay that holds a response past the timeout, it sends the batch again."""
    m = ctx.manifest
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 1})
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=ctx.bootstrap,
        client_id=client_id,
        acks="all",
        enable_idempotence=True,
        request_timeout_ms=1000,
        retries=5,
        linger_ms=0,
    )
    for i in range(count):
        kafka_python_produce(m, producer, topic, records(topic, 1, 1, i), acks="all", idempotent=True)
    producer.close(5)


def slow_produce(api_key: int, n: int) -> float:
    """The 5th Produce response held past the producer's request timeout, every 10th for 400 ms."""
    if api_key != 0:
        return 0.0
    return 2.5 if n == 5 else 0.4 if n % 10 == 0 else 0.0


@scenario(
    "doctor-slow-broker",
    "An idempotent kafka-python producer (acks=all, request_timeout_ms 1000) sends 60 records one at a time "
    "through a relay that holds every 10th Produce response 400 ms and the 5th 2.5 s: latency outliers, and the "
    "5th batch sent again with the same producer id, epoch and sequence",
    expect_apis={0, 22},
    relay=slow_produce,
)
def slow_broker(ctx: Ctx) -> None:
    idempotent_one_at_a_time(ctx, "slowly", "kdrig-slow-producer", 60)
    expect(ctx.manifest, "latency.outliers", api="Produce")
    expect(ctx.manifest, "producer.duplicate-send", client_id="kdrig-slow-producer", topic="slowly", api="Produce")
    expect(ctx.manifest, "producer.sequence-refused", client_id="kdrig-slow-producer", topic="slowly", api="Produce")
    expect(ctx.manifest, "protocol.client-gave-up", client_id="kdrig-slow-producer", api="Produce")
