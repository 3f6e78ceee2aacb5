"""Client settings as each client library names them: advice is worded in the client's own dialect.

A rule's advice names settings by a concept in braces (`{fetch_wait}`); `worded` fills each in for the library the
finding's clients run (known from ApiVersions v3+, or inferred: `doctor/clients.py`), or, when that is not known,
with the Java and librdkafka names, the two most clients share.
"""

from __future__ import annotations

import re

DIALECTS = ("java", "librdkafka", "dotnet", "kafka-python", "kafkajs", "franz-go", "sarama")
"""The libraries advice is worded for. librdkafka's dialect serves its wrappers (confluent-kafka for Python and
Go, kcat); kafka-python's serves aiokafka, which took its settings' names."""
LIBRARY = {
    "java": "the Java client",
    "librdkafka": "librdkafka",
    "dotnet": "Confluent.Kafka (.NET)",
    "kafka-python": "kafka-python",
    "kafkajs": "KafkaJS",
    "franz-go": "franz-go",
    "sarama": "sarama",
}

SETTINGS: dict[str, dict[str, str]] = {
    "fetch_wait": {
        "java": "fetch.max.wait.ms",
        "librdkafka": "fetch.wait.max.ms",
        "dotnet": "FetchWaitMaxMs",
        "kafka-python": "fetch_max_wait_ms",
        "kafkajs": "maxWaitTimeInMs (consumer)",
        "franz-go": "kgo.FetchMaxWait",
        "sarama": "Consumer.MaxWaitTime",
    },
    "fetch_min": {
        "java": "fetch.min.bytes",
        "librdkafka": "fetch.min.bytes",
        "dotnet": "FetchMinBytes",
        "kafka-python": "fetch_min_bytes",
        "kafkajs": "minBytes (consumer)",
        "franz-go": "kgo.FetchMinBytes",
        "sarama": "Consumer.Fetch.Min",
    },
    "linger": {
        "java": "linger.ms",
        "librdkafka": "linger.ms",
        "dotnet": "LingerMs",
        "kafka-python": "linger_ms",
        "kafkajs": "sending several messages per send() call (KafkaJS has no linger)",
        "franz-go": "kgo.ProducerLinger",
        "sarama": "Producer.Flush.Frequency",
    },
    "batch_size": {
        "java": "batch.size",
        "librdkafka": "batch.size and batch.num.messages",
        "dotnet": "BatchSize",
        "kafka-python": "batch_size",
        "kafkajs": "the messages per send() call",
        "franz-go": "kgo.ProducerBatchMaxBytes",
        "sarama": "Producer.Flush.Messages",
    },
    "session_timeout": {
        "java": "session.timeout.ms",
        "librdkafka": "session.timeout.ms",
        "dotnet": "SessionTimeoutMs",
        "kafka-python": "session_timeout_ms",
        "kafkajs": "sessionTimeout",
        "franz-go": "kgo.SessionTimeout",
        "sarama": "Consumer.Group.Session.Timeout",
    },
    "heartbeat_interval": {
        "java": "heartbeat.interval.ms",
        "librdkafka": "heartbeat.interval.ms",
        "dotnet": "HeartbeatIntervalMs",
        "kafka-python": "heartbeat_interval_ms",
        "kafkajs": "heartbeatInterval",
        "franz-go": "kgo.HeartbeatInterval",
        "sarama": "Consumer.Group.Heartbeat.Interval",
    },
    "poll_interval": {
        "java": "max.poll.interval.ms",
        "librdkafka": "max.poll.interval.ms",
        "dotnet": "MaxPollIntervalMs",
        "kafka-python": "max_poll_interval_ms",
        "kafkajs": "rebalanceTimeout",
        "franz-go": "kgo.RebalanceTimeout",
        "sarama": "Consumer.Group.Rebalance.Timeout",
    },
    "poll_records": {
        "java": "max.poll.records",
        "librdkafka": "the messages consume() is asked for",
        "dotnet": "the messages handled per Consume() loop",
        "kafka-python": "max_poll_records",
        "kafkajs": "the work done in eachBatch/eachMessage",
        "franz-go": "kgo.MaxPollRecords",
        "sarama": "the work done per ConsumeClaim message",
    },
    "request_timeout": {
        "java": "request.timeout.ms",
        "librdkafka": "request.timeout.ms (socket.timeout.ms)",
        "dotnet": "RequestTimeoutMs",
        "kafka-python": "request_timeout_ms",
        "kafkajs": "requestTimeout",
        "franz-go": "kgo.RequestTimeoutOverhead",
        "sarama": "Net.ReadTimeout",
    },
    "retries": {
        "java": "retries and delivery.timeout.ms",
        "librdkafka": "retries and message.timeout.ms",
        "dotnet": "MessageSendMaxRetries and MessageTimeoutMs",
        "kafka-python": "retries",
        "kafkajs": "retry (retries, maxRetryTime)",
        "franz-go": "kgo.RequestRetries",
        "sarama": "Producer.Retry.Max",
    },
    "idempotence": {
        "java": "enable.idempotence",
        "librdkafka": "enable.idempotence",
        "dotnet": "EnableIdempotence",
        "kafka-python": "enable_idempotence",
        "kafkajs": "idempotent: true",
        "franz-go": "idempotence (on unless kgo.DisableIdempotentWrite)",
        "sarama": "Producer.Idempotent",
    },
    "version_pin": {
        "any": "librdkafka's api.version.request and broker.version.fallback, kafka-python's api_version, sarama's "
        "Config.Version; the Java client has none",
        "java": "none in the Java client: its own version decides",
        "librdkafka": "api.version.request, broker.version.fallback",
        "dotnet": "ApiVersionRequest, BrokerVersionFallback",
        "kafka-python": "api_version: leave it unset, so the client negotiates",
        "kafkajs": "none in KafkaJS: its own version decides",
        "franz-go": "kgo.MaxVersions, kgo.MinVersions",
        "sarama": "Config.Version",
    },
    "auto_commit": {
        "java": "enable.auto.commit and auto.commit.interval.ms",
        "librdkafka": "enable.auto.commit and enable.auto.offset.store",
        "dotnet": "EnableAutoCommit and EnableAutoOffsetStore",
        "kafka-python": "enable_auto_commit and auto_commit_interval_ms",
        "kafkajs": "autoCommit (or commitOffsets in eachBatch)",
        "franz-go": "auto commit (on unless kgo.DisableAutoCommit)",
        "sarama": "Consumer.Offsets.AutoCommit.Enable",
    },
    "metadata_age": {
        "java": "metadata.max.age.ms",
        "librdkafka": "topic.metadata.refresh.interval.ms and metadata.max.age.ms",
        "dotnet": "TopicMetadataRefreshIntervalMs",
        "kafka-python": "metadata_max_age_ms",
        "kafkajs": "metadataMaxAge",
        "franz-go": "kgo.MetadataMaxAge",
        "sarama": "Metadata.RefreshFrequency",
    },
    "auto_create": {
        "java": "allow.auto.create.topics",
        "librdkafka": "allow.auto.create.topics",
        "dotnet": "AllowAutoCreateTopics",
        "kafka-python": "allow_auto_create_topics (kafka-python 3 asks for creation whatever it says)",
        "kafkajs": "allowAutoTopicCreation",
        "franz-go": "kgo.AllowAutoTopicCreation",
        "sarama": "Metadata.AllowAutoTopicCreation",
    },
    "reconnect_backoff": {
        "java": "reconnect.backoff.ms",
        "librdkafka": "reconnect.backoff.ms",
        "dotnet": "ReconnectBackoffMs",
        "kafka-python": "reconnect_backoff_ms",
        "kafkajs": "retry.initialRetryTime",
        "franz-go": "kgo.RetryBackoffFn",
        "sarama": "Net.DialTimeout and Metadata.Retry.Backoff",
    },
    "assignor": {
        "java": "partition.assignment.strategy (CooperativeStickyAssignor) or group.protocol=consumer",
        "librdkafka": "partition.assignment.strategy=cooperative-sticky",
        "dotnet": "PartitionAssignmentStrategy = CooperativeSticky",
        "kafka-python": "partition_assignment_strategy (StickyPartitionAssignor)",
        "kafkajs": "partitionAssigners",
        "franz-go": "kgo.Balancers(kgo.CooperativeStickyBalancer())",
        "sarama": "Consumer.Group.Rebalance.GroupStrategies (sticky)",
    },
    "static_member": {
        "java": "group.instance.id",
        "librdkafka": "group.instance.id",
        "dotnet": "GroupInstanceId",
        "kafka-python": "group_instance_id",
        "kafkajs": "a longer sessionTimeout (KafkaJS has no static membership)",
        "franz-go": "kgo.InstanceID",
        "sarama": "Consumer.Group.InstanceId",
    },
}
"""Concept -> its setting in each dialect; "any", where there is one, words it for a client not known better than the
Java and librdkafka pair would."""

_PLACE = re.compile(r"\{(\w+)\}")


def worded(advice: str, dialect: str | None) -> str:
    """`advice` with each `{concept}` named as `dialect` names it; unknown: the Java and librdkafka names."""

    def name(match: re.Match[str]) -> str:
        names = SETTINGS.get(match.group(1))
        if names is None:
            return match.group(0)
        if dialect in names:
            return names[dialect]
        if "any" in names:
            return names["any"]
        java, librdkafka = names["java"], names["librdkafka"]
        return java if java == librdkafka else f"{java} (Java) or {librdkafka} (librdkafka)"

    return _PLACE.sub(name, advice)
