"""Data schemas led by their version: consumer-protocol payloads, control record keys and values, Kafka Streams' user
data, Kafka Connect's group payloads.

Two conventions meet here. The consumer protocol, Connect's payloads, the control record key and EndTxnMarker write
an int16 version before the struct; the KRaft control records (LeaderChangeMessage, VotersRecord, ...) declare it as
their first field, an int16, and Kafka Streams' SubscriptionInfo and AssignmentInfo as theirs, an int32. Either way
the first bytes say which version to read.
"""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.limits import DEFAULT_LIMITS
from kdissect.schema import MessageSpec, pick
from kdissect.schema.compiler import Compiler
from kdissect.schema.model import nearest_version
from kdissect.schema.tree import Partial, Struct

KEEP = DEFAULT_LIMITS.max_array_elements
"""Elements of a payload's array built, as a body's are: the rest are read and dropped, so a payload that claims a
million tasks costs its bytes and no more."""
_compilers = (
    Compiler(records=lambda buf, start, end: bytes(buf[start:end]), keep=KEEP),
    Compiler(lambda buf, start, end: None, spans=True, keep=KEEP),
)
"""Data schemas carry no records fields; one compiler serves them all, and one with spans says where a field lies."""
VERSION_WIDTHS = {"int16": 2, "int32": 4}


@dataclass(frozen=True, slots=True)
class Payload:
    """A version-led payload as far as it reads: its struct (led by its version), and what went wrong where."""

    struct: Struct | None
    problem: str | None = None
    at: int | None = None
    """The offset in the payload where reading failed (None when nothing failed, or the bytes are too few)."""


def known_versions(definitions: tuple[MessageSpec, ...]) -> tuple[int, ...]:
    return tuple(sorted({v for d in definitions for v in range(d.valid.lo, d.valid.hi + 1)}))


def version_width(definition: MessageSpec) -> tuple[int, bool]:
    """How many bytes the version takes, and whether they are the struct's own first field."""
    first = definition.fields[0] if definition.fields else None
    if first is not None and first.name.lower() == "version" and first.type in VERSION_WIDTHS:
        return VERSION_WIDTHS[first.type], True
    return 2, False


def read_payload(definitions: tuple[MessageSpec, ...], data: bytes, spans: bool = False) -> Payload:
    """The payload, led by a "Version" field (the schema's own when it has one); `spans` records where each field lies
    in `data`.

    A version newer than the schema is read as the newest known one: such versions only append fields, so
    bytes left over are expected then and reported otherwise.
    """
    width, in_band = version_width(definitions[0])
    if len(data) < width:
        return Payload(None, f"{len(data)} bytes, too short to hold a version")
    version = int.from_bytes(data[:width], "big", signed=True)
    found = read_struct(definitions, version, data, 0 if in_band else width, spans)
    if found.struct is None or in_band:
        return found
    fields = found.struct
    spanned = None if fields.spans is None else [0, width, *fields.spans]
    return Payload(Struct(("Version",) + fields.names, [version] + fields.values, spanned), found.problem, found.at)


def read_struct(definitions: tuple[MessageSpec, ...], version: int, data: bytes, start: int, spans: bool = False) -> Payload:
    """The struct at `start` in `data`, read as `version` of the schema (the nearest known version), to the end of
    `data`: a payload whose version was told some other way (a record type's key, a metadata record's frame)."""
    known = known_versions(definitions)
    used = nearest_version(known, version)
    definition = pick(definitions, used)
    assert definition is not None
    problem: str | None = None
    at: int | None = None
    try:
        fields, end = _compilers[spans].compile(definition, used)(data, start)
    except Partial as failure:
        fields, problem, at = failure.value, f"{definition.name} v{used}: {failure.where()}: {failure.reason}", failure.offset
    else:
        if version < known[0]:
            problem, at = f"version {version}: {definition.name} starts at v{known[0]}; read as v{used}", 0
        elif end < len(data) and version <= known[-1]:
            problem, at = f"{len(data) - end} bytes follow the end of {definition.name}", end
    return Payload(fields, problem, at)


def read_versioned(definitions: tuple[MessageSpec, ...], data: bytes) -> tuple[Struct | None, str | None]:
    """`read_payload`'s struct and problem: what the control records and the consumer protocol keep of it."""
    payload = read_payload(definitions, data)
    return payload.struct, payload.problem
