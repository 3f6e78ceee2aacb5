"""Kafka Connect's group protocol, declared as data: what distributed workers put in JoinGroup and SyncGroup.

Workers join a group whose protocol type is "connect" and offer up to three protocols by name: "default" (the
eager protocol, V0, Kafka's ConnectProtocol), "compatible" (V1, incremental cooperative rebalancing, KIP-415,
IncrementalCooperativeConnectProtocol) and "sessioned" (V2: V1's layout, saying that internal REST requests are
signed, KIP-507). Every payload starts with an int16 version, and Kafka reads any version from 0 up with the
newest layout it knows. Strings carry an int16 length and arrays an int32 count, as Kafka's old `Schema` types
write them: the non-flexible encoding of its message specs, so the spec compiler reads these tables too.

These are facts of the format from Apache Kafka's connect/runtime sources (ConnectProtocol.java,
IncrementalCooperativeConnectProtocol.java, ExtendedAssignment.java); the names are theirs in the specs' case.
"""

from __future__ import annotations

from kdissect.schema.model import OPEN, Field, Versions, data_schema

V0_UP = Versions(0, OPEN)
V1_UP = Versions(1, OPEN)
LAYOUTS = Versions(0, 2)
"""The versions Kafka defines; a newer one is read as V2, as Kafka reads it."""

PROTOCOL_TYPE = "connect"
CONNECTOR_TASK = -1
"""A task number of -1 in an assignment stands for the connector itself, not one of its tasks."""
CONFIG_MISMATCH = 1
ERRORS = {0: "NO_ERROR", CONFIG_MISMATCH: "CONFIG_MISMATCH"}
"""An assignment's error: CONFIG_MISMATCH when the workers' config offsets differ in a way the leader cannot
resolve; the workers read the config topic to its end and join again."""
PROTOCOLS = {"default": 0, "compatible": 1, "sessioned": 2}
"""JoinGroup protocol names and the version of their metadata."""

CONNECTOR_ASSIGNMENT = (
    Field("Connector", "string", V0_UP),
    Field("Tasks", "int32", V0_UP, array=True),
)
"""One connector's share of an assignment: its tasks by number, CONNECTOR_TASK for the connector itself."""

CONNECT_METADATA = data_schema(
    "ConnectProtocolMetadata",
    LAYOUTS,
    (
        Field("Url", "string", V0_UP),
        Field("ConfigOffset", "int64", V0_UP),
        Field("Allocation", "bytes", V1_UP, nullable=V1_UP),
    ),
)
"""A worker's JoinGroup metadata: its REST URL, the config topic offset it has read to, and (V1+) what it runs now,
an assignment in CONNECT_ASSIGNMENT's format, null when it runs nothing."""

CONNECT_ASSIGNMENT = data_schema(
    "ConnectProtocolAssignment",
    LAYOUTS,
    (
        Field("Error", "int16", V0_UP),
        Field("Leader", "string", V0_UP),
        Field("LeaderUrl", "string", V0_UP),
        Field("ConfigOffset", "int64", V0_UP),
        Field("Assignment", "ConnectorAssignment", V0_UP, array=True, nullable=V1_UP, fields=CONNECTOR_ASSIGNMENT),
        Field("Revoked", "ConnectorAssignment", V1_UP, array=True, nullable=V1_UP, fields=CONNECTOR_ASSIGNMENT),
        Field("ScheduledDelay", "int32", V1_UP),
    ),
)
"""What the leader hands each worker in SyncGroup: an error, the leader and its URL, the config offset the
assignment was made at, the connectors and tasks to run and (V1+) to stop, and the delay in ms before the leader
rebalances again to give out the work of workers that left (scheduled.rebalance.max.delay.ms)."""
