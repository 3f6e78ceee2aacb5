"""What a decoded body means beyond its numbers: errors, topics, groups, records in place, topic ids by name.

For each (schema, version) a plan lists only the fields that matter here and the structs that lead to them,
using the specs' own facts (entityType "topicName"/"groupId", int16 fields named *ErrorCode, uuid TopicId,
records). Walking the plan visits nothing else, so the pass costs little next to decoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from kdissect.decode.redaction import secret_config
from kdissect.records.values import RecordSet
from kdissect.schema import Catalog
from kdissect.schema.model import Field
from kdissect.schema.tree import Struct

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
PARTITION_FIELDS = frozenset({"Partition", "PartitionIndex", "Index", "PartitionId"})

Plan: TypeAlias = "tuple[tuple[tuple[str, str], ...], tuple[tuple[str, bool, Plan], ...]]"
"""((field name, kind) of the fields that matter here, (name, is an array, sub-plan) of the structs leading to
more); a struct under which nothing matters has none (None)."""
Path: TypeAlias = "tuple[Path, str, int | None] | None"
"""A field path kept as (parent, name, index) links and spelt out only when a finding needs it."""


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
    topic: str | None = None
    """The topic of the struct that holds it (stated, named by an id, or inherited), as a reader names the error."""


class Findings:
    """What one walk collects; the decoder turns it into the body's derived facts."""

    __slots__ = ("errors", "topics", "groups", "records", "holders", "topic_ids", "secrets")

    def __init__(self) -> None:
        self.errors: list[ErrorAt] = []
        self.topics: list[str] = []
        self.groups: list[str] = []
        self.records: list[PlacedRecords] = []
        self.holders: list[tuple[Struct, int]] = []
        """(struct, index of the value) of each records field, beside `records`: where a field read again goes."""
        self.topic_ids: list[tuple[str, str]] = []
        """(topic id, topic name) pairs stated side by side in this body."""
        self.secrets: list[tuple[Struct, int]] = []
        """(struct, index of a value) of every field that carries a credential (`Field.secret`)."""


def _kind(f: Field) -> str | None:
    if f.secret:
        return "secret"
    if f.config_value:
        return "config"
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


Plans = dict[tuple[int, int], "Plan | None"]
"""(id of a fields tuple, version) -> its plan: kept by the catalogue the tuples belong to (`plans`), whose life is
theirs, so an id is never another tuple's."""


def plans(catalog: Catalog) -> Plans:
    """The plans of a catalogue's definitions, made as they are first asked for."""
    return catalog.derived(plans, lambda _: {})


def plan(fields: tuple[Field, ...], version: int, made: Plans) -> Plan | None:
    """Which fields of a struct at `version` carry meaning, and which of its structs hold some; memoised in `made`."""
    key = (id(fields), version)
    if key in made:
        return made[key]
    scalars: list[tuple[str, str]] = []
    children: list[tuple[str, bool, Plan]] = []
    for f in fields:
        if version not in f.versions:
            continue
        if f.is_struct:
            sub = plan(f.fields, version, made)
            if sub is not None:
                children.append((f.name, f.array, sub))
            continue
        kind = _kind(f)
        if kind:
            scalars.append((f.name, kind))
    result = (tuple(scalars), tuple(children)) if scalars or children else None
    made[key] = result
    return result


def names_topic_ids(steps: Plan | None) -> bool:
    """Whether bodies of this plan can state a topic id beside its name, which `walk` then reports."""
    if steps is None:
        return False
    scalars, children = steps
    kinds = {kind for _, kind in scalars}
    return {"topic", "topic_id"} <= kinds or any(names_topic_ids(sub) for _, _, sub in children)


def _text(path: Path, name: str) -> str:
    parts = [name]
    while path is not None:
        path, parent, index = path
        parts.append(f"{parent}[{index}]" if index is not None else parent)
    return ".".join(reversed(parts))


def walk(struct: Struct, steps: Plan, found: Findings, topic_names: dict[str, str], path: Path = None, topic: str | None = None) -> None:
    """Collect findings under `struct`. Topic context flows down: records and partitions inherit it.

    A struct that names its topic only by id gets the name learnt earlier in the capture, as an annotation.
    """
    names, values = struct.names, struct.values
    scalars, children = steps
    topic_id = stated = partition = None
    records = []
    first_error = -1
    for name, kind in scalars:
        try:
            value = values[names.index(name)]
        except ValueError:
            continue
        if value is None:
            continue
        if kind == "error":
            if value:
                if first_error < 0:
                    first_error = len(found.errors)
                found.errors.append(ErrorAt(_text(path, name), value, topic))
        elif kind == "topic":
            if type(value) is str:
                topic = stated = value
                found.topics.append(value)
        elif kind == "partition":
            partition = value
        elif kind == "records":
            records.append((name, value))
        elif kind == "topic_id":
            topic_id = value
        elif kind == "group":
            if type(value) is str:
                found.groups.append(value)
        elif kind == "topics":
            found.topics.extend(v for v in value if type(v) is str)
        elif kind == "groups":
            found.groups.extend(v for v in value if type(v) is str)
        elif kind == "secret":
            found.secrets.append((struct, names.index(name)))
        elif kind == "config":
            config = struct.get("Name")
            if secret_config(config if type(config) is str else "", struct.get("IsSensitive") is True):
                found.secrets.append((struct, names.index(name)))
    if topic_id and topic_id != ZERO_UUID:
        if stated:
            found.topic_ids.append((topic_id, stated))
        elif topic_id in topic_names:
            topic = topic_names[topic_id]
            struct.annotate("TopicId", topic)
            found.topics.append(topic)
    if first_error >= 0 and topic is not None:  # a topic named after its error code in the same struct
        errors = found.errors
        for i in range(first_error, len(errors)):
            if errors[i].topic is None:
                errors[i] = ErrorAt(errors[i].path, errors[i].code, topic)
    for name, value in records:
        if isinstance(value, RecordSet):
            found.records.append(PlacedRecords(_text(path, name), topic, partition, value))
            found.holders.append((struct, names.index(name)))
    for name, many, sub in children:
        try:
            value = values[names.index(name)]
        except ValueError:
            continue
        if value is None:
            continue
        if not many:
            if type(value) is Struct:
                walk(value, sub, found, topic_names, (path, name, None), topic)
            continue
        for i, item in enumerate(value):
            if type(item) is Struct:
                walk(item, sub, found, topic_names, (path, name, i), topic)
