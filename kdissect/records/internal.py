"""Records of Kafka's own topics, read by their schemas: what the group, transaction and share coordinators write to
__consumer_offsets, __transaction_state and __share_group_state, and the remote log metadata records, whenever they
cross the wire (a follower's replication Fetch, a consumer or a tool reading them).

A records field learns its topic only once the body around it is decoded (decode/meaning.py places it), so the
decoder hands a field of such a topic here afterwards and puts the result in its place. The tables are
generated_extras.py's, loaded the first time such a topic is met. The formats (schema/model.py's InternalTopic):
a coordinator's key is an int16 record type and the key's fields, its value an int16 version and the value's fields,
or null (a tombstone); a metadata record's value is an unsigned varint frame version, type and version, then its
fields.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from typing import TypeVar

from kdissect.diagnostic import Diagnostic
from kdissect.records.values import KafkaRecord, LegacyMessage, Record, RecordBatch, RecordSet
from kdissect.schema.model import InternalTopic
from kdissect.schema.tree import Struct
from kdissect.schema.versioned import read_payload, read_struct
from kdissect.wire import WireError, read_uvarint

PREFIX = "__"
"""Every topic Kafka writes itself starts so: a cheap test before the tables are loaded."""
TYPE = struct.Struct(">h")
FRAME_VERSION = 1
"""The only frame version of metadata records Kafka reads (AbstractApiMessageSerde)."""
R = TypeVar("R", Record, LegacyMessage)


def internal_topic(name: str | None) -> InternalTopic | None:
    if name is None or not name.startswith(PREFIX):
        return None
    from kdissect.schema.generated_extras import INTERNAL_TOPICS  # loaded when such a topic is met

    return INTERNAL_TOPICS.get(name)


def read_records(topic: InternalTopic, records: RecordSet) -> tuple[RecordSet, list[Diagnostic]]:
    """The same records, each holding what its key and value say; what does not read, as diagnostics located like the
    batch decoder's (scope "batch": the batch's offset in the field, the record's path)."""
    told: list[Diagnostic] = []
    batches: list[RecordBatch | LegacyMessage] = []
    for i, batch in enumerate(records.batches):
        if isinstance(batch, RecordBatch):
            read = [_record(topic, r, batch.span[0], f"batch[{i}].record[{j}]", told) for j, r in enumerate(batch.records)]
            batches.append(replace(batch, records=tuple(read)))
        else:
            batches.append(_legacy(topic, batch, batch.span[0], f"batch[{i}]", told))
    return replace(records, batches=tuple(batches)), told


def _legacy(topic: InternalTopic, message: LegacyMessage, at: int, path: str, told: list[Diagnostic]) -> LegacyMessage:
    if message.messages:
        inner = tuple(_legacy(topic, m, at, f"{path}.message[{k}]", told) for k, m in enumerate(message.messages))
        return replace(message, messages=inner)
    return _record(topic, message, at, path, told)


def _record(topic: InternalTopic, record: R, at: int, path: str, told: list[Diagnostic]) -> R:
    if isinstance(record, Record) and record.control is not None:
        return record  # a transaction marker among the offsets of a transactional commit
    reading, problem = read_kafka_record(topic, record.key, record.value)
    if problem:
        told.append(Diagnostic("record.internal-malformed", f"{topic.name}: {problem}", "warning", "batch", at, path))
    return replace(record, reading=reading) if reading is not None else record


def read_kafka_record(topic: InternalTopic, key: bytes | None, value: bytes | None) -> tuple[KafkaRecord | None, str]:
    """A record's key and value read as the topic writes them, and what went wrong ("" when nothing did)."""
    if topic.framing == "metadata":
        return _metadata(topic, value)
    if key is None or len(key) < TYPE.size:
        return None, f"a key of {0 if key is None else len(key)} bytes holds no record type"
    (kind,) = TYPE.unpack_from(key)
    record_type = topic.types.get(kind)
    if record_type is None:
        return KafkaRecord(f"UNKNOWN-{kind}", kind, None, None), f"record type {kind} is not one kdissect knows"
    found = read_struct(record_type.key, 0, key, TYPE.size)
    problems = [f"{record_type.name} key: {found.problem}"] if found.problem else []
    read_value = None
    if value is not None:
        payload = read_payload(record_type.value, value)
        read_value = payload.struct
        if payload.problem:
            problems.append(f"{record_type.name} value: {payload.problem}")
    return KafkaRecord(record_type.name, kind, found.struct, read_value), "; ".join(problems)


def _metadata(topic: InternalTopic, value: bytes | None) -> tuple[KafkaRecord | None, str]:
    if value is None:
        return None, "a metadata record without a value"
    try:
        frame, at = read_uvarint(value, 0)
        kind, at = read_uvarint(value, at)
        version, at = read_uvarint(value, at)
    except (WireError, IndexError):
        return None, "the value's frame version, type and version do not read"
    if frame != FRAME_VERSION:
        return None, f"frame version {frame}, not {FRAME_VERSION}"
    record_type = topic.types.get(kind)
    if record_type is None:
        return KafkaRecord(f"UNKNOWN-{kind}", kind, None, None), f"record type {kind} is not one kdissect knows"
    found = read_struct(record_type.value, version, value, at)
    fields = None if found.struct is None else Struct(("Version",) + found.struct.names, [version] + found.struct.values)
    problem = f"{record_type.name}: {found.problem}" if found.problem else ""
    return KafkaRecord(record_type.name, kind, None, fields), problem
