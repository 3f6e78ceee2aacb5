"""Legacy message formats (magic 0 and 1) from kafka-python pinned to old broker versions.

tansu stores only record batches v2. What it does with older formats, seen here:
an uncompressed message set makes it close the connection without a reply; a
compressed wrapper message is answered with error 59 (UNKNOWN_PRODUCER_ID). The
request bytes are genuine either way. Old Fetch versions (v0-v3) get magic-2
record batches back: tansu does not down-convert.
"""

from __future__ import annotations

from rig.clients import FIXED_TS, kafka_python_name
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import err_text
from rig.scenarios.kit import kafka_python_consumed, kafka_python_create_topics, text_value


def _legacy_produce(ctx: Ctx, topic: str, api_version: tuple, codec: str, magic: int, count: int = 2) -> None:
    """Two records (one keyed, one not) in one message set, one producer per format.

    *count* 1 sends one short record instead (tansu then hangs up instead of answering).
    """
    from kafka import KafkaProducer

    m = ctx.manifest
    version = ".".join(map(str, api_version))
    producer = KafkaProducer(
        bootstrap_servers=ctx.bootstrap,
        client_id=f"kdrig-legacy-{version}-{codec}",
        api_version=api_version,
        compression_type=None if codec == "none" else codec,
        acks=1,
        retries=0,
        linger_ms=100,
        request_timeout_ms=5000,
        max_block_ms=5000,
    )
    records = [
        {"key": f"m{magic}-{codec}-key".encode(), "value": text_value(f"magic{magic} {codec}", 0, 3)},
        {"key": None, "value": text_value(f"magic{magic} {codec}", 1, 3)},
    ]
    if count == 1:
        # A short lone message: tansu reads it as a v2 batch, runs out of bytes, hangs up.
        records = [{"key": b"k", "value": f"short m{magic}".encode()}]
    futures = []
    for i, rec in enumerate(records):
        ts = FIXED_TS + i if magic == 1 else None  # magic 0 has no timestamp
        futures.append(producer.send(topic, value=rec["value"], key=rec["key"], partition=0, timestamp_ms=ts))
    producer.flush(10)
    for i, (rec, fut) in enumerate(zip(records, futures, strict=True)):
        line = dict(
            topic=topic,
            partition=0,
            offset=None,
            timestamp=FIXED_TS + i if magic == 1 else None,
            key=rec["key"],
            value=rec["value"],
            codec=codec,
            acks=1,
            magic=magic,
            api_version=version,
        )
        try:
            meta = fut.get(10)
            line["offset"] = meta.offset
        except Exception as exc:
            line["error"] = err_text(exc)
        m.produced(kafka_python_name(), **line)
    producer.close(5)


def _modern_records(ctx: Ctx, topic: str) -> None:
    """Record batches v2 to read back with old Fetch versions."""
    from kafka import KafkaProducer

    from rig.scenarios.kit import kafka_python_produce

    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-modern", acks=1, linger_ms=50)
    kafka_python_produce(
        ctx.manifest,
        producer,
        topic,
        [
            {
                "key": b"modern-0",
                "value": b"a v2 batch read with an old Fetch",
                "partition": 0,
                "timestamp": FIXED_TS + 50,
                "headers": [("h", b"v")],
            },
            {"key": None, "value": b"a second record in that batch", "partition": 0, "timestamp": FIXED_TS + 51, "headers": []},
        ],
        acks=1,
    )
    producer.close(5)


def _legacy_fetch(ctx: Ctx, topic: str, api_version: tuple, expected: int) -> None:
    from kafka import KafkaConsumer, TopicPartition

    version = ".".join(map(str, api_version))
    consumer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap,
        api_version=api_version,
        client_id=f"kdrig-legacy-reader-{version}",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        request_timeout_ms=5000,
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got = 0
    for _ in range(10):
        for _tp, recs in consumer.poll(500).items():
            for rec in recs:
                got += 1
                kafka_python_consumed(ctx.manifest, rec, group=None, api_version=version)
        if got >= expected:
            break
    consumer.close(autocommit=False)


@scenario(
    "legacy-magic0-kafka-python",
    "Message sets v0 (magic 0): Produce v0 (api_version 0.8.2) and v1 (0.9), uncompressed and "
    "gzip/snappy wrappers; then Fetch v0/v1 of v2 batches (kafka-python)",
    expect_apis={0, 1, 3},
)
def legacy_magic0(ctx: Ctx) -> None:
    topic = "legacy0"
    kafka_python_create_topics(ctx.manifest, ctx.bootstrap, {topic: 1})
    for api_version, codecs in (((0, 8, 2), ("none", "gzip", "snappy")), ((0, 9), ("none", "gzip"))):
        for codec in codecs:
            _legacy_produce(ctx, topic, api_version, codec, magic=0)
    _legacy_produce(ctx, topic, (0, 9), "none", magic=0, count=1)
    _modern_records(ctx, topic)
    for api_version in ((0, 8, 2), (0, 9)):
        _legacy_fetch(ctx, topic, api_version, expected=2)


@scenario(
    "legacy-magic1-kafka-python",
    "Message sets v1 (magic 1, timestamps): Produce v2 (api_version 0.10.0/0.10.1), uncompressed "
    "and gzip/snappy/lz4 wrappers; then Fetch v2/v3 of v2 batches (kafka-python)",
    expect_apis={0, 1, 3},
)
def legacy_magic1(ctx: Ctx) -> None:
    topic = "legacy1"
    kafka_python_create_topics(ctx.manifest, ctx.bootstrap, {topic: 1})
    for api_version, codecs in (((0, 10, 0), ("none", "gzip", "snappy", "lz4")), ((0, 10, 1), ("none", "lz4"))):
        for codec in codecs:
            _legacy_produce(ctx, topic, api_version, codec, magic=1)
    # A lone uncompressed message: tansu closes the connection without a reply.
    _legacy_produce(ctx, topic, (0, 10, 0), "none", magic=1, count=1)
    _modern_records(ctx, topic)
    for api_version in ((0, 10, 0), (0, 10, 1)):
        _legacy_fetch(ctx, topic, api_version, expected=2)
