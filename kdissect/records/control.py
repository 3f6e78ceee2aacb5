"""Control records: the key every control record has, and the transaction marker value.

The other control values (KRaft leader changes, snapshot markers, voters) are messages with specs in the
schema tables; `CONTROL_TYPES` names the spec of each so the schema-driven decoder can take them from here.
"""

from __future__ import annotations

import struct

from kdissect.records.values import Control, EndTxnMarker

ABORT, COMMIT = 0, 1

CONTROL_TYPES = {
    0: ("ABORT", "EndTxnMarker"),
    1: ("COMMIT", "EndTxnMarker"),
    2: ("LEADER_CHANGE", "LeaderChangeMessage"),
    3: ("SNAPSHOT_HEADER", "SnapshotHeaderRecord"),
    4: ("SNAPSHOT_FOOTER", "SnapshotFooterRecord"),
    5: ("KRAFT_VERSION", "KRaftVersionRecord"),
    6: ("KRAFT_VOTERS", "VotersRecord"),
}
"""Control record type: (name, name of the message spec of its value)."""

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


def decode_control(key: bytes | None, value: bytes | None) -> tuple[Control | None, str]:
    """The control key and marker, or None and why not. Extra bytes after them are allowed, as Kafka allows them."""
    if key is None or len(key) < _KEY.size:
        return None, f"control key of {0 if key is None else len(key)} bytes, expected at least 4"
    version, ctype = _KEY.unpack_from(key)
    name, schema = CONTROL_TYPES.get(ctype, (f"UNKNOWN-{ctype}", None))
    if ctype not in (ABORT, COMMIT):
        return Control(version, ctype, name, schema), ""
    if value is None or len(value) < _MARKER.size:
        return Control(version, ctype, name, schema), f"{name} marker value of {0 if value is None else len(value)} bytes, expected 6"
    return Control(version, ctype, name, schema, EndTxnMarker(*_MARKER.unpack_from(value))), ""
