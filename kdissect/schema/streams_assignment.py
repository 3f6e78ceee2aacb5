"""Kafka Streams' AssignmentInfo, declared as data: the user data of a "stream" consumer group's assignment.

Kafka Streams joins a consumer group (protocol type "consumer") with its own assignor, named "stream"; its
subscription's user data is SubscriptionInfo (generated from its JSON spec, extras/streams), and the leader's
assignment carries AssignmentInfo, which Kafka writes by hand with a DataOutputStream and has no spec: this table
holds those facts, from Apache Kafka's streams sources (AssignmentInfo.java, ConsumerProtocolUtils.java). Integers
are big-endian, counts int32, strings `writeUTF` (an unsigned 16-bit length, read as the specs' int16 string), and
the version is the first int32. From v5 on, partitions name their topic by its index in a dictionary the info
carries first; from v10 on, a task may belong to a named topology, written as an int32 count of UTF-16 code units
(`writeChars`).

Field names are the Java members' (errCode, nextRebalanceMs), as SubscriptionInfo's spec names its own.
"""

from __future__ import annotations

from kdissect.schema.model import OPEN, Field, Versions, data_schema

V1_UP, V3_UP, V4_UP, V5_UP = (Versions(v, OPEN) for v in (1, 3, 4, 5))
V6_UP, V7_UP, V10_UP = (Versions(v, OPEN) for v in (6, 7, 10))
V2_TO_4 = Versions(2, 4)
LATEST = 11
"""StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION: a newer version tells only its version and the
version its writer supports, as Kafka's own reader takes it."""

ASSIGNOR_ERRORS = {
    0: "NONE",
    1: "INCOMPLETE_SOURCE_TOPIC_METADATA",
    2: "VERSION_PROBING",
    3: "ASSIGNMENT_ERROR",
    4: "SHUTDOWN_REQUESTED",
}
"""Kafka Streams' AssignorError: the errCode of an assignment and the errorCode of a subscription (v9+)."""
LATEST_OFFSET = -2
"""A task offset sum of -2 (Task.LATEST_OFFSET): the client runs the task as active and is caught up."""

TASK_ID = (
    Field("topicGroupId", "int32", V1_UP),
    Field("partition", "int32", V1_UP),
    Field("namedTopology", "uint16", V10_UP, array=True),
)
TOPIC_PARTITION = (
    Field("topic", "string", V1_UP),
    Field("partition", "int32", V1_UP),
)
INDEXED_PARTITION = (
    Field("topicIndex", "int32", V5_UP),
    Field("partition", "int32", V5_UP),
)
HOST = (
    Field("host", "string", V1_UP),
    Field("port", "int32", V1_UP),
)
HOST_PARTITIONS = (*HOST, Field("partitions", "TopicPartition", V2_TO_4, array=True, fields=TOPIC_PARTITION))
"""A host (its application.server) and the partitions it serves, by topic name (v2-v4)."""
HOST_INDEXED_PARTITIONS = (*HOST, Field("partitions", "IndexedPartition", V5_UP, array=True, fields=INDEXED_PARTITION))
"""The same with each topic by its index in the info's topicDictionary (v5+)."""

ASSIGNMENT_INFO = data_schema(
    "AssignmentInfo",
    Versions(1, LATEST),
    (
        Field("version", "int32", V1_UP),
        Field("commonlySupportedVersion", "int32", V3_UP),
        Field("activeTasks", "TaskId", V1_UP, array=True, fields=TASK_ID),
        Field(
            "standbyTasks",
            "StandbyTask",
            V1_UP,
            array=True,
            fields=(*TASK_ID, Field("partitions", "TopicPartition", V1_UP, array=True, fields=TOPIC_PARTITION)),
        ),
        Field("partitionsByHost", "HostPartitions", V2_TO_4, array=True, fields=HOST_PARTITIONS),
        Field("topicDictionary", "TopicIndex", V5_UP, array=True, fields=(Field("index", "int32", V5_UP), Field("topic", "string", V5_UP))),
        Field("partitionsByHost", "HostIndexedPartitions", V5_UP, array=True, fields=HOST_INDEXED_PARTITIONS),
        Field("standbyPartitionsByHost", "HostIndexedPartitions", V6_UP, array=True, fields=HOST_INDEXED_PARTITIONS),
        Field("errCode", "int32", V4_UP),
        Field("nextRebalanceMs", "int64", V7_UP),
    ),
)
"""Active tasks; standby tasks with their partitions; which host (by its application.server) serves which partitions,
of active and (v6+) standby tasks; an AssignorError; (v7+) when the leader wants the group to rebalance again, ms
since the epoch (Long.MAX_VALUE: never): a probing rebalance, while warm-up replicas catch up."""
