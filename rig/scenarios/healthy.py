"""Healthy traffic the doctor once misread (issue 28): it must yield no warning on these captures.

KafkaJS, a client family the doctor had never seen, producing and consuming in a group; and a librdkafka consumer whose
other requests wait behind its own long-poll Fetch, because the broker answers one request at a time per connection.
"""

from __future__ import annotations

import time

from rig.clients import FIXED_TS, confluent_name
from rig.kafkajs import plan_records, run_kafkajs
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt
from rig.scenarios.doctor import records
from rig.scenarios.kit import BINARY_KEY, BINARY_VALUE, confluent_consumed, confluent_create_topics, confluent_produce, text_value


def kafkajs_records() -> list[dict]:
    """A keyed record with a header, a null key, a header key twice, binary bytes, empty key and value."""
    shapes = [
        (b"kafkajs-0", text_value("kafkajs", 0, 2), [("trace", b"abc123")]),
        (None, text_value("kafkajs", 1, 2), []),
        (b"kafkajs-2", text_value("kafkajs", 2, 2), [("dup", b"first"), ("dup", b"second")]),
        (BINARY_KEY, BINARY_VALUE[:32], [("bin", bytes([0xC3, 0x28]))]),
        (b"", b"", []),
        (b"kafkajs-5", text_value("kafkajs", 5, 2), []),
    ]
    return [
        {"key": key, "value": value, "headers": headers, "partition": i % 2, "timestamp": FIXED_TS + i}
        for i, (key, value, headers) in enumerate(shapes)
    ]


@scenario(
    "healthy-kafkajs",
    "KafkaJS 2.2.4 alone: create a topic, produce six records in one send (acks all), and a two-member group reads them",
    expect_apis={0, 1, 3, 10, 11, 12, 14, 18, 19},
)
def healthy_kafkajs(ctx: Ctx) -> None:
    topic, group = "kjs-topic", "kdrig-kjs-group"
    acts = [
        dict(act="create-topics", client_id="kdrig-kjs-setup", topics={topic: 2}),
        dict(act="produce", client_id="kdrig-kjs-producer", topic=topic, acks="all", batch=True, records=plan_records(kafkajs_records())),
        dict(act="consume", client_id="kdrig-kjs", group=group, topic=topic, members=["a", "b"], expected=6, seconds=30, max_wait_ms=500),
    ]
    run_kafkajs(ctx.manifest, ctx.bootstrap, acts)


@scenario(
    "healthy-long-poll-telemetry",
    "A confluent-kafka consumer (fetch.wait.max.ms 500, metadata refreshed every 300 ms, as for a pattern "
    "subscription that must see new topics soon) reads one record a second for 12 s: its Metadata and "
    "GetTelemetrySubscriptions requests often go out on the connection where its long-poll Fetch waits, and are "
    "answered only after it, as the broker answers one request at a time per connection",
    expect_apis={1, 3, 71},
)
def healthy_long_poll_telemetry(ctx: Ctx) -> None:
    from confluent_kafka import Consumer, Producer

    m, client, topic, group = ctx.manifest, confluent_name(), "polled", "kdrig-polled"
    confluent_create_topics(m, ctx.bootstrap, {topic: 1})
    producer = Producer({"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-polled-producer", "linger.ms": 0, "acks": 1})
    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": group,
            "client.id": "kdrig-polled-consumer",
            "fetch.wait.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 300,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 1000,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
        }
    )
    consumer.subscribe([topic])
    m.op(client, "subscribe", group=group, topics=[topic], fetch_wait_max_ms=500, metadata_refresh_ms=300)
    sent, started = 0, time.monotonic()
    while time.monotonic() - started < 12:
        if time.monotonic() - started >= sent:
            confluent_produce(m, {}, topic, records("polled", 1, 1, sent), acks=1, producer=producer)
            sent += 1
        msg = consumer.poll(0.1)
        if msg is not None and not msg.error():
            confluent_consumed(m, msg, group=group)
    attempt(m, client, "close", consumer.close, group=group)
    producer.flush(5)
