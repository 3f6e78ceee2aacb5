"""Produce traffic: codecs, record shapes, acks, idempotence, transactions, large values."""

from __future__ import annotations

from rig.clients import FIXED_TS, aiokafka_name, confluent_name
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt, err_text
from rig.scenarios.kit import (
    confluent_consume,
    confluent_create_topics,
    confluent_produce,
    edge_records,
    kafka_python_create_topics,
    kafka_python_drain,
    kafka_python_produce,
    text_value,
)

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@scenario(
    "produce-codecs-confluent",
    "Every codec (none/gzip/snappy/lz4/zstd), one partition each, with keys, null keys, "
    "tombstones, headers, binary and empty keys/values; read back (librdkafka)",
    expect_apis={0, 1, 3, 18, 19},
)
def produce_codecs_confluent(ctx: Ctx) -> None:
    m = ctx.manifest
    confluent_create_topics(m, ctx.bootstrap, {"codecs": len(CODECS)})
    for i, codec in enumerate(CODECS):
        confluent_produce(
            m,
            {"bootstrap.servers": ctx.bootstrap, "client.id": f"kdrig-{codec}", "linger.ms": 200},
            "codecs",
            edge_records(codec, partition=i, base_ts=FIXED_TS + 1000 * i),
            codec=codec,
            acks="all",
        )
    confluent_consume(
        m,
        {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-reader"},
        [("codecs", i, 0) for i in range(len(CODECS))],
        expected=6 * len(CODECS),
    )


@scenario(
    "produce-codecs-kafka-python",
    "Every codec from kafka-python's own batch writer (gzip/snappy/lz4/zstd in pure Python), "
    "with the same record shapes; read back with kafka-python",
    expect_apis={0, 1, 3, 18, 19},
)
def produce_codecs_kafka_python(ctx: Ctx) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    m = ctx.manifest
    kafka_python_create_topics(m, ctx.bootstrap, {"codecs": len(CODECS)})
    for i, codec in enumerate(CODECS):
        producer = KafkaProducer(
            bootstrap_servers=ctx.bootstrap,
            client_id=f"kdrig-{codec}",
            compression_type=None if codec == "none" else codec,
            linger_ms=200,
            acks="all",
        )
        kafka_python_produce(m, producer, "codecs", edge_records(codec, partition=i, base_ts=FIXED_TS + 1000 * i), codec=codec, acks="all")
        producer.close(10)
    consumer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap, client_id="kdrig-reader", enable_auto_commit=False, auto_offset_reset="earliest"
    )
    consumer.assign([TopicPartition("codecs", i) for i in range(len(CODECS))])
    kafka_python_drain(m, consumer, 6 * len(CODECS), group=None)
    consumer.close(autocommit=False)


@scenario(
    "produce-acks",
    "acks=0, 1 and all from librdkafka and kafka-python (tansu answers acks=0 too)",
    expect_apis={0, 3, 18, 19},
)
def produce_acks(ctx: Ctx) -> None:
    from kafka import KafkaProducer

    m = ctx.manifest
    confluent_create_topics(m, ctx.bootstrap, {"acks": 1})
    for n, acks in enumerate((0, 1, "all")):
        records = [
            {
                "key": f"acks-{acks}-{j}".encode(),
                "value": text_value(f"confluent acks={acks}", j, 1),
                "partition": 0,
                "timestamp": FIXED_TS + 10 * n + j,
                "headers": [],
            }
            for j in range(2)
        ]
        confluent_produce(
            m, {"bootstrap.servers": ctx.bootstrap, "client.id": f"kdrig-acks-{acks}", "linger.ms": 50}, "acks", records, acks=acks
        )
    for n, acks in enumerate((0, 1, "all")):
        producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id=f"kdrig-kp-acks-{acks}", acks=acks, linger_ms=50)
        records = [
            {
                "key": f"kp-acks-{acks}-{j}".encode(),
                "value": text_value(f"kafka-python acks={acks}", j, 1),
                "partition": 0,
                "timestamp": FIXED_TS + 100 + 10 * n + j,
                "headers": [],
            }
            for j in range(2)
        ]
        kafka_python_produce(m, producer, "acks", records, acks=acks)
        producer.close(10)


@scenario(
    "produce-idempotent",
    "Idempotent producers: librdkafka and kafka-python (InitProducerId, sequence numbers); "
    "aiokafka's attempt (InitProducerId v0 fails on tansu)",
    expect_apis={0, 3, 18, 22},
)
def produce_idempotent(ctx: Ctx) -> None:
    from kafka import KafkaProducer

    m = ctx.manifest
    confluent_create_topics(m, ctx.bootstrap, {"idem": 2})
    records = [
        {
            "key": f"idem-{j}".encode(),
            "value": text_value("confluent idempotent", j, 1),
            "partition": j % 2,
            "timestamp": FIXED_TS + j,
            "headers": [],
        }
        for j in range(6)
    ]
    confluent_produce(
        m,
        {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-idem", "enable.idempotence": True, "linger.ms": 100},
        "idem",
        records,
        acks="all",
        idempotent=True,
    )

    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-kp-idem", enable_idempotence=True, acks="all", linger_ms=100)
    records = [
        {
            "key": f"kp-idem-{j}".encode(),
            "value": text_value("kafka-python idempotent", j, 1),
            "partition": j % 2,
            "timestamp": FIXED_TS + 100 + j,
            "headers": [],
        }
        for j in range(4)
    ]
    kafka_python_produce(m, producer, "idem", records, acks="all", idempotent=True)
    producer.close(10)

    import asyncio

    from aiokafka import AIOKafkaProducer

    async def aio() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=ctx.bootstrap, client_id="kdrig-aio-idem", enable_idempotence=True, request_timeout_ms=5000
        )
        try:
            await asyncio.wait_for(producer.start(), 15)
        except Exception as exc:
            m.op(aiokafka_name(), "start_idempotent_producer", result=err_text(exc))
            try:
                await asyncio.wait_for(producer.stop(), 10)
            except Exception:
                pass
            return
        m.op(aiokafka_name(), "start_idempotent_producer")
        value = text_value("aiokafka idempotent", 0, 1)
        try:
            meta = await asyncio.wait_for(
                producer.send_and_wait("idem", value, key=b"aio-idem-0", partition=0, timestamp_ms=FIXED_TS + 200), 15
            )
            m.produced(
                aiokafka_name(),
                topic="idem",
                partition=meta.partition,
                offset=meta.offset,
                timestamp=FIXED_TS + 200,
                key=b"aio-idem-0",
                value=value,
                codec="none",
                acks="all",
                idempotent=True,
            )
        except Exception as exc:
            m.produced(
                aiokafka_name(),
                topic="idem",
                partition=0,
                offset=None,
                timestamp=FIXED_TS + 200,
                key=b"aio-idem-0",
                value=value,
                codec="none",
                acks="all",
                idempotent=True,
                error=err_text(exc),
            )
        await producer.stop()

    asyncio.run(aio())


@scenario(
    "produce-transactions",
    "Transactional producer: commit, abort, and a commit with consumer offsets "
    "(AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, control batches); "
    "read back read_committed and read_uncommitted (librdkafka)",
    expect_apis={0, 1, 10, 22, 24, 25, 26, 28},
)
def produce_transactions(ctx: Ctx) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    m, client = ctx.manifest, confluent_name()
    confluent_create_topics(m, ctx.bootstrap, {"txn": 1, "txn-source": 1})
    # Something to "consume" so the third transaction can carry consumer offsets.
    confluent_produce(
        m,
        {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-txn-source"},
        "txn-source",
        [{"key": b"src", "value": b"source record", "partition": 0, "timestamp": FIXED_TS, "headers": []}],
    )

    producer = Producer({"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-txn", "transactional.id": "kdrig-txn-1", "linger.ms": 50})
    if attempt(m, client, "init_transactions", lambda: producer.init_transactions(30) or True, transactional_id="kdrig-txn-1") is None:
        return
    for n, outcome in enumerate(("commit", "abort", "commit-with-offsets")):
        attempt(m, client, "begin_transaction", producer.begin_transaction, transaction=n)
        records = [
            {
                "key": f"txn{n}-{j}".encode(),
                "value": text_value(f"txn {n} {outcome}", j, 1),
                "partition": 0,
                "timestamp": FIXED_TS + 10 * n + j,
                "headers": [("txn", outcome.encode())],
            }
            for j in range(2)
        ]
        # Flush inside the transaction: the records are really sent (an abort would otherwise
        # purge them unsent) and the delivery reports carry their offsets.
        confluent_produce(m, {}, "txn", records, producer=producer, acks="all", transaction=n, outcome=outcome.split("-")[0])
        if outcome == "commit-with-offsets":
            consumer = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": "kdrig-txn-group", "client.id": "kdrig-txn-offsets"})
            attempt(
                m,
                client,
                "send_offsets_to_transaction",
                lambda consumer=consumer: producer.send_offsets_to_transaction(
                    [TopicPartition("txn-source", 0, 1)], consumer.consumer_group_metadata(), 30
                ),
                group="kdrig-txn-group",
                offsets=[["txn-source", 0, 1]],
            )
            consumer.close()
        if outcome == "abort":
            attempt(m, client, "abort_transaction", lambda: producer.abort_transaction(30), transaction=n)
        else:
            attempt(m, client, "commit_transaction", lambda: producer.commit_transaction(30), transaction=n)
    producer.flush(10)

    # Both readers wait for all six records: tansu's Fetch replies list no aborted
    # transactions, so even the read_committed reader is handed the aborted ones.
    for isolation in ("read_committed", "read_uncommitted"):
        confluent_consume(
            m,
            {"bootstrap.servers": ctx.bootstrap, "client.id": f"kdrig-{isolation}", "isolation.level": isolation},
            [("txn", 0, 0)],
            expected=6,
            timeout=10,
            isolation=isolation,
        )


def large_value(i: int, size: int) -> bytes:
    """A deterministic, greppable, mostly incompressible-looking text value of *size* bytes."""
    import random

    rng = random.Random(1000 + i)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    out, line = [], 0
    total = 0
    while total < size:
        chunk = f"large {i} line {line:05d} " + "".join(rng.choice(alphabet) for _ in range(40)) + "\n"
        out.append(chunk)
        total += len(chunk)
        line += 1
    return "".join(out).encode()[:size]


@scenario(
    "large-values-mtu1500",
    "Large values (180 KB, 120 KB, codec none) produced and fetched across a veth pair with "
    "MTU 1500, so a ~300 KB Produce or Fetch frame spans ~200 TCP segments (librdkafka)",
    netns=True,
    expect_apis={0, 1, 3, 18},
)
def large_values(ctx: Ctx) -> None:
    m = ctx.manifest
    confluent_create_topics(m, ctx.bootstrap, {"large": 1})
    records = [
        {"key": b"large-0", "value": large_value(0, 180_000), "partition": 0, "timestamp": FIXED_TS, "headers": [("size", b"180000")]},
        {"key": b"large-1", "value": large_value(1, 120_000), "partition": 0, "timestamp": FIXED_TS + 1, "headers": [("size", b"120000")]},
        {"key": b"small", "value": b"a small record after the large ones", "partition": 0, "timestamp": FIXED_TS + 2, "headers": []},
    ]
    # One request per record (linger 0, max one in flight) keeps each frame's size known.
    confluent_produce(
        m,
        {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-large", "linger.ms": 0, "max.in.flight.requests.per.connection": 1},
        "large",
        records,
        acks=1,
    )
    confluent_consume(m, {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-large-reader"}, [("large", 0, 0)], expected=3)


@scenario(
    "many-records-mtu1500",
    "200 small records in 12 uncompressed ~4 KB batches across a veth pair with MTU 1500; "
    "kafka-python fetches with a 4 KB partition limit (tansu ignores it and returns all "
    "~44 KB), librdkafka fetches too",
    netns=True,
    expect_apis={0, 1, 3, 18},
)
def many_records(ctx: Ctx) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    m = ctx.manifest
    kafka_python_create_topics(m, ctx.bootstrap, {"many": 1})
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-many", batch_size=4096, linger_ms=50, acks=1)
    records = [
        {"key": f"many-{j:03d}".encode(), "value": large_value(j, 200), "partition": 0, "timestamp": FIXED_TS + j, "headers": []}
        for j in range(200)
    ]
    kafka_python_produce(m, producer, "many", records, codec="none", acks=1)
    producer.close(10)

    consumer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap,
        client_id="kdrig-many-small-fetch",
        enable_auto_commit=False,
        max_partition_fetch_bytes=4096,
        fetch_max_wait_ms=100,
    )
    consumer.assign([TopicPartition("many", 0)])
    consumer.seek(TopicPartition("many", 0), 0)
    kafka_python_drain(m, consumer, 200, group=None, fetch="max_partition_fetch_bytes=4096")
    consumer.close(autocommit=False)
    confluent_consume(
        m, {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-many-reader"}, [("many", 0, 0)], expected=200, fetch="default"
    )
