"""Each client library on its own: create (or auto-create) a topic, produce, consume in a group.

These show each client's own choice of API versions, client ids and request
order, with nothing else on the wire.
"""

from __future__ import annotations

import json
import subprocess
import time

from rig.clients import FIXED_TS, aiokafka_name, confluent_name, kafka_python_name, kcat_binary, kcat_env, kcat_name
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt, err_text
from rig.scenarios.kit import (
    BINARY_KEY,
    BINARY_VALUE,
    aiokafka_consumed,
    aiokafka_produce,
    confluent_consumed,
    confluent_create_topics,
    confluent_produce,
    kafka_python_consumed,
    kafka_python_create_topics,
    kafka_python_produce,
    text_value,
)

DWELL = 1.5
"""Seconds a consumer stays in its group after reading, so Heartbeats appear in the capture."""


def _dwell(poll) -> None:
    deadline = time.monotonic() + DWELL
    while time.monotonic() < deadline:
        poll()


def _records(tag: str, partitions: int = 2) -> list[dict]:
    return [
        {
            "key": f"{tag}-0".encode(),
            "value": text_value(tag, 0, 2),
            "partition": 0,
            "timestamp": FIXED_TS,
            "headers": [("client", tag.encode())],
        },
        {"key": f"{tag}-1".encode(), "value": text_value(tag, 1, 2), "partition": 1 % partitions, "timestamp": FIXED_TS + 1, "headers": []},
        {"key": None, "value": text_value(tag, 2, 2), "partition": 0, "timestamp": FIXED_TS + 2, "headers": [("a", b"1"), ("a", b"2")]},
        {"key": BINARY_KEY, "value": BINARY_VALUE[:32], "partition": 1 % partitions, "timestamp": FIXED_TS + 3, "headers": []},
    ]


@scenario(
    "client-confluent",
    "confluent-kafka alone: admin create, produce (zstd), group consume with commit, leave",
    expect_apis={0, 1, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19},
)
def client_confluent(ctx: Ctx) -> None:
    from confluent_kafka import Consumer

    m, client = ctx.manifest, confluent_name()
    confluent_create_topics(m, ctx.bootstrap, {"c-topic": 2})
    confluent_produce(
        m,
        {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-c-producer", "linger.ms": 50},
        "c-topic",
        _records("confluent"),
        codec="zstd",
        acks="all",
    )
    group = "kdrig-c-group"
    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": group,
            "client.id": "kdrig-c-consumer",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "max.poll.interval.ms": 6000,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["c-topic"])
    got, deadline = 0, time.monotonic() + 30
    while got < 4 and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            got += 1
            confluent_consumed(m, msg, group=group)
    _dwell(lambda: consumer.poll(0.1))
    attempt(
        m,
        client,
        "commit",
        lambda: consumer.commit(asynchronous=False),
        show=lambda tps: [[tp.topic, tp.partition, tp.offset] for tp in tps or []],
        group=group,
    )
    attempt(m, client, "close", consumer.close, group=group)


@scenario(
    "client-kafka-python",
    "kafka-python alone: admin create, produce (gzip), group consume with commit, leave",
    expect_apis={0, 1, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19},
)
def client_kafka_python(ctx: Ctx) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    m, client = ctx.manifest, kafka_python_name()
    kafka_python_create_topics(m, ctx.bootstrap, {"kp-topic": 2})
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-kp-producer", compression_type="gzip", acks=1, linger_ms=50)
    kafka_python_produce(m, producer, "kp-topic", _records("kafka-python"), codec="gzip", acks=1)
    producer.close(10)
    group = "kdrig-kp-group"
    consumer = KafkaConsumer(
        "kp-topic",
        bootstrap_servers=ctx.bootstrap,
        group_id=group,
        client_id="kdrig-kp-consumer",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=6000,
    )
    got, deadline = 0, time.monotonic() + 30
    while got < 4 and time.monotonic() < deadline:
        for _tp, recs in sorted(consumer.poll(200).items()):
            for rec in recs:
                got += 1
                kafka_python_consumed(m, rec, group=group)
    _dwell(lambda: consumer.poll(100))
    attempt(m, client, "commit", consumer.commit, group=group)
    attempt(m, client, "close", consumer.close, group=group)


@scenario(
    "client-aiokafka",
    "aiokafka alone: admin create, produce (snappy, Produce v7), group consume with commit, stop (aiokafka sends no LeaveGroup here)",
    expect_apis={0, 1, 3, 8, 9, 10, 11, 12, 14, 18, 19},
)
def client_aiokafka(ctx: Ctx) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    m, client = ctx.manifest, aiokafka_name()
    group = "kdrig-aio-group"

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=ctx.bootstrap, client_id="kdrig-aio-admin")
        await admin.start()
        try:
            await admin.create_topics([NewTopic("aio-topic", 2, 1)])
            m.op(client, "create_topics", topics=["aio-topic"], partitions=[2])
        except Exception as exc:
            m.op(client, "create_topics", topics=["aio-topic"], partitions=[2], result=err_text(exc))
        await admin.close()

        producer = AIOKafkaProducer(
            bootstrap_servers=ctx.bootstrap, client_id="kdrig-aio-producer", compression_type="snappy", acks=1, linger_ms=50
        )
        await producer.start()
        await aiokafka_produce(m, producer, "aio-topic", _records("aiokafka"), codec="snappy", acks=1)
        await producer.stop()

        consumer = AIOKafkaConsumer(
            "aio-topic",
            bootstrap_servers=ctx.bootstrap,
            group_id=group,
            client_id="kdrig-aio-consumer",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            max_poll_interval_ms=6000,
        )
        await consumer.start()
        got, deadline = 0, time.monotonic() + 30
        while got < 4 and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for _tp, recs in sorted(batches.items()):
                for rec in recs:
                    got += 1
                    aiokafka_consumed(m, rec, group=group)
        await asyncio.sleep(DWELL)  # the heartbeat task runs meanwhile
        try:
            await consumer.commit()
            m.op(client, "commit", group=group)
        except Exception as exc:
            m.op(client, "commit", group=group, result=err_text(exc))
        await consumer.stop()
        m.op(client, "close", group=group)

    asyncio.run(run())


def _kcat(ctx: Ctx, args: list[str], stdin: str | None = None, bundled: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [kcat_binary(), "-b", ctx.bootstrap, *args], input=stdin, text=True, capture_output=True, env=kcat_env(bundled), timeout=timeout
    )


@scenario(
    "client-kcat",
    "kcat (with the wheel's librdkafka) alone: produce to an auto-created topic (lz4, duplicate "
    "headers, null key, tombstone), consume, then consume in a group; captured on 'any' (SLL2)",
    interface="any",
    expect_apis={0, 1, 3, 8, 10, 11, 14, 18},
)
def client_kcat(ctx: Ctx) -> None:
    m, client = ctx.manifest, kcat_name(True)
    topic = "kcat-topic"
    # key:value lines; a line without ':' has a null key; "-Z" turns an empty value into null.
    lines = ["kcat-0:kcat value 000 with headers", "kcat value 001 without a key", "kcat-2:"]
    produce = _kcat(
        ctx,
        [
            "-P",
            "-t",
            topic,
            "-p",
            "0",
            "-K:",
            "-Z",
            "-z",
            "lz4",
            "-H",
            "source=kcat",
            "-H",
            "dup=1",
            "-H",
            "dup=2",
            "-X",
            "client.id=kdrig-kcat-producer",
        ],
        "\n".join(lines) + "\n",
    )
    m.op(
        client,
        "produce",
        topic=topic,
        lines=lines,
        result="ok" if produce.returncode == 0 else f"error exit {produce.returncode}: {produce.stderr[-300:]}",
    )

    read = _kcat(ctx, ["-C", "-t", topic, "-o", "beginning", "-e", "-J", "-Z", "-X", "client.id=kdrig-kcat-reader"])
    consumed = [json.loads(line) for line in read.stdout.splitlines() if line.startswith("{")]
    for rec in consumed:
        _kcat_consumed(m, client, rec, group=None)
    # kcat -P prints no delivery reports: offsets and timestamps come from the read-back.
    for i, line in enumerate(lines):
        key, value = (line.split(":", 1) + [None])[:2] if ":" in line else (None, line)
        value = value or None
        back = consumed[i] if i < len(consumed) else {}
        m.produced(
            client,
            topic=topic,
            partition=0,
            offset=back.get("offset"),
            timestamp=back.get("ts"),
            key=key.encode() if key else None,
            value=value.encode() if value else None,
            headers=[("source", b"kcat"), ("dup", b"1"), ("dup", b"2")],
            codec="lz4",
            acks="all",
            source_of_offset="read back",
        )

    group = "kdrig-kcat-group"
    read = _kcat(
        ctx,
        [
            "-G",
            group,
            "-e",
            "-J",
            "-Z",
            "-X",
            "session.timeout.ms=6000",
            "-X",
            "auto.offset.reset=earliest",
            "-X",
            "client.id=kdrig-kcat-member",
            topic,
        ],
    )
    for line in read.stdout.splitlines():
        if line.startswith("{"):
            _kcat_consumed(m, client, json.loads(line), group=group)
    m.op(client, "group_consume", group=group, topics=[topic], result="ok" if read.returncode == 0 else f"error exit {read.returncode}")


def _kcat_consumed(m, client: str, rec: dict, group) -> None:
    flat = rec.get("headers") or []
    headers = [(flat[i], None if flat[i + 1] is None else flat[i + 1].encode()) for i in range(0, len(flat), 2)]
    m.consumed(
        client,
        group=group,
        topic=rec["topic"],
        partition=rec["partition"],
        offset=rec["offset"],
        timestamp=rec.get("ts"),
        key=None if rec.get("key") is None else rec["key"].encode(),
        value=None if rec.get("payload") is None else rec["payload"].encode(),
        headers=headers,
    )


@scenario(
    "kcat-debian-librdkafka",
    "Debian's kcat with its own librdkafka 2.0.2: it fails to read tansu's ApiVersions reply "
    "and gives up (the exchange itself is well-formed Kafka)",
    expect_apis={18},
)
def kcat_debian(ctx: Ctx) -> None:
    m, client = ctx.manifest, kcat_name(False)
    result = _kcat(ctx, ["-L", "-X", "client.id=kdrig-kcat-debian", "-m", "5"], bundled=False, timeout=30)
    last_line = (result.stderr.strip().splitlines() or [""])[-1][:300]
    m.op(client, "metadata_list", result="ok" if result.returncode == 0 else f"error exit {result.returncode}: {last_line}")
