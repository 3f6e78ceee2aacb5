"""IPv4 and IPv6 headers, IPv6 extension headers included: where the transport payload lies."""

from __future__ import annotations

import struct

from kdissect.net.malformed import Malformed

_V4 = struct.Struct("!HHHBB").unpack_from
_V6_FRAGMENT = struct.Struct("!HI").unpack_from

IPPROTO_FRAGMENT = 44
IPPROTO_AH = 51
IPHeader = tuple[bytes, bytes, int, int, int, int, tuple[int, int, bool] | None]
"""(src, dst, protocol, payload start, payload end, bytes the capture cut, fragment or None)."""
IPV6_EXTENSIONS = frozenset({0, 43, 60, 135, 139, 140, 253, 254})
"""Hop-by-hop, routing, destination options, mobility, HIP, shim6, experiments: all length in 8-octet units."""


def ipv4(data: bytes, off: int) -> IPHeader:
    """An `IPHeader`; a fragment is (datagram id, byte offset, more fragments)."""
    first = data[off]
    ihl = (first & 15) * 4
    if first >> 4 != 4 or ihl < 20:
        raise Malformed("ip.bad-header", f"IPv4 header with version {first >> 4} and length {ihl}")
    total, ident, frag, _ttl, proto = _V4(data, off + 2)
    if total == 0:
        total = len(data) - off  # segmentation offload: the NIC fills it in, the capture saw 0
    elif total < ihl:
        raise Malformed("ip.bad-length", f"IPv4 total length {total} is shorter than its header ({ihl})")
    end = off + total
    missing = end - len(data)
    if missing > 0:
        end = len(data)
    else:
        missing = 0
    start = off + ihl
    if start > end:
        raise Malformed("ip.truncated", "the capture cut the IPv4 header")
    fragment = (ident, (frag & 0x1FFF) * 8, bool(frag & 0x2000)) if frag & 0x3FFF else None
    return data[off + 12 : off + 16], data[off + 16 : off + 20], proto, start, end, missing, fragment


def ipv6(data: bytes, off: int) -> IPHeader:
    """Same shape as `ipv4`; extension headers are walked to the transport header."""
    if data[off] >> 4 != 6:
        raise Malformed("ip.bad-header", f"IPv6 header with version {data[off] >> 4}")
    length = data[off + 4] << 8 | data[off + 5]
    proto = data[off + 6]
    start = off + 40
    end = start + length if length else len(data)
    missing = end - len(data)
    if missing > 0:
        end = len(data)
    else:
        missing = 0
    proto, start, fragment = ipv6_extensions(data, proto, start, end)
    return data[off + 8 : off + 24], data[off + 24 : off + 40], proto, start, end, missing, fragment


def ip_header(data: bytes, version: int, off: int) -> IPHeader | None:
    """`ipv4` or `ipv6` by the version the link layer named; None when the link layer carries no IP."""
    if version == 4:
        return ipv4(data, off)
    if version == 6:
        return ipv6(data, off)
    return None


def ipv6_extensions(data: bytes, proto: int, start: int, end: int) -> tuple[int, int, tuple[int, int, bool] | None]:
    """Walk extension headers to the transport header: (protocol, its start, fragment or None).

    The walk stops after a fragment header: the headers behind it belong to the fragmented part, readable
    only once the datagram is whole (the caller walks on from there).
    """
    while proto in IPV6_EXTENSIONS or proto == IPPROTO_FRAGMENT or proto == IPPROTO_AH:
        if start + 8 > end:
            raise Malformed("ip.truncated", "an IPv6 extension header runs past the packet")
        following = data[start]
        if proto == IPPROTO_FRAGMENT:
            offset_flags, ident = _V6_FRAGMENT(data, start + 2)
            return following, start + 8, (ident, offset_flags & 0xFFF8, bool(offset_flags & 1))
        if proto == IPPROTO_AH:
            start += (data[start + 1] + 2) * 4
        else:
            start += (data[start + 1] + 1) * 8
        proto = following
    if start > end:
        raise Malformed("ip.truncated", "IPv6 extension headers run past the packet")
    return proto, start, None
