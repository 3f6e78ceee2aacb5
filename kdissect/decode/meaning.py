"""What a decoded body means beyond its numbers: errors, topics, groups, records in place, topic ids by name.

For each (schema, version) a plan lists only the fields that matter here and the structs that lead to them,
using the specs' own facts (entityType "topicName"/"groupId", int16 fields named *ErrorCode, uuid TopicId,
records). Walking the plan visits nothing else, so the pass costs little next to decoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kdissect.decode.tree import Struct
from kdissect.records.values import RecordSet
from kdissect.schema.model import Field

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
PARTITION_FIELDS = frozenset({"Partition", "PartitionIndex", "Index", "PartitionId"})

Plan = tuple[tuple[str, str, Any], ...]
"""(field name, kind, sub-plan for structs and arrays of structs)."""


@dataclass(frozen=True, slots=True)
class PlacedRecords:
    """A records field with the topic and partition of the struct that holds it."""

    path: str
    topic: str | None
    partition: int | None
    records: RecordSet


@dataclass(frozen=True, slots=True)
class ErrorAt:
    path: str
    code: int


@dataclass
class Findings:
    """What one walk collects; the decoder turns it into the body's derived facts."""

    errors: list[ErrorAt] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    records: list[PlacedRecords] = field(default_factory=list)
    topic_ids: list[tuple[str, str]] = field(default_factory=list)
    """(topic id, topic name) pairs stated side by side in this body."""


def _kind(f: Field) -> str | None:
    if f.type == "int16" and f.name.endswith("ErrorCode") and not f.array:
        return "error"
    if f.entity == "topicName" and f.type == "string":
        return "topics" if f.array else "topic"
    if f.entity == "groupId" and f.type == "string":
        return "groups" if f.array else "group"
    if f.type == "uuid" and f.name == "TopicId" and not f.array:
        return "topic_id"
    if f.type == "records":
        return "records"
    if f.name in PARTITION_FIELDS and f.type == "int32" and not f.array:
        return "partition"
    return None


_plans: dict[tuple[int, int], Plan] = {}


def plan(fields: tuple[Field, ...], version: int) -> Plan:
    key = (id(fields), version)
    cached = _plans.get(key)
    if cached is not None:
        return cached
    out: list[tuple[str, str, Any]] = []
    for f in fields:
        if version not in f.versions:
            continue
        if f.is_struct:
            sub = plan(f.fields, version)
            if sub:
                out.append((f.name, "structs" if f.array else "struct", sub))
            continue
        kind = _kind(f)
        if kind:
            out.append((f.name, kind, None))
    _plans[key] = result = tuple(out)
    return result


def walk(
    struct: Struct, steps: Plan, found: Findings, topic_names: dict[str, str], path: str = "", topic: str | None = None
) -> None:
    """Collect findings under `struct`. Topic context flows down: records and partitions inherit it.

    A struct that names its topic only by id gets the name learnt earlier in the capture, as an annotation.
    """
    if not steps:
        return
    names, values = struct.names, struct.values
    here: dict[str, Any] = {}
    for name, kind, _ in steps:
        if kind in ("struct", "structs") or name not in names:
            continue
        here[name] = (kind, values[names.index(name)])
    topic_id = None
    partition = None
    for name, (kind, value) in here.items():
        if value is None:
            continue
        if kind == "error":
            if value:
                found.errors.append(ErrorAt(f"{path}{name}", value))
        elif kind == "topic":
            topic = value if isinstance(value, str) else topic
            if isinstance(value, str):
                found.topics.append(value)
        elif kind == "topics":
            found.topics.extend(v for v in value if isinstance(v, str))
        elif kind == "group":
            if isinstance(value, str):
                found.groups.append(value)
        elif kind == "groups":
            found.groups.extend(v for v in value if isinstance(v, str))
        elif kind == "topic_id":
            topic_id = value
        elif kind == "partition":
            partition = value
    if topic_id and topic_id != ZERO_UUID:
        stated = next((v for k, v in here.values() if k == "topic" and isinstance(v, str)), None)
        if stated:
            found.topic_ids.append((topic_id, stated))
        elif topic_id in topic_names:
            topic = topic_names[topic_id]
            struct.annotate("TopicId", topic)
            found.topics.append(topic)
    for name, (kind, value) in here.items():
        if kind == "records" and isinstance(value, RecordSet):
            found.records.append(PlacedRecords(f"{path}{name}", topic, partition, value))
    for name, kind, sub in steps:
        if kind not in ("struct", "structs") or name not in names:
            continue
        value = values[names.index(name)]
        if value is None:
            continue
        if kind == "struct":
            if isinstance(value, Struct):
                walk(value, sub, found, topic_names, f"{path}{name}.", topic)
        else:
            for i, item in enumerate(value):
                if isinstance(item, Struct):
                    walk(item, sub, found, topic_names, f"{path}{name}[{i}].", topic)
