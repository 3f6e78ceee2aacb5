"""Which connection a packet belongs to, without reassembly, and packets packed into one blob per row.

The shuffle needs a connection's packets together on one task. The key is the TCP 4-tuple, canonicalised so
both directions agree; a 4-tuple reused after a close keeps the key, and the core tells the connections apart
from the packets themselves, as it does in the CLI. Keys start with a kind byte:

- ``T`` + both (address, port) ends, smaller first: a TCP packet;
- ``F`` + both addresses: an IP fragment (its ports are in the first fragment only), so a datagram's fragments
  meet on one task;
- ``M``: a packet the core will call malformed (its headers end early); all of one file's go together.

Packets that are neither (not IP, not TCP, an unknown link type) produce nothing in the core: `flow_key`
returns None and they are counted, not shipped.
"""

from __future__ import annotations

import struct
from typing import Iterator

from kdissect.capture.packet import Packet
from kdissect.net.ip import ip_header
from kdissect.net.linklayer import DECODERS
from kdissect.net.malformed import Malformed
from kdissect.net.segments import FIXED_LINK_HEADERS
from kdissect.net.segments import IPPROTO_TCP as TCP

MALFORMED = b"M"


def _ends(a: bytes, b: bytes) -> bytes:
    return b"T" + (a + b if a <= b else b + a)


def flow_key(linktype: int, data: bytes) -> bytes | None:
    """The shuffle key of a packet (see the module's docstring); None for packets the core ignores."""
    fixed = FIXED_LINK_HEADERS.get(linktype)
    if fixed is not None:
        off, eth = fixed
        if len(data) >= off + 24 and data[eth] == 8 and data[eth + 1] == 0 and data[off] == 0x45 and data[off + 9] == TCP:
            if not (data[off + 6] & 0x3F or data[off + 7]):  # not a fragment
                return _ends(data[off + 12 : off + 16] + data[off + 20 : off + 22], data[off + 16 : off + 20] + data[off + 22 : off + 24])
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
    if proto != TCP:
        return None
    if start + 20 > end:
        return MALFORMED
    return _ends(src + data[start : start + 2], dst + data[start + 2 : start + 4])


# blobs: every packet of one key in one split, in capture order

PACKED = struct.Struct("<qqqIIH")
"""ts (ns), packet number, file offset, original length, captured length, link type; then the bytes."""


def pack(packet: Packet, index: int) -> bytes:
    """One packet for a blob, numbered `index` in its file."""
    data = packet.data
    return PACKED.pack(packet.ts, index, packet.offset, packet.orig_len, len(data), packet.linktype) + data


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
        yield new(Packet, (ts, linktype, blob[pos : pos + incl], orig_len, index, offset))
        pos += incl


def describe(key: bytes) -> str:
    """A key as text, for logs and errors."""
    import ipaddress

    kind, rest = key[:1], key[1:]
    if kind == b"T":
        width = (len(rest) - 4) // 2
        a, b = rest[: width + 2], rest[width + 2 :]
        return " ↔ ".join(f"{ipaddress.ip_address(x[:width])}:{int.from_bytes(x[width:], 'big')}" for x in (a, b))
    if kind == b"F":
        width = len(rest) // 2
        return f"fragments {ipaddress.ip_address(rest[:width])} ↔ {ipaddress.ip_address(rest[width:])}"
    return {b"M": "malformed packets", b"D": "file diagnostics"}.get(kind, repr(key))
