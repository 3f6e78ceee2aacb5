"""Kafka Streams' user data read, inside a "stream" consumer group's subscriptions (SubscriptionInfo, generated from its
spec) and assignments (AssignmentInfo, kdissect/schema/streams_assignment.py).

What kdissect adds beside the fields: the names of AssignorError codes, the topic each v5+ partition names by its
index in the assignment's dictionary, and a named topology's name (written as UTF-16 code units). A version newer than
kdissect knows is read as Kafka's own reader takes it: its version and the version its writer supports.
"""

from __future__ import annotations

import struct

from kdissect.decode.misread import Misread, misreads
from kdissect.schema import MessageSpec
from kdissect.schema.streams_assignment import ASSIGNMENT_INFO, ASSIGNOR_ERRORS, LATEST
from kdissect.schema.tree import Struct
from kdissect.schema.versioned import read_payload

TWO_INTS = struct.Struct(">ii")


def subscription(data: bytes) -> tuple[Struct | None, list[Misread]]:
    from kdissect.schema.generated_extras import STREAMS_SUBSCRIPTION_INFO  # loaded when a Streams member is met

    return _read(STREAMS_SUBSCRIPTION_INFO, data, "Streams SubscriptionInfo", "latestSupportedVersion", "errorCode")


def assignment(data: bytes) -> tuple[Struct | None, list[Misread]]:
    info, found = _read(ASSIGNMENT_INFO, data, "Streams AssignmentInfo", "commonlySupportedVersion", "errCode")
    if info is not None:
        topics = {d.get("index"): d.get("topic") for d in info.get("topicDictionary") or ()}
        for hosts in ("partitionsByHost", "standbyPartitionsByHost"):
            for host in info.get(hosts) or ():
                for partition in host.get("partitions") or ():
                    name = topics.get(partition.get("topicIndex"))
                    if isinstance(name, str):
                        partition.annotate("topicIndex", name)
        for tasks in ("activeTasks", "standbyTasks"):
            for task in info.get(tasks) or ():
                units = task.get("namedTopology")
                if units:
                    task.annotate("namedTopology", struct.pack(f">{len(units)}H", *units).decode("utf-16-be", "replace"))
    return info, found


def _read(definitions: tuple[MessageSpec, ...], data: bytes, what: str, supported: str, error: str) -> tuple[Struct | None, list[Misread]]:
    if len(data) >= TWO_INTS.size:
        version, writer = TWO_INTS.unpack_from(data)
        if version > LATEST:
            message = f"{what} v{version} is newer than kdissect knows (v1-v{LATEST}): its version and {supported} read"
            return Struct(("version", supported), [version, writer]), [Misread("embedded.newer-version", message, TWO_INTS.size, "note")]
    payload = read_payload(definitions, data)
    info = payload.struct
    code = info.get(error) if info is not None else None
    if info is not None and isinstance(code, int) and code:
        info.annotate(error, ASSIGNOR_ERRORS.get(code, f"UNKNOWN_ASSIGNOR_ERROR_{code}"))
    return info, misreads(payload, what)
