"""A captured TCP/IP packet written again with another payload, other sequence numbers or other addresses.

The link-layer header, the IP header (options, extension headers) and the TCP header (options) are kept; what
changes is set where it lives, and the lengths and checksums that depend on it are made right, so a reader of
the rewritten capture (kdissect, Wireshark) sees a consistent conversation. SACK blocks name sequence numbers,
so they are mapped as acknowledgement numbers are.
"""

from __future__ import annotations

import struct
from typing import Callable, NamedTuple

from kdissect.net.checksum import internet_checksum, tcp_checksum
from kdissect.net.ip import ip_header
from kdissect.net.linklayer import DECODERS
from kdissect.net.malformed import Malformed

IPPROTO_TCP = 6
SACK = 5
_U32 = struct.Struct("!I")
_U16 = struct.Struct("!H")


class TcpLayout(NamedTuple):
    """Where the headers of an unfragmented TCP/IP packet lie in its captured bytes."""

    version: int
    ip: int
    """Offset of the IP header: the link-layer header is everything before it."""
    tcp: int
    payload: int
    end: int
    """End of the IP packet's captured bytes (link-layer padding after it is not part of it)."""
    missing: int
    """Bytes of the IP packet the capture's snapshot length cut."""


def tcp_layout(linktype: int, data: bytes) -> TcpLayout | None:
    """The layout of a packet carrying a whole TCP header; None for anything else (not IP, not TCP, an IP fragment,
    headers cut short)."""
    decoder = DECODERS.get(linktype)
    if decoder is None:
        return None
    try:
        version, off = decoder(data)
        header = ip_header(data, version, off)
    except (IndexError, struct.error, Malformed):
        return None
    if header is None:
        return None
    _src, _dst, proto, start, end, missing, fragment = header
    if fragment is not None or proto != IPPROTO_TCP or start + 20 > end:
        return None
    payload = start + (data[start + 12] >> 4) * 4
    if payload < start + 20 or payload > end:
        return None
    return TcpLayout(version, off, start, payload, end, missing)


Mapper = Callable[[int], int]


def rebuilt(
    data: bytes,
    layout: TcpLayout,
    *,
    seq: int,
    ack: int,
    payload: bytes,
    missing: int = 0,
    map_ack: Mapper | None = None,
    flags: int | None = None,
    src: bytes | None = None,
    dst: bytes | None = None,
    link: bytes | None = None,
) -> bytes:
    """The packet with `payload` (of which `missing` more bytes were on the wire but not captured), `seq` and `ack`,
    SACK edges through `map_ack`, and the TCP `flags`, the IP addresses `src`/`dst` and the link-layer header `link`
    when given."""
    ip = bytearray(data[layout.ip : layout.tcp])
    tcp = bytearray(data[layout.tcp : layout.payload])
    _U32.pack_into(tcp, 4, seq & 0xFFFFFFFF)
    _U32.pack_into(tcp, 8, ack & 0xFFFFFFFF)
    tcp[16:18] = b"\0\0"
    if flags is not None:
        tcp[13] = flags & 0xFF
    if map_ack is not None:
        _map_sack(tcp, map_ack)
    if layout.version == 4:
        if src is not None and dst is not None:
            ip[12:16], ip[16:20] = src, dst
        _U16.pack_into(ip, 2, len(ip) + len(tcp) + len(payload) + missing)
        ip[10:12] = b"\0\0"
        ihl = (ip[0] & 15) * 4
        _U16.pack_into(ip, 10, internet_checksum(ip[:ihl]))
        addresses = bytes(ip[12:16]), bytes(ip[16:20])
    else:
        if src is not None and dst is not None:
            ip[8:24], ip[24:40] = src, dst
        _U16.pack_into(ip, 4, len(ip) - 40 + len(tcp) + len(payload) + missing)
        addresses = bytes(ip[8:24]), bytes(ip[24:40])
    _U16.pack_into(tcp, 16, tcp_checksum(addresses[0], addresses[1], tcp + payload))
    return (data[: layout.ip] if link is None else link) + bytes(ip) + bytes(tcp) + payload


def sack_edges(data: bytes, layout: TcpLayout) -> list[int]:
    """The sequence numbers the edges of the packet's SACK blocks name (a rewrite must move them as well)."""
    tcp = data[layout.tcp : layout.payload]
    return [_U32.unpack_from(tcp, at)[0] for at in _sack_edges(tcp)]


def _map_sack(tcp: bytearray, map_ack: Mapper) -> None:
    """SACK blocks' edges are sequence numbers of the peer's stream: mapped as its acknowledgement numbers are."""
    for at in _sack_edges(tcp):
        _U32.pack_into(tcp, at, map_ack(_U32.unpack_from(tcp, at)[0]) & 0xFFFFFFFF)


def _sack_edges(tcp: bytes | bytearray) -> list[int]:
    """Where the edges of the header's SACK blocks lie in it."""
    edges: list[int] = []
    pos, end = 20, len(tcp)
    while pos < end:
        kind = tcp[pos]
        if kind == 0:
            break
        if kind == 1:
            pos += 1
            continue
        if pos + 1 >= end or tcp[pos + 1] < 2:
            break
        length = tcp[pos + 1]
        if kind == SACK:
            edges.extend(range(pos + 2, min(pos + length, end) - 3, 4))
        pos += length
    return edges
