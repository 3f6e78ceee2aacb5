"""Produce/consume helpers per client library, each writing manifest lines.

A record to produce is a plain dict: ``key``, ``value``, ``headers`` (list of
pairs, duplicates kept, values may be None), ``partition``, ``timestamp`` (ms or
None to let the client stamp it).
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Optional

from rig.clients import FIXED_TS, aiokafka_name, confluent_name, kafka_python_name
from rig.manifest import Manifest

BINARY_KEY = bytes([0xFF, 0x00, 0xFE, 0x80, 0x81, 0x7F])
"""Not valid UTF-8: the manifest carries it as {"base64": ...}."""
BINARY_VALUE = bytes(range(256))


def text_value(tag: str, i: int, repeat: int = 4) -> bytes:
    """A readable, compressible value that is easy to grep for in a capture."""
    return (f"{tag} value {i:03d}; " * repeat).encode()


def edge_records(tag: str, partition: Optional[int] = 0, base_ts: int = FIXED_TS) -> list[dict]:
    """One batch worth of the record shapes a decoder must get right."""
    return [
        {
            "key": f"{tag}-key-0".encode(),
            "value": text_value(tag, 0),
            "headers": [("trace", b"abc123")],
            "partition": partition,
            "timestamp": base_ts,
        },
        {"key": None, "value": text_value(tag, 1), "headers": [], "partition": partition, "timestamp": base_ts + 1},
        {
            "key": f"{tag}-key-2".encode(),
            "value": None,
            "headers": [],  # tombstone
            "partition": partition,
            "timestamp": base_ts + 2,
        },
        {
            "key": f"{tag}-key-3".encode(),
            "value": text_value(tag, 3),
            "headers": [("dup", b"first"), ("dup", b"second"), ("null-header", None), ("empty", b"")],
            "partition": partition,
            "timestamp": base_ts + 3,
        },
        {
            "key": BINARY_KEY,
            "value": BINARY_VALUE,
            "headers": [("bin", bytes([0xC3, 0x28]))],
            "partition": partition,
            "timestamp": base_ts + 4,
        },
        {
            "key": b"",
            "value": b"",
            "headers": [],  # empty, not null
            "partition": partition,
            "timestamp": base_ts + 5,
        },
    ]


# --- confluent-kafka (librdkafka) -----------------------------------------------------------


def confluent_produce(
    m: Manifest,
    conf: dict,
    topic: str,
    records: list[dict],
    *,
    codec: str = "none",
    acks: Any = "all",
    client: Optional[str] = None,
    producer=None,
    flush: bool = True,
    **extra: Any,
) -> list:
    """Produce *records* with one librdkafka producer; one manifest line each."""
    from confluent_kafka import Producer

    client = client or confluent_name()
    own = producer is None
    if own:
        producer = Producer({"compression.type": codec, "acks": str(acks), **conf})
    reports: list = [None] * len(records)

    def report(index: int):
        def on_delivery(err, msg):
            reports[index] = (err, msg)

        return on_delivery

    for i, rec in enumerate(records):
        kwargs = {"value": rec["value"], "key": rec["key"], "on_delivery": report(i)}
        if rec.get("headers"):
            kwargs["headers"] = list(rec["headers"])
        if rec.get("partition") is not None:
            kwargs["partition"] = rec["partition"]
        if rec.get("timestamp") is not None:
            kwargs["timestamp"] = rec["timestamp"]
        producer.produce(topic, **kwargs)
        producer.poll(0)
    if flush:
        producer.flush(30)
    for rec, rep in zip(records, reports, strict=True):
        err, msg = rep if rep else (None, None)
        offset = msg.offset() if msg is not None and err is None else None
        if offset is not None and offset < 0:  # acks=0: librdkafka reports -1001
            offset = None
        line = dict(
            topic=topic,
            partition=msg.partition() if msg is not None else rec.get("partition"),
            offset=offset,
            timestamp=msg.timestamp()[1] if msg is not None and msg.timestamp()[0] else rec.get("timestamp"),
            key=rec["key"],
            value=rec["value"],
            headers=rec.get("headers"),
            codec=codec,
            acks=acks,
            **extra,
            **(rec.get("manifest") or {}),  # what a scenario says of this record alone (a value scenario: its decoded value)
        )
        if err is not None:
            line["error"] = f"{err.code()} {err.name()}"
        m.produced(client, **line)
    if own:
        producer.flush(10)
    return reports


def confluent_consume(
    m: Manifest,
    conf: dict,
    assignments: Iterable[tuple],
    expected: int,
    *,
    timeout: float = 30.0,
    client: Optional[str] = None,
    group: Optional[str] = None,
    **extra: Any,
) -> list:
    """Read *expected* records from (topic, partition, offset) assignments, no group join."""
    from confluent_kafka import Consumer, TopicPartition

    client = client or confluent_name()
    consumer = Consumer({"group.id": group or "kdrig-reader", "enable.auto.commit": False, "auto.offset.reset": "earliest", **conf})
    consumer.assign([TopicPartition(t, p, o) for t, p, o in assignments])
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        got.append(msg)
        confluent_consumed(m, msg, client=client, group=None, **extra)
    consumer.close()
    return got


def confluent_consumed(m: Manifest, msg, *, client: Optional[str] = None, group: Optional[str] = None, **extra: Any) -> None:
    ts_type, ts = msg.timestamp()
    m.consumed(
        client or confluent_name(),
        group=group,
        topic=msg.topic(),
        partition=msg.partition(),
        offset=msg.offset(),
        timestamp=ts if ts_type else None,
        key=msg.key(),
        value=msg.value(),
        headers=msg.headers() or [],
        **extra,
    )


# --- kafka-python ----------------------------------------------------------------------------


def kafka_python_produce(
    m: Manifest,
    producer,
    topic: str,
    records: list[dict],
    *,
    codec: str = "none",
    acks: Any = 1,
    client: Optional[str] = None,
    interval: float = 0.0,
    **extra: Any,
) -> list:
    """Send *records* (*interval* seconds apart), flush, and write one manifest line each."""
    client = client or kafka_python_name()
    # kafka-python only sends (str, bytes) headers: a null header value cannot be expressed.
    records = [{**rec, "headers": [(k, v) for k, v in rec.get("headers") or [] if v is not None]} for rec in records]
    futures = []
    for rec in records:
        if futures and interval:
            time.sleep(interval)
        futures.append(
            producer.send(
                topic,
                value=rec["value"],
                key=rec["key"],
                headers=list(rec.get("headers") or []),
                partition=rec.get("partition"),
                timestamp_ms=rec.get("timestamp"),
            )
        )
    producer.flush(30)
    out = []
    for rec, fut in zip(records, futures, strict=True):
        error, meta = None, None
        try:
            meta = fut.get(30)
        except Exception as exc:
            from rig.scenarios.common import err_text

            error = err_text(exc)
        offset = meta.offset if meta is not None and meta.offset >= 0 else None
        if acks == 0:  # no reply is awaited, so kafka-python's "offset" is made up
            offset = None
        ts = rec.get("timestamp")
        if ts is None and meta is not None and meta.timestamp not in (None, -1):
            ts = meta.timestamp
        line = dict(
            topic=topic,
            partition=meta.partition if meta else rec.get("partition"),
            offset=offset,
            timestamp=ts,
            key=rec["key"],
            value=rec["value"],
            headers=rec.get("headers"),
            codec=codec,
            acks=acks,
            **extra,
        )
        if error:
            line["error"] = error
        m.produced(client, **line)
        out.append(meta)
    return out


def kafka_python_consumed(m: Manifest, rec, *, group: Optional[str], client: Optional[str] = None, **extra: Any) -> None:
    m.consumed(
        client or kafka_python_name(),
        group=group,
        topic=rec.topic,
        partition=rec.partition,
        offset=rec.offset,
        timestamp=rec.timestamp if rec.timestamp not in (None, -1) else None,
        key=rec.key,
        value=rec.value,
        headers=list(rec.headers or []),
        **extra,
    )


def kafka_python_drain(m: Manifest, consumer, expected: int, *, group: Optional[str], timeout: float = 30.0, **extra: Any) -> list:
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        for _tp, recs in sorted(consumer.poll(500).items()):
            for rec in recs:
                got.append(rec)
                kafka_python_consumed(m, rec, group=group, **extra)
    return got


# --- aiokafka -------------------------------------------------------------------------------


async def aiokafka_produce(m: Manifest, producer, topic: str, records: list[dict], *, codec: str, acks: Any) -> None:
    """Send *records* with a started aiokafka producer, flush, and write one manifest line each."""
    futures = [
        await producer.send(
            topic, rec["value"], key=rec["key"], partition=rec["partition"], timestamp_ms=rec["timestamp"], headers=list(rec["headers"])
        )
        for rec in records
    ]
    await producer.flush()
    for rec, future in zip(records, futures, strict=True):
        meta = await future
        m.produced(
            aiokafka_name(),
            topic=topic,
            partition=meta.partition,
            offset=meta.offset,
            timestamp=rec["timestamp"],
            key=rec["key"],
            value=rec["value"],
            headers=rec["headers"],
            codec=codec,
            acks=acks,
        )


def aiokafka_consumed(m: Manifest, rec, *, group: Optional[str], **extra: Any) -> None:
    m.consumed(
        aiokafka_name(),
        group=group,
        topic=rec.topic,
        partition=rec.partition,
        offset=rec.offset,
        timestamp=rec.timestamp if rec.timestamp not in (None, -1) else None,
        key=rec.key,
        value=rec.value,
        headers=list(rec.headers or []),
        **extra,
    )


# --- topic set-up, with the scenario's own client -------------------------------------------


def confluent_create_topics(m: Manifest, bootstrap: str, topics: dict) -> None:
    """Create {name: partitions} with librdkafka's admin client; record the op."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from rig.scenarios.common import attempt

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "kdrig-setup"})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], operation_timeout=10)
    attempt(
        m,
        confluent_name(),
        "create_topics",
        lambda: [f.result(30) for f in futures.values()],
        topics=list(topics),
        partitions=list(topics.values()),
    )


def kafka_python_create_topics(m: Manifest, bootstrap: str, topics: dict) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    from rig.scenarios.common import attempt

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kdrig-setup")
    attempt(
        m,
        kafka_python_name(),
        "create_topics",
        lambda: admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]),
        topics=list(topics),
        partitions=list(topics.values()),
    )
    admin.close()
