"""The TCP header: ports, sequence numbers, flags, and where the payload starts."""

from __future__ import annotations

import struct

from kdissect.net.malformed import Malformed

FIN = 0x01
SYN = 0x02
RST = 0x04
PSH = 0x08
ACK = 0x10

_HEADER = struct.Struct("!HHIIH").unpack_from


def tcp(data: bytes, start: int, end: int) -> tuple[int, int, int, int, int, int]:
    """(source port, destination port, seq, ack, flags, payload start) of the header at `start`."""
    if start + 20 > end:
        raise Malformed("tcp.truncated", "the TCP header is cut short")
    sport, dport, seq, ack, offset_flags = _HEADER(data, start)
    length = (offset_flags >> 12) * 4
    if length < 20:
        raise Malformed("tcp.bad-header", f"TCP data offset {length} is below the minimum of 20")
    return sport, dport, seq, ack, offset_flags & 0x1FF, start + length
