"""How a record's key or value is framed: which schema registry's wire format, and what names its schema.

The formats, as their serializers write them:

* Confluent: magic byte 0, a big-endian int32 schema id, then the encoded value (for Protobuf, first the message
  indexes: a zigzag-varint count and that many zigzag varints, or the single byte 0 for `[0]`). Newer clients can
  put the id in a header instead, `__key_schema_id` / `__value_schema_id`: magic 0 and the int32, or magic 1 and the
  schema's 16-byte GUID (then the Protobuf indexes), the value itself unprefixed.
* Apicurio: magic byte 0 and a big-endian int64 global id before the value, or the id in the headers
  `apicurio.key.globalId` / `apicurio.value.globalId` (an int64), the value unprefixed.
* AWS Glue: header version byte 3, a compression byte (0 none, 5 zlib), the 16-byte schema version id.

A magic 0 followed by four zero bytes is Apicurio's int64 (a Confluent registry never gives id 0); otherwise the
int32 is Confluent's. Framing read from a header wins over the payload's first bytes, as Confluent's deserializer
decides. `detect` only reads bytes; whether a prefix really is framing (a text value may start with a zero byte)
is the reader's judgement (values/reader.py), with the schemas it knows.
"""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.values.plain import HEADERS
from kdissect.wire import WireError, read_uvarint

CONFLUENT = "confluent"
CONFLUENT_HEADER = "confluent-header"
CONFLUENT_GUID = "confluent-header-guid"
APICURIO = "apicurio"
APICURIO_HEADER = "apicurio-header"
GLUE = "glue"
FRAMINGS = (CONFLUENT, CONFLUENT_HEADER, CONFLUENT_GUID, APICURIO, APICURIO_HEADER, GLUE)
"""Every framing that names a schema, as JSON, filters and tables spell them."""

ID = "id"
GUID = "guid"
GLOBAL_ID = "global-id"
GLUE_VERSION = "glue-version"

WHY = {
    CONFLUENT: "magic byte 0 and schema id {id} at offset 1",
    CONFLUENT_HEADER: "header {header} holds schema id {id}",
    CONFLUENT_GUID: "header {header} holds schema GUID {id}",
    APICURIO: "magic byte 0 and 8-byte global id {id} at offset 1",
    APICURIO_HEADER: "header {header} holds global id {id}",
    GLUE: "Glue header version 3, {compression}, schema version {id}",
}
GLUE_ZLIB = 5
GLUE_COMPRESSIONS = {0: "none", GLUE_ZLIB: "zlib"}
MAX_INDEXES = 64
"""Protobuf message indexes deeper than this are not a nesting anyone writes: the bytes are not indexes."""


@dataclass(frozen=True, slots=True)
class SchemaRef:
    """What names a schema: a Confluent id, a Confluent GUID, an Apicurio global id, or a Glue schema version id."""

    kind: str
    id: int | str

    def __str__(self) -> str:
        return str(self.id) if self.kind == ID else f"{self.kind} {self.id}"


@dataclass(frozen=True, slots=True)
class Framing:
    """What the first bytes (or a header) say: the framing, the schema it names, and where the encoded value starts."""

    kind: str
    ref: SchemaRef
    start: int
    """Offset in the key or value where what follows the framing starts (Protobuf's message indexes, if any, then
    the encoded value)."""
    indexes: tuple[int, ...] | None = None
    """Protobuf message indexes carried in a header (a GUID header holds them after the GUID)."""
    compression: str = "none"
    """Glue's compression of the encoded value."""
    header: str | None = None
    """The header that names the schema, for the framings that use one."""

    @property
    def why(self) -> str:
        """What was seen, for people: "magic byte 0 and schema id 7 at offset 1" (made when asked: values are many)."""
        return WHY[self.kind].format(id=self.ref.id, header=self.header, compression=self.compression)


def from_headers(role: str, headers: tuple[tuple[str | bytes, bytes | None], ...]) -> Framing | None:
    """A schema named by the record's headers for its key or value (the first such header, as deserializers read)."""
    confluent, apicurio = HEADERS[role]
    for name, data in headers:
        if name == confluent and data:
            return _confluent_header(confluent, data)
        if name == apicurio and data is not None and len(data) == 8:
            global_id = int.from_bytes(data, "big", signed=True)
            return Framing(APICURIO_HEADER, SchemaRef(GLOBAL_ID, global_id), 0, header=apicurio)
    return None


def _confluent_header(name: str, data: bytes) -> Framing | None:
    if data[0] == 0 and len(data) >= 5:
        schema_id = int.from_bytes(data[1:5], "big")
        indexes = read_indexes(data, 5)[0] if len(data) > 5 else None
        return Framing(CONFLUENT_HEADER, SchemaRef(ID, schema_id), 0, indexes, header=name)
    if data[0] == 1 and len(data) >= 17:
        guid = _uuid(data[1:17])
        indexes = read_indexes(data, 17)[0] if len(data) > 17 else None
        return Framing(CONFLUENT_GUID, SchemaRef(GUID, guid), 0, indexes, header=name)
    return None


def prefix_size(data: bytes) -> int:
    """How many first bytes spell a framing (5 Confluent, 9 Apicurio, 18 Glue), 0 when none does: what `from_prefix`
    reads, told without making anything (the reader's first look at a value)."""
    if len(data) < 5:
        return 0
    first = data[0]
    if first == 0:
        if data[1:5] == b"\0\0\0\0":
            return 9 if len(data) >= 9 and data[5:9] != b"\0\0\0\0" else 0  # id 0 is no registry's
        return 5
    if first == 3 and len(data) >= 18 and data[1] in GLUE_COMPRESSIONS:
        return 18
    return 0


def from_prefix(data: bytes, size: int | None = None) -> Framing | None:
    """The framing the first bytes spell, if any (a candidate: see the module's docstring); `size` is their
    `prefix_size` when the caller has it already."""
    if size is None:
        size = prefix_size(data)
    if size == 5:
        return Framing(CONFLUENT, SchemaRef(ID, int.from_bytes(data[1:5], "big")), 5)
    if size == 9:
        return Framing(APICURIO, SchemaRef(GLOBAL_ID, int.from_bytes(data[1:9], "big", signed=True)), 9)
    if size == 18:
        return Framing(GLUE, SchemaRef(GLUE_VERSION, _uuid(data[2:18])), 18, compression=GLUE_COMPRESSIONS[data[1]])
    return None


def _uuid(raw: bytes) -> str:
    """16 bytes as a UUID's text (uuid's module is imported only for the framings that carry one)."""
    import uuid

    return str(uuid.UUID(bytes=bytes(raw)))


def read_indexes(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    """Protobuf message indexes at `pos`: a zigzag-varint count, then that many zigzag varints; a count of 0 (the
    single byte 0) means `[0]`, the file's first message. Returns (indexes, where the value starts); WireError when
    the bytes are no indexes."""
    raw, pos = read_uvarint(data, pos)
    count = (raw >> 1) ^ -(raw & 1)
    if count == 0:
        return (0,), pos
    if count < 0 or count > MAX_INDEXES:
        raise WireError(f"{count} message indexes", pos)
    out = []
    for _ in range(count):
        raw, pos = read_uvarint(data, pos)
        index = (raw >> 1) ^ -(raw & 1)
        if index < 0:
            raise WireError(f"a negative message index ({index})", pos)
        out.append(index)
    return tuple(out), pos
