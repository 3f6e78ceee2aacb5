"""Payloads inside payloads, written from values: the consumer protocol, Kafka Connect's and Kafka Streams' group
payloads, Schema Registry's JSON, and the records of Kafka's own topics. For tests and the crafted captures of
rig/crafted.py; the decoders share nothing with it but the tables.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from kdissect.schema import Field, MessageSpec, pick
from kdissect.schema.encoder import Encoder
from kdissect.schema.model import InternalTopic
from kdissect.schema.tree import Struct
from kdissect.schema.versioned import version_width
from kdissect.testing.body_encoder import build
from kdissect.wire import write_uvarint

ENCODER = Encoder()
FRAME_VERSION = 1
"""The frame version of metadata-framed records (Kafka's AbstractApiMessageSerde)."""
Values = dict[str, Any] | Struct


def encode_payload(definitions: tuple[MessageSpec, ...], version: int, values: dict[str, Any]) -> bytes:
    """A version-led payload at `version`: the version first (the struct's own first field when it has one, else an
    int16 before it), then `build`'s struct of `values`."""
    definition = pick(definitions, version)
    if definition is None:
        raise ValueError(f"{definitions[0].name} has no version {version}")
    width, in_band = version_width(definition)
    fields = build(definition.fields, version, {definition.fields[0].name: version, **values} if in_band else values)
    body = ENCODER.encode(definition.fields, version, version in definition.flexible, fields)
    return body if in_band else version.to_bytes(width, "big", signed=True) + body


def encode_json(values: dict[str, Any]) -> bytes:
    """Schema Registry's payloads: JSON as Jackson writes it (compact)."""
    return json.dumps(values, separators=(",", ":")).encode()


def encode_internal(
    topic: InternalTopic, record_type: int, key: Values, version: int, value: Values | None
) -> tuple[bytes | None, bytes | None]:
    """The key and value of one record of a Kafka-internal topic; a value of None is a tombstone (coordinator topics).
    Keys and values are `build`'s values, or structs already built."""
    kind = topic.types[record_type]
    definition = pick(kind.value, version)
    assert definition is not None
    body = (
        None
        if value is None
        else ENCODER.encode(definition.fields, version, version in definition.flexible, _struct(definition.fields, version, value))
    )
    if topic.framing == "metadata":
        assert body is not None, "a metadata record has a value"
        return None, write_uvarint(FRAME_VERSION) + write_uvarint(record_type) + write_uvarint(version) + body
    key_fields = kind.key[0].fields
    key_bytes = struct.pack(">h", record_type) + ENCODER.encode(key_fields, 0, False, _struct(key_fields, 0, key))
    return key_bytes, None if body is None else struct.pack(">h", version) + body


def _struct(fields: tuple[Field, ...], version: int, values: Values) -> Struct:
    return values if isinstance(values, Struct) else build(fields, version, values)
