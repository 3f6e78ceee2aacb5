"""The Internet checksum (RFC 1071) of IPv4 headers and of TCP segments over their pseudo-header."""

from __future__ import annotations

import struct

IPPROTO_TCP = 6


def internet_checksum(data: bytes | bytearray) -> int:
    """The one's complement of the one's complement sum of the 16-bit words. A big-endian number is congruent
    modulo 0xFFFF to the sum of its 16-bit words, so one big-integer remainder replaces a Python loop."""
    if len(data) % 2:
        data = bytes(data) + b"\0"
    return ~(int.from_bytes(data, "big") % 0xFFFF) & 0xFFFF


def tcp_checksum(src: bytes, dst: bytes, segment: bytes | bytearray) -> int:
    """The checksum of a TCP segment (its checksum field zero) between two IPv4 or two IPv6 addresses."""
    if len(src) == 4:
        pseudo = src + dst + struct.pack("!BBH", 0, IPPROTO_TCP, len(segment))
    else:
        pseudo = src + dst + struct.pack("!IxxxB", len(segment), IPPROTO_TCP)
    return internet_checksum(pseudo + bytes(segment))
