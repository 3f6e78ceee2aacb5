"""Packets to TCP segments: the link layer, IP (fragments reassembled), and the TCP header."""

from __future__ import annotations

import struct
from typing import NamedTuple

from kdissect.capture.linktypes import LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2
from kdissect.capture.packet import Packet
from kdissect.net.fragments import FragmentTable
from kdissect.net.ip import ip_header, ipv6_extensions
from kdissect.net.linklayer import DECODERS
from kdissect.net.malformed import Malformed
from kdissect.net.tcp import tcp

IPPROTO_TCP = 6

_IPV4_TCP = struct.Struct("!BxHHHxB2x4s4sHHIIH").unpack_from
"""An option-less IPv4 header and the fixed part of a TCP header, read in one call: the common case."""
FIXED_LINK_HEADERS = {LINKTYPE_ETHERNET: (14, 12), LINKTYPE_LINUX_SLL: (16, 14), LINKTYPE_LINUX_SLL2: (20, 0)}
"""Link types with a fixed-size header: (IP offset, ethertype offset)."""
_new = tuple.__new__


class Segment(NamedTuple):
    """One TCP segment as captured. A NamedTuple for the same per-packet cost reason as `Packet`."""

    ts: int
    index: int  # type: ignore[assignment]  # the packet's number, as Packet.index; it hides tuple.index, which no caller uses
    src: bytes
    sport: int
    dst: bytes
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int
    """Payload bytes that were on the wire but not in the capture (snapshot length)."""


def plain_ipv4_tcp(linktype: int, data: bytes) -> tuple[bytes, int, bytes, int, int, int, int, int, int] | None:
    """(src, sport, dst, dport, seq, ack, flags, payload start, payload end) of option-less IPv4 carrying a whole
    TCP header over a fixed-size link header, read in one struct call: the common case. None for every other
    packet, which the general path (link layer, `ip_header`, `tcp`) reads."""
    fixed = FIXED_LINK_HEADERS.get(linktype)
    if fixed is not None and len(data) >= fixed[0] + 40 and data[fixed[1]] == 8 and data[fixed[1] + 1] == 0:
        off = fixed[0]
        first, total, _ident, frag, proto, src, dst, sport, dport, seq, ack, offset_flags = _IPV4_TCP(data, off)
        end = off + total
        head = off + 20 + (offset_flags >> 12) * 4
        if (
            first == 0x45
            and proto == IPPROTO_TCP
            and not frag & 0x3FFF
            and end <= len(data)
            and 40 <= total
            and offset_flags >= 0x5000
            and head <= end  # a TCP data offset under 5 words: the general path rejects it
        ):
            return src, sport, dst, dport, seq, ack, offset_flags & 0x1FF, head, end
    return None


class SegmentDecoder:
    """Turns packets into segments; counts what is not TCP and what is malformed.

    Holds the IP fragment table, the only state below TCP.
    """

    def __init__(self, max_fragment_bytes: int) -> None:
        self.fragments = FragmentTable(max_fragment_bytes)

    def decode(self, packet: Packet) -> Segment | None:
        """The packet's TCP segment; None if it carries none (yet); Malformed if it cannot be read.

        Plain IPv4 over a fixed-size link header takes the fast path (`plain_ipv4_tcp`); everything else
        (VLAN tags, IP options, IPv6, fragments, truncation) the general one.
        """
        data = packet.data
        fast = plain_ipv4_tcp(packet.linktype, data)
        if fast is not None:
            src, sport, dst, dport, seq, ack, flags, head, end = fast
            return _new(Segment, (packet.ts, packet.index, src, sport, dst, dport, seq, ack, flags, data[head:end], 0))
        decoder = DECODERS.get(packet.linktype)
        if decoder is None:
            return None
        try:
            version, off = decoder(data)
            header = ip_header(data, version, off)
            if header is None:
                return None
            src, dst, proto, start, end, missing, fragment = header
            if fragment is not None:
                key = (src, dst, proto, fragment[0])
                whole = self.fragments.add(key, fragment[1], fragment[2], data[start:end], missing > 0, packet.ts)
                if whole is None:
                    return None
                data, start, end, missing = whole, 0, len(whole), 0
                if version == 6:
                    proto, start, _ = ipv6_extensions(data, proto, 0, end)
            if proto != IPPROTO_TCP:
                return None
            sport, dport, seq, ack, flags, payload_start = tcp(data, start, end)
        except (IndexError, struct.error):
            raise Malformed("packet.truncated", "the packet ends inside its headers") from None
        if payload_start > end:
            if not missing:
                raise Malformed("tcp.bad-header", "the TCP header runs past the IP packet")
            missing -= payload_start - end
            payload_start = end
        return _new(Segment, (packet.ts, packet.index, src, sport, dst, dport, seq, ack, flags, data[payload_start:end], missing))
