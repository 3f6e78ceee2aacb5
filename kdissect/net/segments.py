"""Packets to TCP segments: the link layer, IP (fragments reassembled), and the TCP header."""

from __future__ import annotations

import struct
from typing import NamedTuple

from kdissect.capture.linklayer import DECODERS
from kdissect.capture.packet import Packet
from kdissect.net.fragments import FragmentTable
from kdissect.net.ip import ipv4, ipv6
from kdissect.net.malformed import Malformed
from kdissect.net.tcp import tcp

IPPROTO_TCP = 6


class Segment(NamedTuple):
    """One TCP segment as captured. A NamedTuple for the same per-packet cost reason as `Packet`."""

    ts: int
    index: int
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


class SegmentDecoder:
    """Turns packets into segments; counts what is not TCP and what is malformed.

    Holds the IP fragment table, the only state below TCP.
    """

    def __init__(self, max_fragment_bytes: int) -> None:
        self.fragments = FragmentTable(max_fragment_bytes)
        self.not_ip = 0
        self.not_tcp = 0
        self.unknown_linktypes: dict[int, int] = {}

    def decode(self, packet: Packet) -> Segment | None:
        """The packet's TCP segment; None if it carries none (yet); Malformed if it cannot be read."""
        data = packet.data
        decoder = DECODERS.get(packet.linktype)
        if decoder is None:
            self.unknown_linktypes[packet.linktype] = self.unknown_linktypes.get(packet.linktype, 0) + 1
            return None
        try:
            version, off = decoder(data)
            if version == 4:
                src, dst, proto, start, end, missing, fragment = ipv4(data, off)
            elif version == 6:
                src, dst, proto, start, end, missing, fragment = ipv6(data, off)
            else:
                self.not_ip += 1
                return None
            if fragment is not None:
                whole = self.fragments.add((src, dst, proto, fragment[0]), fragment[1], fragment[2], data[start:end], missing > 0)
                if whole is None:
                    return None
                data, start, end, missing = whole, 0, len(whole), 0
            if proto != IPPROTO_TCP:
                self.not_tcp += 1
                return None
            sport, dport, seq, ack, flags, payload_start = tcp(data, start, end)
        except (IndexError, struct.error):
            raise Malformed("packet.truncated", "the packet ends inside its headers") from None
        if payload_start > end:
            if not missing:
                raise Malformed("tcp.bad-header", "the TCP header runs past the IP packet")
            missing -= payload_start - end
            payload_start = end
        return Segment(
            packet.ts, packet.index, src, sport, dst, dport, seq, ack, flags, data[payload_start:end], missing
        )
