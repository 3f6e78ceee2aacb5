"""A broker's faults as real clients meet them (issue 28): tansu refusing InitProducerId, answering JoinGroup v2
MEMBER_ID_REQUIRED, hanging up on DeleteRecords, cutting responses short; noida-db answering every Fetch at once.

Each capture is real clients against a real broker; the manifest's `expect` lines name the findings `kdissect doctor`
must yield, `proposed` where the doctor has no such finding yet (../shared/rig-notes.md lists the faults).
"""

from __future__ import annotations

import time

from rig.clients import kafka_python_name
from rig.kafkajs import kafkajs_name, plan_records, run_kafkajs
from rig.produce_tally import producer_ids
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt
from rig.scenarios.doctor import expect, expect_not, records
from rig.scenarios.kit import confluent_produce, kafka_python_create_topics, kafka_python_produce


@scenario(
    "doctor-init-producer-refused",
    "Two idempotent producers whose InitProducerId v1 tansu answers UNKNOWN_SERVER_ERROR: kafka-python (api_version "
    "2.0) stops, failing every record without a Produce request; KafkaJS 2.2.4 goes on and writes its records with "
    "producer id -1, no longer idempotent",
    expect_apis={0, 22},
    wire_counts=producer_ids,
)
def init_producer_refused(ctx: Ctx) -> None:
    m = ctx.manifest
    kafka_python_create_topics(m, ctx.bootstrap, {"refused-kafka-python": 1, "refused-kafkajs": 1})
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=ctx.bootstrap, client_id="kdrig-refused-kafka-python", api_version=(2, 0), enable_idempotence=True, acks="all"
    )
    kafka_python_produce(m, producer, "refused-kafka-python", records("refused-kp", 3), acks="all", idempotent=True, api_version="2.0")
    attempt(m, kafka_python_name(), "close", lambda: producer.close(5))
    kafkajs = dict(act="produce", client_id="kdrig-refused-kafkajs", topic="refused-kafkajs", acks="all", idempotent=True)
    run_kafkajs(m, ctx.bootstrap, [dict(kafkajs, records=plan_records(records("refused-kjs", 3)), interval_ms=100)])
    for client_id in ("kdrig-refused-kafka-python", "kdrig-refused-kafkajs"):
        expect(m, "producer.init-producer-id-refused", client_id=client_id, api="InitProducerId")
    expect(m, "producer.not-idempotent", client_id="kdrig-refused-kafkajs", topic="refused-kafkajs", api="Produce")


@scenario(
    "doctor-group-never-forms",
    "Two KafkaJS 1.12 members (JoinGroup v2, before KIP-394) join a group for 20 s: tansu answers every JoinGroup "
    "MEMBER_ID_REQUIRED, KafkaJS takes it for a fatal error and crashes, and the application starts the member "
    "again a second later; no generation ever forms",
    expect_apis={10, 11},
)
def group_never_forms(ctx: Ctx) -> None:
    m, topic, group = ctx.manifest, "never", "kdrig-never"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 2})
    act = dict(act="consume", client_id="kdrig-never", group=group, topic=topic, members=["a", "b"], seconds=20, restart_on_crash_ms=1000)
    m.op(
        kafkajs_name("kafkajs-1.12"),
        "restart a crashed member",
        group=group,
        after_ms=1000,
        why="KafkaJS 1.12 does not restart on this error",
    )
    run_kafkajs(m, ctx.bootstrap, [act], library="kafkajs-1.12")
    expect(m, "group.never-forms", group=group, api="JoinGroup")


@scenario(
    "doctor-broker-closes",
    "kafka-python's and librdkafka's admin clients delete records: tansu panics on DeleteRecords v2 and closes the "
    "connection with a FIN, the request unanswered; librdkafka's GetTelemetrySubscriptions, sent right behind it, "
    "gets a RST",
    expect_apis={21},
)
def broker_closes(ctx: Ctx) -> None:
    from confluent_kafka import TopicPartition as ConfluentPartition
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient, TopicPartition

    from rig.clients import confluent_name

    m, topic = ctx.manifest, "trimmed"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 1})
    confluent_produce(m, {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-trimmed-producer"}, topic, records("trimmed", 6), acks=1)
    admin = KafkaAdminClient(bootstrap_servers=ctx.bootstrap, client_id="kdrig-trim-kafka-python", request_timeout_ms=3000)
    attempt(m, kafka_python_name(), "delete_records", lambda: admin.delete_records({TopicPartition(topic, 0): 2}), topic=topic, before=2)
    admin.close()
    confluent = AdminClient({"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-trim-confluent"})
    futures = confluent.delete_records([ConfluentPartition(topic, 0, 3)], request_timeout=3, operation_timeout=3)
    attempt(m, confluent_name(), "delete_records", lambda: [f.result(10) for f in futures.values()], topic=topic, before=3)
    expect(m, "protocol.broker-closed", client_id="kdrig-trim-kafka-python", api="DeleteRecords")
    expect(m, "protocol.broker-closed", client_id="kdrig-trim-confluent")


@scenario(
    "doctor-truncated-responses",
    "kafka-python pinned to old versions meets tansu's short responses: a consumer (api_version 0.10.0) whose "
    "ListOffsets v0 answers lack their offsets reconnects and asks again, over and over, for 1.5 s; an admin client "
    "(api_version 0.11) asking OffsetFetch v3 for all of a group's offsets gets a 10-byte body",
    expect_apis={2, 9},
)
def truncated_responses(ctx: Ctx) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

    m, client, topic, group = ctx.manifest, kafka_python_name(), "shortened", "kdrig-shortened"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 1})
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-shortened-producer", acks=1)
    kafka_python_produce(m, producer, topic, records("shortened", 3), acks=1)
    producer.close(5)
    committer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap, client_id="kdrig-shortened-committer", group_id=group, enable_auto_commit=False
    )
    attempt(
        m,
        client,
        "commit",
        lambda: committer.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)}),
        group=group,
        offsets=[[topic, 0, 1]],
    )
    committer.close()

    old = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap, client_id="kdrig-old-consumer", api_version=(0, 10, 0), auto_offset_reset="earliest"
    )
    old.assign([TopicPartition(topic, 0)])
    failures: dict[str, int] = {}
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        try:
            old.poll(200)
        except Exception as exc:  # each failed poll is counted: what the application saw
            failures[type(exc).__name__] = failures.get(type(exc).__name__, 0) + 1
    m.op(client, "poll for 1.5 s", api_version="0.10.0", topic=topic, records=0, poll_errors=failures)
    attempt(m, client, "close", old.close)

    admin = KafkaAdminClient(bootstrap_servers=ctx.bootstrap, client_id="kdrig-old-admin", api_version=(0, 11), request_timeout_ms=3000)
    attempt(m, client, "list_group_offsets", lambda: admin.list_group_offsets({group: None}), group=group, api_version="0.11")
    admin.close()
    for client_id in ("kdrig-old-consumer", "kdrig-old-admin"):
        expect(m, "protocol.malformed", client_id=client_id)


@scenario(
    "doctor-fetch-spin-noida",
    "noida-db answers every Fetch at once, whatever MaxWaitMs says: a kafka-python consumer and a KafkaJS group "
    "member, both asking MaxWaitMs 500 on an idle topic, fetch in a tight loop (kafka-python for 0.8 s, KafkaJS for "
    "half a second, its join included); the broker's fault, not the clients' settings",
    expect_apis={1},
    broker="noida-db",
)
def fetch_spin_noida(ctx: Ctx) -> None:
    from kafka import KafkaConsumer, TopicPartition

    m, client, topic = ctx.manifest, kafka_python_name(), "quiet"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 2})
    consumer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap, client_id="kdrig-quiet-kafka-python", fetch_max_wait_ms=500, enable_auto_commit=False
    )
    consumer.assign([TopicPartition(topic, 0)])
    m.op(client, "poll an idle partition", topic=topic, partition=0, seconds=0.8, fetch_max_wait_ms=500)
    deadline = time.monotonic() + 0.8
    while time.monotonic() < deadline:
        consumer.poll(100)
    attempt(m, client, "close", consumer.close)
    act = dict(act="consume", client_id="kdrig-quiet", group="kdrig-quiet", topic=topic, members=["kafkajs"], seconds=0.5, max_wait_ms=500)
    run_kafkajs(m, ctx.bootstrap, [act])
    for client_id in ("kdrig-quiet-kafka-python", "kdrig-quiet-kafkajs"):
        expect(m, "broker.fetch-wait-ignored", client_id=client_id, api="Fetch")
        why = "the consumer asks MaxWaitMs 500: its settings are right, the broker answers at once"
        expect_not(m, "consumer.empty-fetch-spin", why, client_id=client_id)
