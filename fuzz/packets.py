"""Fuzz bytes to TCP packets: one small language shared by the framing and whole-connection harnesses.

A header byte chooses the broker port (the Kafka port, or another one the dissector must recognise) and
whether a handshake opens the connection; then each operation is 4 bytes (direction and flags, a gap, a
length) followed by that many payload bytes. Packets are raw IPv4 without checksums: nothing checks them.
"""

from __future__ import annotations

import struct
from typing import Iterator

from kdissect.capture.packet import Packet

LINKTYPE_RAW = 101
_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP = struct.Struct("!HHIIHHHH")
CLIENT, BROKER = (b"\x0a\x00\x00\x01", 40000), (b"\x0a\x00\x00\x02", 9092)
OTHER_BROKER = (b"\x0a\x00\x00\x02", 19092)
SYN, FIN, RST, ACK = 0x02, 0x01, 0x04, 0x10


def raw_packet(
    src: tuple[bytes, int], dst: tuple[bytes, int], seq: int, ack: int, flags: int, payload: bytes, ts: int, index: int
) -> Packet:
    tcp = _TCP.pack(src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 12 | flags, 65535, 0, 0)
    ip = _IP.pack(0x45, 0, 20 + len(tcp) + len(payload), 0, 0, 64, 6, 0, src[0], dst[0])
    data = ip + tcp + payload
    return Packet(ts, LINKTYPE_RAW, data, len(data), index)


def packets(data: bytes) -> Iterator[Packet]:
    if not data:
        return
    head = data[0]
    ends = (CLIENT, OTHER_BROKER if head & 1 else BROKER)
    seqs = [1000 + (head >> 4) * 0x10000000, 5000]
    index = 0
    ts = 1_700_000_000_000_000_000

    def make(side: int, flags: int, payload: bytes, seq: int | None = None) -> Packet:
        nonlocal index, ts
        index += 1
        ts += 1000
        at = seqs[side] if seq is None else seq
        return raw_packet(ends[side], ends[1 - side], at, seqs[1 - side], flags, payload, ts, index)

    if head & 2:
        yield make(0, SYN, b"")
        seqs[0] += 1
        yield make(1, SYN | ACK, b"")
        seqs[1] += 1
    pos = 1
    while pos + 4 <= len(data):
        control, gap, length = data[pos], data[pos + 1], int.from_bytes(data[pos + 2 : pos + 4], "big") % 4096
        pos += 4
        payload = data[pos : pos + length]
        pos += length
        side = control & 1
        flags = ACK | (FIN if control & 2 else 0) | (RST if control & 4 else 0) | (SYN if control & 8 else 0)
        seqs[side] += gap * (16 if control & 16 else 1)  # bytes the capture lost before this segment
        if control & 32:  # a segment sent again, then the stream goes on
            yield make(side, flags, payload)
        yield make(side, flags, payload)
        seqs[side] += len(payload) + bool(flags & (SYN | FIN))
