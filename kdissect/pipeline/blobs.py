"""Packets packed into one blob per row: every packet of one connection key in one range, in capture order.

Shipping one row per connection per range rather than one per packet keeps Spark's per-row cost off the
packets; the key (net/flow_key.py) says which connection a packet belongs to.
"""

from __future__ import annotations

import struct
from typing import Iterator

from kdissect.capture.packet import Packet

PACKED = struct.Struct("<qqqIIH")
"""ts (ns), packet number, file offset, original length, captured length, link type; then the bytes."""


def pack(packet: Packet) -> bytes:
    """One packet for a blob."""
    data = packet.data
    return PACKED.pack(packet.ts, packet.index, packet.offset, packet.orig_len, len(data), packet.linktype) + data


def unpack(blob: bytes) -> Iterator[Packet]:
    """The packets of a blob, as the core takes them."""
    head = PACKED.unpack_from
    size = PACKED.size
    new = tuple.__new__
    pos = 0
    end = len(blob)
    while pos < end:
        ts, index, offset, orig_len, incl, linktype = head(blob, pos)
        pos += size
        yield new(Packet, (ts, linktype, blob[pos : pos + incl], orig_len, index, offset, 0))
        pos += incl
