"""How clients ordinarily behave, where the doctor must tell a problem from a habit (issue 28): a rolling deploy's
rebalances, resends through a slow link, a producer too slow to batch and one fast enough to batch but not batching.

Real kafka-python clients against tansu; `expect` lines name what the doctor must find, `expect-not` lines what it
must not conclude.
"""

from __future__ import annotations

import time

from rig.clients import confluent_name, kafka_python_name
from rig.manifest import Manifest
from rig.produce_tally import produce_resends
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt
from rig.scenarios.doctor import expect, expect_not, idempotent_one_at_a_time, records
from rig.scenarios.kit import confluent_consumed, confluent_create_topics, kafka_python_create_topics, kafka_python_produce


class Member:
    """One librdkafka group member, polled by the scenario's thread; its rebalance callbacks say when it has settled."""

    def __init__(self, bootstrap: str, group: str, name: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.name, self.assigned_at, self.partitions = name, 0.0, []
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": f"{group}-{name}",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "max.poll.interval.ms": 6000,
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.subscribe([topic], on_assign=self.on_assign)

    def on_assign(self, _consumer, partitions) -> None:
        self.assigned_at, self.partitions = time.monotonic(), sorted(f"{p.topic}-{p.partition}" for p in partitions)


def settle(m: Manifest, members: dict, group: str, step: str, partitions: int, timeout: float = 20.0) -> None:
    """Poll every member until each was assigned anew since *step* began and together they hold every partition once."""
    began, deadline = time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        for member in members.values():
            msg = member.consumer.poll(0.05)
            if msg is not None and not msg.error():
                confluent_consumed(m, msg, group=group, member=member.name)
        held = [p for member in members.values() for p in member.partitions]
        if all(member.assigned_at > began for member in members.values()) and sorted(set(held)) == sorted(held) and len(held) == partitions:
            break
    m.op(confluent_name(), "settled", group=group, step=step, assignment={name: member.partitions for name, member in members.items()})


@scenario(
    "doctor-members-come-and-go",
    "A two-instance confluent-kafka service starts (a, then b) and is deployed anew: a stops and a2 starts, then b "
    "stops and b2 starts, each change waited out with a second of work between: six generations in about 25 s, "
    "each rebalance over in one JoinGroup round",
    expect_apis={11, 13, 14},
)
def members_come_and_go(ctx: Ctx) -> None:
    m, client = ctx.manifest, confluent_name()
    topic, group, partitions = "deployed", "kdrig-deploy", 4
    confluent_create_topics(m, ctx.bootstrap, {topic: partitions})
    members: dict = {}
    for name in ("a", "b"):
        members[name] = Member(ctx.bootstrap, group, name, topic)
        settle(m, members, group, f"{name} starts", partitions)
    for old, new in (("a", "a2"), ("b", "b2")):
        time.sleep(1)
        attempt(m, client, "close", members.pop(old).consumer.close, group=group, member=old)
        settle(m, members, group, f"{old} stops", partitions)
        time.sleep(1)
        members[new] = Member(ctx.bootstrap, group, new, topic)
        settle(m, members, group, f"{new} starts", partitions)
    for name, member in members.items():
        attempt(m, client, "close", member.consumer.close, group=group, member=name)
    expect(m, "group.member-id-required", group=group, api="JoinGroup")
    expect_not(m, "group.rebalance-storm", "members joined and left one at a time, each rebalance over before the next", group=group)


def hold_every_fifth_produce(api_key: int, n: int) -> float:
    """Every 5th Produce response held past the producer's 1 s request timeout."""
    return 1.5 if api_key == 0 and n % 5 == 0 else 0.0


@scenario(
    "doctor-duplicate-sequence",
    "An idempotent kafka-python producer (request_timeout_ms 1000) sends 30 records one at a time through a relay "
    "that holds every 5th Produce response 1.5 s: the batch is sent again with the same producer id, epoch and base "
    "sequence, and tansu, which has the first copy, answers DUPLICATE_SEQUENCE_NUMBER; the counted line says how often",
    expect_apis={0, 22},
    relay=hold_every_fifth_produce,
    wire_counts=produce_resends,
)
def duplicate_sequence(ctx: Ctx) -> None:
    idempotent_one_at_a_time(ctx, "resent", "kdrig-resending-producer", 30)
    expect(ctx.manifest, "producer.duplicate-send", client_id="kdrig-resending-producer", topic="resent", api="Produce")
    expect(ctx.manifest, "producer.sequence-refused", client_id="kdrig-resending-producer", topic="resent", api="Produce")
    expect(ctx.manifest, "protocol.client-gave-up", client_id="kdrig-resending-producer", api="Produce")


@scenario(
    "doctor-slow-sync-producer",
    "A synchronous kafka-python producer writes 110 records at about 5 a second, waiting for each to be "
    "acknowledged: one record per request, because there is never a second record to put with it",
    expect_apis={0},
)
def slow_sync_producer(ctx: Ctx) -> None:
    m, topic = ctx.manifest, "trickle"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 1})
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-trickle-producer", acks=1, linger_ms=0)
    m.op(kafka_python_name(), "send and wait, 5 records a second", topic=topic, records=110)
    for i in range(110):
        started = time.monotonic()
        kafka_python_produce(m, producer, topic, records("trickle", 1, 1, i), acks=1)
        time.sleep(max(0.0, 0.2 - (time.monotonic() - started)))
    producer.close(5)
    expect_not(
        m,
        "producer.tiny-batches",
        "records arrive 200 ms apart and each is awaited: batching cannot help",
        client_id="kdrig-trickle-producer",
    )


@scenario(
    "doctor-tiny-batches-fast",
    "A kafka-python producer with linger_ms 0 sends 300 records at about 100 a second without waiting: each record "
    "leaves in its own batch and request, where a few milliseconds of linger would put several together",
    expect_apis={0},
)
def tiny_batches_fast(ctx: Ctx) -> None:
    m, topic = ctx.manifest, "hurried"
    kafka_python_create_topics(m, ctx.bootstrap, {topic: 1})
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-hurried-producer", acks=1, linger_ms=0)
    kafka_python_produce(m, producer, topic, records("hurried", 300), acks=1, interval=0.01)
    producer.close(5)
    expect(m, "producer.tiny-batches", client_id="kdrig-hurried-producer", api="Produce")
