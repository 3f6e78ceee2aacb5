"""Admin traffic: topics, configs, cluster, groups and offsets, from two admin clients."""

from __future__ import annotations

from rig.clients import FIXED_TS, confluent_name, kafka_python_name
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt


@scenario(
    "admin-kafka-python",
    "Admin: create/delete topics, describe configs/cluster/groups, list offsets (kafka-python)",
    expect_apis={0, 2, 3, 8, 9, 15, 16, 19, 20, 32, 42, 44, 60},
)
def admin_kafka_python(ctx: Ctx) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewPartitions, NewTopic, OffsetSpec
    from kafka.structs import OffsetAndMetadata

    m, client = ctx.manifest, kafka_python_name()
    admin = KafkaAdminClient(bootstrap_servers=ctx.bootstrap, client_id="kdrig-admin")

    attempt(
        m,
        client,
        "create_topics",
        lambda: admin.create_topics(
            [
                NewTopic("admin-a", 3, 1),
                NewTopic("admin-b", 1, 1, topic_configs={"cleanup.policy": "compact", "retention.ms": "3600000"}),
            ]
        ),
        topics=["admin-a", "admin-b"],
        partitions=[3, 1],
    )
    # Creating it again must fail with TOPIC_ALREADY_EXISTS (36).
    attempt(
        m,
        client,
        "create_topics",
        lambda: admin.create_topics([NewTopic("admin-a", 3, 1)]),
        topics=["admin-a"],
        partitions=[3],
        expect="error 36",
    )
    attempt(m, client, "list_topics", admin.list_topics, show=sorted)
    attempt(
        m,
        client,
        "describe_topics",
        lambda: admin.describe_topics(["admin-a", "admin-b"]),
        show=lambda ts: {t.get("name", t.get("topic")): len(t["partitions"]) for t in ts},
        topics=["admin-a", "admin-b"],
    )
    attempt(
        m,
        client,
        "describe_configs",
        lambda: admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "admin-b"), ConfigResource(ConfigResourceType.BROKER, "111")], config_filter="all"
        ),
        show=lambda r: r,
        resources=[["topic", "admin-b"], ["broker", "111"]],
    )
    attempt(m, client, "describe_cluster", admin.describe_cluster, show=lambda r: r)

    # A few records so that offsets are not all zero.
    producer = KafkaProducer(bootstrap_servers=ctx.bootstrap, client_id="kdrig-admin-producer", acks=1, linger_ms=0)
    for i in range(3):
        key, value = f"k{i}".encode(), f"admin value {i}".encode()
        meta = producer.send("admin-a", value=value, key=key, partition=1, timestamp_ms=FIXED_TS + i).get(30)
        m.produced(
            client,
            topic="admin-a",
            partition=meta.partition,
            offset=meta.offset,
            timestamp=FIXED_TS + i,
            key=key,
            value=value,
            codec="none",
            acks=1,
        )
    producer.close(10)

    def offsets_table(result):
        return {f"{tp.topic}/{tp.partition}": {"offset": o.offset, "timestamp": o.timestamp} for tp, o in sorted(result.items())}

    tps = [TopicPartition("admin-a", p) for p in range(3)]
    for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST):
        attempt(
            m,
            client,
            "list_offsets",
            lambda spec=spec: admin.list_partition_offsets({tp: spec for tp in tps}),
            show=offsets_table,
            topic="admin-a",
            partitions=[0, 1, 2],
            spec=spec.name,
        )
    attempt(
        m,
        client,
        "list_offsets",
        lambda: admin.list_partition_offsets({TopicPartition("admin-a", 1): FIXED_TS + 1}),
        show=offsets_table,
        topic="admin-a",
        partitions=[1],
        spec=f"timestamp {FIXED_TS + 1}",
    )
    # Last of the ListOffsets: tansu closes the connection on it, unanswered.
    attempt(
        m,
        client,
        "list_offsets",
        lambda: admin.list_partition_offsets({tp: OffsetSpec.MAX_TIMESTAMP for tp in tps}),
        show=offsets_table,
        topic="admin-a",
        partitions=[0, 1, 2],
        spec="MAX_TIMESTAMP",
    )

    # A simple (member-less) group with committed offsets, so groups can be listed.
    consumer = KafkaConsumer(
        bootstrap_servers=ctx.bootstrap, group_id="admin-group", client_id="kdrig-admin-consumer", enable_auto_commit=False
    )
    consumer.assign([TopicPartition("admin-a", 1)])
    attempt(
        m,
        client,
        "commit",
        lambda: consumer.commit({TopicPartition("admin-a", 1): OffsetAndMetadata(2, "rig-metadata", -1)}),
        group="admin-group",
        offsets=[["admin-a", 1, 2, "rig-metadata"]],
    )
    consumer.close(autocommit=False)

    attempt(m, client, "list_groups", admin.list_groups, show=lambda r: r)
    # kafka-python fails to read tansu's reply (authorized operations), but the bytes are sent.
    attempt(m, client, "describe_groups", lambda: admin.describe_groups(["admin-group"]), show=lambda r: r, groups=["admin-group"])
    attempt(
        m,
        client,
        "list_group_offsets",
        lambda: admin.list_group_offsets({"admin-group": None}),
        show=lambda r: {g: {f"{tp.topic}/{tp.partition}": [o.offset, o.metadata] for tp, o in offs.items()} for g, offs in r.items()},
        groups=["admin-group"],
    )

    # tansu does not offer these in ApiVersions; kafka-python then does not send them.
    attempt(m, client, "create_partitions", lambda: admin.create_partitions({"admin-a": NewPartitions(4)}), topic="admin-a", total=4)
    attempt(
        m,
        client,
        "alter_configs",
        lambda: admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "admin-a", configs={"retention.ms": (AlterConfigOp.SET, "7200000")})],
            raise_on_unknown=False,
            incremental=True,
        ),
        show=lambda r: r,
        topic="admin-a",
        api="IncrementalAlterConfigs",
    )
    attempt(
        m,
        client,
        "alter_configs",
        lambda: admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "admin-a", configs={"retention.ms": "7200000"})],
            raise_on_unknown=False,
            incremental=False,
        ),
        topic="admin-a",
        api="AlterConfigs",
    )

    attempt(m, client, "delete_groups", lambda: admin.delete_groups(["admin-group"]), show=lambda r: r, groups=["admin-group"])
    attempt(m, client, "delete_topics", lambda: admin.delete_topics(["admin-b"]), topics=["admin-b"])
    attempt(m, client, "delete_topics", lambda: admin.delete_topics(["admin-missing"]), topics=["admin-missing"], expect="error 3")
    admin.close()


@scenario(
    "admin-confluent",
    "Admin from librdkafka: topics, configs, cluster, groups, offsets (nanosecond pcap)",
    nano=True,
    expect_apis={2, 3, 8, 9, 16, 19, 20, 32, 42, 69},
)
def admin_confluent(ctx: Ctx) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic, OffsetSpec

    m, client = ctx.manifest, confluent_name()
    admin = AdminClient({"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-admin"})

    def wait_all(futures: dict):
        return {str(k): f.result(30) for k, f in futures.items()}

    attempt(
        m,
        client,
        "create_topics",
        lambda: wait_all(
            admin.create_topics(
                [NewTopic("cadmin-a", 2, 1), NewTopic("cadmin-b", 1, 1, config={"cleanup.policy": "compact"})], operation_timeout=10
            )
        ),
        topics=["cadmin-a", "cadmin-b"],
        partitions=[2, 1],
    )
    attempt(
        m,
        client,
        "create_topics",
        lambda: wait_all(admin.create_topics([NewTopic("cadmin-a", 2, 1)])),
        topics=["cadmin-a"],
        partitions=[2],
        expect="error 36",
    )
    attempt(
        m,
        client,
        "list_topics",
        lambda: admin.list_topics(timeout=10),
        show=lambda md: {"cluster_id": md.cluster_id, "topics": {t: len(tm.partitions) for t, tm in sorted(md.topics.items())}},
    )
    attempt(
        m,
        client,
        "describe_configs",
        lambda: {
            str(r): {k: v.value for k, v in sorted(f.result(30).items())}
            for r, f in admin.describe_configs([ConfigResource("topic", "cadmin-b")]).items()
        },
        show=lambda r: r,
        resources=[["topic", "cadmin-b"]],
    )
    attempt(
        m,
        client,
        "describe_cluster",
        lambda: admin.describe_cluster().result(30),
        show=lambda c: {"cluster_id": c.cluster_id, "nodes": [[n.id, n.host, n.port] for n in c.nodes]},
    )

    producer = Producer({"bootstrap.servers": ctx.bootstrap, "client.id": "kdrig-admin-producer"})
    reports = []
    for i in range(2):
        producer.produce(
            "cadmin-a",
            value=f"cadmin value {i}".encode(),
            key=f"k{i}".encode(),
            partition=0,
            timestamp=FIXED_TS + i,
            on_delivery=lambda err, msg: reports.append((err, msg)),
        )
    producer.flush(30)
    for err, msg in reports:
        m.produced(
            client,
            topic=msg.topic(),
            partition=msg.partition(),
            offset=msg.offset() if err is None else None,
            timestamp=msg.timestamp()[1],
            key=msg.key(),
            value=msg.value(),
            codec="none",
            acks="all",
        )

    for spec_name, spec in (("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest())):
        for isolation in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
            attempt(
                m,
                client,
                "list_offsets",
                lambda spec=spec, isolation=isolation: {
                    f"{tp.topic}/{tp.partition}": f.result(30).offset
                    for tp, f in admin.list_offsets({TopicPartition("cadmin-a", 0): spec}, isolation_level=isolation).items()
                },
                show=lambda r: r,
                topic="cadmin-a",
                partitions=[0],
                spec=spec_name,
                isolation=isolation.name,
            )

    attempt(
        m,
        client,
        "alter_consumer_group_offsets",
        lambda: [
            str(f.result(30))
            for f in admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions("cadmin-group", [TopicPartition("cadmin-a", 0, 1)])]
            ).values()
        ],
        group="cadmin-group",
        offsets=[["cadmin-a", 0, 1]],
    )
    attempt(
        m,
        client,
        "list_consumer_groups",
        lambda: admin.list_consumer_groups().result(30),
        show=lambda r: sorted(g.group_id for g in r.valid),
    )
    attempt(
        m,
        client,
        "describe_consumer_groups",
        lambda: {g: str(f.result(30).state) for g, f in admin.describe_consumer_groups(["cadmin-group"]).items()},
        show=lambda r: r,
        groups=["cadmin-group"],
    )
    attempt(
        m,
        client,
        "list_consumer_group_offsets",
        lambda: [
            [[tp.topic, tp.partition, tp.offset] for tp in f.result(30).topic_partitions]
            for f in admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("cadmin-group")]).values()
        ],
        show=lambda r: r,
        groups=["cadmin-group"],
    )

    attempt(
        m, client, "create_partitions", lambda: wait_all(admin.create_partitions([NewPartitions("cadmin-a", 3)])), topic="cadmin-a", total=3
    )
    attempt(m, client, "delete_consumer_groups", lambda: wait_all(admin.delete_consumer_groups(["cadmin-group"])), groups=["cadmin-group"])
    attempt(m, client, "delete_topics", lambda: wait_all(admin.delete_topics(["cadmin-b"], operation_timeout=10)), topics=["cadmin-b"])
