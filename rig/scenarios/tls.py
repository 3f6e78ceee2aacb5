"""Kafka over TLS: Python clients through stunnel, each TLS version and AEAD, with key logs.

Each scenario gives three files beside its manifest: NAME.pcap (the TLS side, clients to stunnel), NAME.keylog
(the clients' key log) and NAME-plain.pcap, its plaintext twin: the same connections between stunnel and
tansu, captured at the same time, so the same requests and responses byte for byte (rig/run.py). The
workload creates a topic, produces small records and one of 20 KB (a frame over two TLS records), and
reads them back.
"""

from __future__ import annotations

import time
from functools import partial

from rig.clients import FIXED_TS, aiokafka_name, kafka_python_name
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt, err_text
from rig.scenarios.kit import BINARY_KEY, aiokafka_consumed, aiokafka_produce, kafka_python_drain, kafka_python_produce, text_value
from rig.tls import TlsSpec

EXPECT = {0, 1, 2, 3, 18, 19}
LARGE = 20_000
"""A value this large makes a Produce request and a Fetch response span two TLS records (2^14 bytes each at most)."""


def _records(tag: str) -> list[dict]:
    return [
        {"key": f"{tag}-0".encode(), "value": text_value(tag, 0), "partition": 0, "timestamp": FIXED_TS, "headers": [("tls", b"yes")]},
        {"key": None, "value": text_value(tag, 1), "partition": 1, "timestamp": FIXED_TS + 1, "headers": []},
        {"key": BINARY_KEY, "value": b"", "partition": 0, "timestamp": FIXED_TS + 2, "headers": []},
        {"key": f"{tag}-large".encode(), "value": (text_value(tag, 3, 1) * LARGE)[:LARGE], "partition": 1, "timestamp": FIXED_TS + 3}
        | {"headers": []},
    ]


def kafka_python_workload(ctx: Ctx, tag: str, own_tls: bool = True) -> None:
    """`own_tls`: kafka-python makes the TLS connections itself (else a relay in front of it does)."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    m, client, topic = ctx.manifest, kafka_python_name(), f"{tag}-topic"
    tls = {"security_protocol": "SSL", "ssl_context": ctx.ssl_context()} if own_tls else {}
    admin = KafkaAdminClient(bootstrap_servers=ctx.bootstrap, client_id="kdrig-tls-admin", **tls)
    attempt(m, client, "create_topics", lambda: admin.create_topics([NewTopic(topic, 2, 1)]), topics=[topic], partitions=[2])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-tls-producer", acks=1, linger_ms=20, **tls)
    kafka_python_produce(m, producer, topic, _records(tag), codec="none", acks=1)
    producer.close(10)
    consumer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap, client_id="kdrig-tls-reader", enable_auto_commit=False, auto_offset_reset="earliest", **tls
    )
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    kafka_python_drain(m, consumer, 4, group=None)
    consumer.close()


def aiokafka_workload(ctx: Ctx, tag: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    m, client, topic = ctx.manifest, aiokafka_name(), f"{tag}-topic"
    tls = {"security_protocol": "SSL", "ssl_context": ctx.ssl_context()}

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=ctx.bootstrap, client_id="kdrig-tls-admin", **tls)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, 2, 1)])
            m.op(client, "create_topics", topics=[topic], partitions=[2])
        except Exception as exc:
            m.op(client, "create_topics", topics=[topic], partitions=[2], result=err_text(exc))
        await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-tls-producer", acks=1, linger_ms=20, **tls)
        await producer.start()
        records = _records(tag)
        await aiokafka_produce(m, producer, topic, records, codec="none", acks=1)
        await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=ctx.bootstrap, client_id="kdrig-tls-reader", enable_auto_commit=False, auto_offset_reset="earliest", **tls
        )
        await consumer.start()
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got, deadline = 0, time.monotonic() + 30
        while got < len(records) and time.monotonic() < deadline:
            for _tp, batch in sorted((await consumer.getmany(timeout_ms=200)).items()):
                for rec in batch:
                    got += 1
                    aiokafka_consumed(m, rec, group=None)
        await consumer.stop()

    asyncio.run(run())


TLS13 = {"version_min": "TLSv1.3", "version_max": "TLSv1.3"}
TLS12 = {"version_min": "TLSv1.2", "version_max": "TLSv1.2"}
SCENARIOS = (
    (
        "tls13-aes128-kafka-python",
        "kafka-python over TLS 1.3, TLS_AES_128_GCM_SHA256, through stunnel; key log from SSLContext.keylog_filename",
        TlsSpec(**TLS13, ciphersuites="TLS_AES_128_GCM_SHA256"),
        partial(kafka_python_workload, tag="t13a128"),
    ),
    (
        "tls13-aes256-aiokafka",
        "aiokafka over TLS 1.3, TLS_AES_256_GCM_SHA384 (SHA-384 key schedule), through stunnel",
        TlsSpec(**TLS13, ciphersuites="TLS_AES_256_GCM_SHA384"),
        partial(aiokafka_workload, tag="t13a256"),
    ),
    (
        "tls13-chacha20-kafka-python",
        "kafka-python over TLS 1.3, TLS_CHACHA20_POLY1305_SHA256, through stunnel",
        TlsSpec(**TLS13, ciphersuites="TLS_CHACHA20_POLY1305_SHA256"),
        partial(kafka_python_workload, tag="t13chacha"),
    ),
    (
        "tls12-aes256gcm-kafka-python",
        "kafka-python over TLS 1.2, ECDHE-RSA-AES256-GCM-SHA384 (SHA-384 PRF, extended master secret), through stunnel",
        TlsSpec(**TLS12, ciphers="ECDHE-RSA-AES256-GCM-SHA384"),
        partial(kafka_python_workload, tag="t12a256"),
    ),
    (
        "tls12-aes128gcm-aiokafka",
        "aiokafka over TLS 1.2, ECDHE-RSA-AES128-GCM-SHA256 (extended master secret), through stunnel",
        TlsSpec(**TLS12, ciphers="ECDHE-RSA-AES128-GCM-SHA256"),
        partial(aiokafka_workload, tag="t12a128"),
    ),
    (
        "tls12-chacha20-aiokafka",
        "aiokafka over TLS 1.2, ECDHE-RSA-CHACHA20-POLY1305, through stunnel",
        TlsSpec(**TLS12, ciphers="ECDHE-RSA-CHACHA20-POLY1305"),
        partial(aiokafka_workload, tag="t12chacha"),
    ),
    (
        "tls13-secrets-kafka-python",
        "kafka-python over TLS 1.3 (AES-128-GCM), its key log embedded in the pcapng (editcap --inject-secrets): no option needed",
        TlsSpec(**TLS13, ciphersuites="TLS_AES_128_GCM_SHA256", inject_secrets=True),
        partial(kafka_python_workload, tag="t13dsb"),
    ),
    (
        "tls13-keyupdate-kafka-python",
        "kafka-python through openssl s_client (TLS 1.3, AES-128-GCM), which sends a KeyUpdate after every answered "
        "request, asking stunnel to update its keys too every other time",
        TlsSpec(**TLS13, ciphersuites="TLS_AES_128_GCM_SHA256", key_updates=True),
        partial(kafka_python_workload, tag="t13ku", own_tls=False),
    ),
)
"""(name, title, what stunnel offers, the workload) of each TLS scenario."""

for name, title, spec, workload in SCENARIOS:
    scenario(name, title, expect_apis=EXPECT, tls=spec)(workload)
