"""Data schemas led by their int16 version: consumer-protocol payloads, control record keys and values.

Two conventions meet here. The consumer protocol, the control record key and EndTxnMarker write the version
before the struct; the KRaft control records (LeaderChangeMessage, VotersRecord, ...) declare it as their
first field. Either way the first two bytes say which version to read.
"""

from __future__ import annotations

from kdissect.schema import MessageSpec, pick
from kdissect.schema.compiler import Compiler
from kdissect.schema.model import nearest_version
from kdissect.schema.tree import Partial, Struct

_compiler = Compiler(records=lambda buf, start, end: bytes(buf[start:end]))
"""Data schemas carry no records fields; one compiler serves them all."""


def read_versioned(definitions: tuple[MessageSpec, ...], data: bytes) -> tuple[Struct | None, str | None]:
    """The struct, led by a "Version" field, and what went wrong, if anything.

    A version newer than the schema is read as the newest known one: such versions only append fields, so
    bytes left over are expected then and reported otherwise.
    """
    if len(data) < 2:
        return None, f"{len(data)} bytes, too short to hold a version"
    version = int.from_bytes(data[:2], "big", signed=True)
    known = tuple(sorted({v for d in definitions for v in range(d.valid.lo, d.valid.hi + 1)}))
    used = nearest_version(known, version)
    definition = pick(definitions, used)
    assert definition is not None
    problem = None
    in_band = bool(definition.fields) and definition.fields[0].name == "Version" and definition.fields[0].type == "int16"
    try:
        fields, end = _compiler.compile(definition, used)(data, 0 if in_band else 2)
        if end < len(data) and version <= known[-1]:
            problem = f"{len(data) - end} bytes follow the end of {definition.name}"
    except Partial as failure:
        fields, problem = failure.value, f"{definition.name} v{used}: {failure.where()}: {failure.reason}"
    if fields is None or in_band:
        return fields, problem
    return Struct(("Version",) + fields.names, [version] + fields.values), problem
