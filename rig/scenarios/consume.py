"""Consumer-group traffic: two members, a rebalance on join and on leave, offset commits."""

from __future__ import annotations

import time

from rig.clients import FIXED_TS, confluent_name, kafka_python_name
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt
from rig.scenarios.kit import (
    confluent_consumed,
    confluent_create_topics,
    confluent_produce,
    kafka_python_consumed,
    kafka_python_create_topics,
    kafka_python_produce,
    text_value,
)

# Short timeouts: tansu holds a JoinGroup until the rebalance timeout when a member is
# slow to rejoin, and the client defaults (45 s session, 300 s poll interval) make that long.
GROUP_CONF = {
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 500,
    "max.poll.interval.ms": 6000,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "partition.assignment.strategy": "range",
}


def _records(round_no: int, n: int, partitions: int) -> list[dict]:
    return [
        {
            "key": f"r{round_no}-{j}".encode(),
            "value": text_value(f"group round {round_no}", j, 1),
            "partition": j % partitions,
            "timestamp": FIXED_TS + 100 * round_no + j,
            "headers": [],
        }
        for j in range(n)
    ]


@scenario(
    "consumer-group-confluent",
    "A consumer group of two librdkafka members: A joins, B joins (rebalance), both commit, B leaves (rebalance), A commits and leaves",
    expect_apis={0, 1, 8, 9, 10, 11, 12, 13, 14},
)
def consumer_group_confluent(ctx: Ctx) -> None:
    from confluent_kafka import Consumer

    m, client = ctx.manifest, confluent_name()
    topic, group, parts = "grp", "kdrig-group", 4
    confluent_create_topics(m, ctx.bootstrap, {topic: parts})
    producer_conf = {"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-group-producer", "linger.ms": 20}
    confluent_produce(m, producer_conf, topic, _records(0, 8, parts), acks="all")

    members: dict = {}
    assigned: dict = {}
    got: dict = {"a": 0, "b": 0}

    def make(name: str):
        def on_assign(consumer, partitions):
            assigned[name] = sorted(p.partition for p in partitions)
            m.op(client, "assigned", group=group, member=name, partitions=assigned[name])

        def on_revoke(consumer, partitions):
            m.op(client, "revoked", group=group, member=name, partitions=sorted(p.partition for p in partitions))
            assigned[name] = []

        consumer = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": group, "client.id": f"kdrig-member-{name}", **GROUP_CONF})
        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        m.op(client, "subscribe", group=group, member=name, topics=[topic])
        members[name] = consumer
        return consumer

    def pump(until, timeout: float = 30.0) -> bool:
        """Poll every member in turn until *until()* holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, consumer in list(members.items()):
                msg = consumer.poll(0.1)
                if msg is not None and not msg.error():
                    got[name] += 1
                    confluent_consumed(m, msg, group=group, member=name)
            if until():
                return True
        return False

    def commit(name: str) -> None:
        consumer = members[name]
        attempt(
            m,
            client,
            "commit",
            lambda: consumer.commit(asynchronous=False),
            show=lambda tps: [[tp.topic, tp.partition, tp.offset] for tp in tps or []],
            group=group,
            member=name,
        )

    make("a")
    pump(lambda: got["a"] >= 8)
    commit("a")

    make("b")
    pump(lambda: assigned.get("b") and assigned.get("a") and len(assigned["a"]) + len(assigned["b"]) == parts)
    confluent_produce(m, producer_conf, topic, _records(1, 8, parts), acks="all")
    pump(lambda: got["a"] + got["b"] >= 16)
    commit("a")
    commit("b")

    attempt(m, client, "close", members.pop("b").close, group=group, member="b")
    pump(lambda: len(assigned.get("a", [])) == parts)
    confluent_produce(m, producer_conf, topic, _records(2, 4, parts), acks="all")
    pump(lambda: got["a"] + got["b"] >= 20)
    commit("a")
    attempt(m, client, "close", members.pop("a").close, group=group, member="a")


@scenario(
    "consumer-group-kafka-python",
    "A consumer group of two kafka-python members (join, rebalance, commit, leave)",
    expect_apis={0, 1, 8, 9, 10, 11, 12, 13, 14},
)
def consumer_group_kafka_python(ctx: Ctx) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    m, client = ctx.manifest, kafka_python_name()
    topic, group, parts = "kgrp", "kdrig-kgroup", 2
    kafka_python_create_topics(m, ctx.bootstrap, {topic: parts})
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-kgroup-producer", acks=1, linger_ms=20)
    kafka_python_produce(m, producer, topic, _records(0, 4, parts), acks=1)

    members: dict = {}
    assigned: dict = {}
    got = {"a": 0, "b": 0}

    class Listener(ConsumerRebalanceListener):
        def __init__(self, name: str) -> None:
            self.name = name

        def on_partitions_assigned(self, partitions):
            assigned[self.name] = sorted(p.partition for p in partitions)
            m.op(client, "assigned", group=group, member=self.name, partitions=assigned[self.name])

        def on_partitions_revoked(self, partitions):
            m.op(client, "revoked", group=group, member=self.name, partitions=sorted(p.partition for p in partitions))
            assigned[self.name] = []

    def make(name: str):
        consumer = KafkaConsumer(
            bootstrap_servers=ctx.bootstrap,
            group_id=group,
            client_id=f"kdrig-kmember-{name}",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            max_poll_interval_ms=6000,
        )
        consumer.subscribe([topic], listener=Listener(name))
        m.op(client, "subscribe", group=group, member=name, topics=[topic])
        members[name] = consumer

    def pump(until, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, consumer in list(members.items()):
                for _tp, recs in sorted(consumer.poll(100).items()):
                    for rec in recs:
                        got[name] += 1
                        kafka_python_consumed(m, rec, group=group, member=name)
            if until():
                return True
        return False

    def commit(name: str) -> None:
        consumer = members[name]
        positions = sorted([tp.topic, tp.partition, consumer.position(tp)] for tp in consumer.assignment())
        attempt(m, client, "commit", consumer.commit, group=group, member=name, offsets=positions)

    make("a")
    pump(lambda: got["a"] >= 4)
    commit("a")
    make("b")
    pump(lambda: assigned.get("a") and assigned.get("b"))
    kafka_python_produce(m, producer, topic, _records(1, 4, parts), acks=1)
    pump(lambda: got["a"] + got["b"] >= 8)
    commit("a")
    commit("b")
    attempt(m, client, "close", members.pop("b").close, group=group, member="b")
    pump(lambda: len(assigned.get("a", [])) == parts)
    commit("a")
    attempt(m, client, "close", members.pop("a").close, group=group, member="a")
    producer.close(10)
