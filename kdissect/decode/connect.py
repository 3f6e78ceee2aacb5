"""Kafka Connect's group payloads read (kdissect/schema/connect_protocol.py): a worker's JoinGroup metadata, with
the assignment it runs inside it (V1+), and the leader's assignment in SyncGroup."""

from __future__ import annotations

from kdissect.decode.misread import Misread, misreads, start_of
from kdissect.schema.connect_protocol import CONNECT_ASSIGNMENT, CONNECT_METADATA, ERRORS
from kdissect.schema.tree import Struct
from kdissect.schema.versioned import read_payload


def metadata(data: bytes) -> tuple[Struct | None, list[Misread]]:
    """A worker's metadata; its Allocation, when it holds one, annotated with the assignment it holds."""
    payload = read_payload(CONNECT_METADATA, data)
    found = misreads(payload, "Connect worker metadata")
    struct = payload.struct
    allocation = struct.get("Allocation") if struct is not None else None
    if struct is not None and isinstance(allocation, bytes) and allocation:
        inner, wrong = assignment(allocation)
        if inner is not None:
            struct.annotate("Allocation", inner)
        if wrong:
            start = start_of(CONNECT_METADATA, data, "Allocation")
            found += [m.deeper(start) for m in wrong]
    return struct, found


def assignment(data: bytes) -> tuple[Struct | None, list[Misread]]:
    """An assignment; a non-zero Error annotated with its name (CONFIG_MISMATCH)."""
    payload = read_payload(CONNECT_ASSIGNMENT, data)
    struct = payload.struct
    error = struct.get("Error") if struct is not None else None
    if struct is not None and isinstance(error, int) and error:
        struct.annotate("Error", ERRORS.get(error, f"UNKNOWN_CONNECT_ERROR_{error}"))
    return struct, misreads(payload, "Connect assignment")
