"""Damaged copies of a capture, as real taps make them: segments dropped, captured late, twice, or out of order.

Tests, fuzz seeds and benchmarks take a capture's packets, damage them here, and write the result with
`capture.writer` when they need a file. Each function returns a new list; packets keep their own numbers and
timestamps, as a capture that holds them in another order would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kdissect.capture.packet import Packet
from kdissect.events import Exchange
from kdissect.net.segments import SegmentDecoder

Key = tuple[str, str, Any, Any]


@dataclass(frozen=True, slots=True)
class Segment:
    """Where a TCP packet sits: its position in the list, its direction, and its stream bytes."""

    position: int
    flow: tuple[bytes, int, bytes, int]
    """(source address, source port, destination address, destination port)."""
    seq: int
    length: int
    """Payload bytes: 0 for a bare ACK, a SYN, a FIN or a RST."""

    @property
    def connection(self) -> frozenset[tuple[bytes, int]]:
        return frozenset({self.flow[:2], self.flow[2:]})


def segments(packets: list[Packet]) -> list[Segment]:
    """Every TCP packet, in capture order."""
    decoder = SegmentDecoder(1 << 24)
    out = []
    for position, packet in enumerate(packets):
        segment = decoder.decode(packet)
        if segment is not None:
            out.append(Segment(position, (segment.src, segment.sport, segment.dst, segment.dport), segment.seq, len(segment.payload)))
    return out


def data_segments(packets: list[Packet]) -> list[Segment]:
    """Every packet that carries TCP payload, in capture order."""
    return [s for s in segments(packets) if s.length]


def last_of_connection(packets: list[Packet], segment: Segment) -> int:
    """Position of the last packet of the segment's connection: a segment captured after it comes too late to use."""
    return max(s.position for s in segments(packets) if s.connection == segment.connection)


def drop(packets: list[Packet], position: int) -> list[Packet]:
    return packets[:position] + packets[position + 1 :]


def delay(packets: list[Packet], position: int, by: int) -> list[Packet]:
    """The packet captured `by` packets later than it was (at the end if fewer follow), stamped when it was."""
    moved = packets[:position] + packets[position + 1 :]
    at = min(position + by, len(moved))
    late = packets[position]
    late = late._replace(ts=max(late.ts, moved[at - 1].ts)) if at else late
    return moved[:at] + [late] + moved[at:]


def duplicate(packets: list[Packet], position: int, after: int) -> list[Packet]:
    """A second copy of the packet, `after` packets after the first."""
    at = position + 1 + after
    return packets[:at] + [packets[position]] + packets[at:]


def swap(packets: list[Packet], first: int, second: int) -> list[Packet]:
    out = list(packets)
    out[first], out[second] = out[second], out[first]
    return out


def exchange_key(exchange: Exchange) -> Key:
    """Where an exchange sits, whatever packets a damaged copy numbers or times differently: its connection's
    endpoints and its frames' stream offsets."""
    c = exchange.connection
    return (
        str(c.client),
        str(c.broker),
        exchange.request.frame.offset if exchange.request else None,
        exchange.response.frame.offset if exchange.response else None,
    )
