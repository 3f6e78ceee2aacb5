"""Which connection a packet belongs to, without reassembly: the key the Spark job groups packets by.

The key is the TCP 4-tuple, canonicalised so both directions agree; a 4-tuple reused after a close keeps the
key, and the core tells the connections apart from the packets themselves, as it does in the CLI. Keys start
with a kind byte:

- ``T`` + both (address, port) ends, smaller first: a TCP packet;
- ``F`` + both addresses: an IP fragment (its ports are in the first fragment only), so a datagram's fragments
  meet on one task;
- ``M``: a packet the core will call malformed (its headers end early); all of one file's go together.

Packets that are neither (not IP, not TCP, an unknown link type) produce nothing in the core: `flow_key`
returns None for them. The headers are read as `SegmentDecoder` reads them (net/segments.py).
"""

from __future__ import annotations

import struct

from kdissect.net.ip import ip_header
from kdissect.net.linklayer import DECODERS
from kdissect.net.malformed import Malformed
from kdissect.net.segments import IPPROTO_TCP, plain_ipv4_tcp

MALFORMED = b"M"
_ENDS4 = struct.Struct("!4sH4sH").pack
"""Both ends of an IPv4 connection as the general path spells them: address, then port in network order."""


def flow_key(linktype: int, data: bytes) -> bytes | None:
    """The key of a packet (see the module's docstring); None for packets the core ignores."""
    fast = plain_ipv4_tcp(linktype, data)
    if fast is not None:
        src, sport, dst, dport, _seq, _ack, _flags, _head, _end = fast  # unpacking all is the quickest
        if src < dst or (src == dst and sport <= dport):
            return b"T" + _ENDS4(src, sport, dst, dport)
        return b"T" + _ENDS4(dst, dport, src, sport)
    decoder = DECODERS.get(linktype)
    if decoder is None:
        return None
    try:
        header = ip_header(data, *decoder(data))
        if header is None:
            return None
        src, dst, proto, start, end, _missing, fragment = header
    except (IndexError, struct.error, Malformed):
        return MALFORMED
    if fragment is not None:
        return b"F" + (src + dst if src <= dst else dst + src)
    if proto != IPPROTO_TCP:
        return None
    if start + 20 > end:
        return MALFORMED
    a, b = src + data[start : start + 2], dst + data[start + 2 : start + 4]
    return b"T" + (a + b if a <= b else b + a)


def key_addresses(key: bytes) -> tuple[bytes, bytes] | None:
    """The two packed addresses (IPv4 or IPv6) a TCP or fragment key holds; None for `MALFORMED`."""
    ends = key[1:]
    if key[:1] == b"T":
        size = len(ends) // 2 - 2
        return ends[:size], ends[size + 2 : 2 * size + 2]
    if key[:1] == b"F":
        size = len(ends) // 2
        return ends[:size], ends[size:]
    return None
