"""Hand-built packets for tests, benchmarks and fuzz seeds: link layers, IPv4/IPv6, TCP, whole conversations,
and Kafka frames.

Everything returns bytes or `Packet` values, built the way a capture would hold them (checksums included), so
what the tests feed the core is what a real capture could contain. Files are written by `capture.writer`.
"""

from __future__ import annotations

import functools
import ipaddress
import struct
from typing import Any, Iterator, Sequence

from kdissect.capture.linktypes import (
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
)
from kdissect.capture.packet import Packet
from kdissect.net.checksum import internet_checksum, tcp_checksum
from kdissect.net.linklayer import ETHERTYPE_IPV4, ETHERTYPE_IPV6
from kdissect.net.tcp import ACK, FIN, PSH, RST, SYN
from kdissect.schema import BUILTIN, Catalog
from kdissect.wire import write_uvarint

TCP = 6
HOP_BY_HOP = 0
ROUTING = 43
FRAGMENT = 44
AH = 51
DEST_OPTIONS = 60
AF_INET = 2
AF_INET6 = 30
"""Darwin's value; the reader accepts the BSDs' 24 and 28 as well."""
CLIENT, SERVER = 0, 1


# -- link layers ------------------------------------------------------------------------------------------------


def ethernet(
    payload: bytes, ethertype: int, vlans: Sequence[int] = (), src: bytes = b"\x02\0\0\0\0\x01", dst: bytes = b"\x02\0\0\0\0\x02"
) -> bytes:
    """An Ethernet II frame; `vlans` are VLAN ids, outermost first: one is 802.1Q, more are QinQ (802.1ad outer)."""
    tags = b""
    for i, vid in enumerate(vlans):
        tpid = 0x8100 if i == len(vlans) - 1 else 0x88A8
        tags += struct.pack("!HH", tpid, vid & 0x0FFF)
    return dst + src + tags + struct.pack("!H", ethertype) + payload


def linux_sll(payload: bytes, ethertype: int, packet_type: int = 0) -> bytes:
    return struct.pack("!HHH8sH", packet_type, 1, 6, b"\x02\0\0\0\0\x01", ethertype) + payload


def linux_sll2(payload: bytes, ethertype: int, ifindex: int = 1) -> bytes:
    return struct.pack("!HHIHBB8s", ethertype, 0, ifindex, 1, 0, 6, b"\x02\0\0\0\0\x01") + payload


def bsd_null(payload: bytes, family: int, big_endian: bool = False) -> bytes:
    """LINKTYPE_NULL: the family in the capturing host's byte order."""
    return struct.pack(">I" if big_endian else "<I", family) + payload


def bsd_loop(payload: bytes, family: int) -> bytes:
    """LINKTYPE_LOOP: the family in network byte order."""
    return struct.pack(">I", family) + payload


def frame(linktype: int, ip_packet: bytes, vlans: Sequence[int] = ()) -> bytes:
    """Wrap an IP packet in the link-layer header of `linktype` (raw types take it as it is)."""
    v6 = ip_packet[0] >> 4 == 6
    ethertype = ETHERTYPE_IPV6 if v6 else ETHERTYPE_IPV4
    if linktype == LINKTYPE_ETHERNET:
        return ethernet(ip_packet, ethertype, vlans)
    if linktype == LINKTYPE_LINUX_SLL:
        return linux_sll(ip_packet, ethertype)
    if linktype == LINKTYPE_LINUX_SLL2:
        return linux_sll2(ip_packet, ethertype)
    if linktype == LINKTYPE_NULL:
        return bsd_null(ip_packet, AF_INET6 if v6 else AF_INET)
    if linktype == LINKTYPE_LOOP:
        return bsd_loop(ip_packet, AF_INET6 if v6 else AF_INET)
    if linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6, 12, 14):
        return ip_packet
    raise ValueError(f"craft cannot build link type {linktype}")


# -- IP -----------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def address(text: str) -> bytes:
    """Packed form of an address; cached, since parsing one costs more than building a whole packet."""
    return ipaddress.ip_address(text).packed


def ipv4(
    src: str,
    dst: str,
    payload: bytes,
    proto: int = TCP,
    ident: int = 0,
    options: bytes = b"",
    offset: int = 0,
    more: bool = False,
    dont_fragment: bool = False,
    total_length: int | None = None,
    ttl: int = 64,
) -> bytes:
    """An IPv4 packet. `offset` is the fragment offset in bytes (a multiple of 8); `total_length=0` mimics
    segmentation offload, where the capture sees the header before the NIC fills the length in."""
    options += b"\0" * (-len(options) % 4)
    ihl = 5 + len(options) // 4
    total = 4 * ihl + len(payload) if total_length is None else total_length
    flags = (0x4000 if dont_fragment else 0) | (0x2000 if more else 0) | (offset // 8)
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total, ident, flags, ttl, proto, 0, address(src), address(dst)) + options
    return header[:10] + struct.pack("!H", internet_checksum(header)) + header[12:] + payload


def fragment_sizes(length: int, count: int) -> list[int]:
    """Split `length` bytes into `count` pieces, each but the last a multiple of 8 (as IP fragments must be)."""
    step = max(8, (length // count) // 8 * 8)
    sizes: list[int] = []
    while length > 0 and len(sizes) < count - 1:
        sizes.append(min(step, length))
        length -= sizes[-1]
    if length > 0:
        sizes.append(length)
    return sizes


def ipv4_fragments(src: str, dst: str, payload: bytes, count: int, proto: int = TCP, ident: int = 1) -> list[bytes]:
    """The IPv4 fragments of one datagram, in order."""
    out, at = [], 0
    sizes = fragment_sizes(len(payload), count)
    for i, size in enumerate(sizes):
        out.append(ipv4(src, dst, payload[at : at + size], proto, ident, offset=at, more=i < len(sizes) - 1))
        at += size
    return out


def extension(kind: int, next_header: int, units: int = 0) -> bytes:
    """One IPv6 extension header of `kind`, zero-filled (Pad1 options, routing with no segments left).

    `units` adds 8-octet units beyond the minimum, to exercise the length arithmetic.
    """
    if kind == AH:  # length in 4-octet units minus 2; 12 fixed bytes and a 12-byte ICV minimum
        size = 24 + 8 * units
        return bytes([next_header, size // 4 - 2]) + b"\0" * (size - 2)
    if kind == FRAGMENT:
        return bytes([next_header, 0]) + b"\0" * 6
    return bytes([next_header, units]) + b"\0" * (6 + 8 * units)


def ipv6(
    src: str,
    dst: str,
    payload: bytes,
    proto: int = TCP,
    extensions: Sequence[int | tuple[int, int]] = (),
    payload_length: int | None = None,
    hop_limit: int = 64,
) -> bytes:
    """An IPv6 packet with extension headers in the order given: each a kind, or (kind, extra 8-octet units)."""
    chain = [(e, 0) if isinstance(e, int) else e for e in extensions]
    headers = b""
    for i, (kind, units) in enumerate(chain):
        following = chain[i + 1][0] if i + 1 < len(chain) else proto
        headers += extension(kind, following, units)
    first = chain[0][0] if chain else proto
    length = len(headers) + len(payload) if payload_length is None else payload_length
    return struct.pack("!IHBB16s16s", 0x60000000, length, first, hop_limit, address(src), address(dst)) + headers + payload


def ipv6_fragments(
    src: str,
    dst: str,
    payload: bytes,
    count: int,
    proto: int = TCP,
    ident: int = 1,
    before: Sequence[int] = (),
    after: Sequence[int] = (),
) -> list[bytes]:
    """The IPv6 fragments of one packet: `before` are the unfragmentable extension headers repeated in every
    fragment, `after` the extension headers that belong to the fragmented part (as RFC 8200 puts them)."""
    inner = b""
    for i, kind in enumerate(after):
        inner += extension(kind, after[i + 1] if i + 1 < len(after) else proto)
    inner += payload
    first_inner = after[0] if after else proto
    out, at = [], 0
    sizes = fragment_sizes(len(inner), count)
    for i, size in enumerate(sizes):
        more = i < len(sizes) - 1
        fragment = struct.pack("!BBHI", first_inner, 0, at | more, ident)
        out.append(ipv6(src, dst, fragment + inner[at : at + size], FRAGMENT, before))
        at += size
    return out


# -- TCP ----------------------------------------------------------------------------------------------------------


def tcp(
    src: str,
    dst: str,
    sport: int,
    dport: int,
    seq: int,
    ack: int,
    flags: int,
    payload: bytes = b"",
    options: bytes = b"",
    window: int = 65535,
) -> bytes:
    """A TCP segment with its checksum over the IPv4 or IPv6 pseudo-header of `src` and `dst`."""
    options += b"\0" * (-len(options) % 4)
    header = struct.pack("!HHIIHHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (5 + len(options) // 4) << 12 | flags, window, 0, 0)
    segment = header + options + payload
    return segment[:16] + struct.pack("!H", tcp_checksum(address(src), address(dst), segment)) + segment[18:]


def ip(src: str, dst: str, payload: bytes, **options: Any) -> bytes:
    """IPv4 or IPv6, whichever the addresses are."""
    return ipv6(src, dst, payload, **options) if ":" in src else ipv4(src, dst, payload, **options)


# -- packets and conversations -----------------------------------------------------------------------------------


class Clock:
    """Timestamps and packet numbers shared by the conversations of one capture."""

    def __init__(self, ts: int = 1_700_000_000_000_000_000, step: int = 1000) -> None:
        self.ts = ts
        self.step = step
        self.index = 0

    def tick(self) -> tuple[int, int]:
        self.ts += self.step
        self.index += 1
        return self.ts, self.index


def packet(linktype: int, data: bytes, clock: Clock, orig_len: int | None = None) -> Packet:
    ts, index = clock.tick()
    return Packet(ts, linktype, data, len(data) if orig_len is None else orig_len, index)


def truncated(p: Packet, snaplen: int) -> Packet:
    """The packet as a capture with this snapshot length holds it."""
    return p._replace(data=p.data[:snaplen])


class Conversation:
    """A TCP connection between a client and a server that keeps each side's sequence numbers.

    Every method returns the packets it made, in order; `CLIENT` and `SERVER` name the sides. Acknowledgement
    numbers acknowledge everything the peer has sent so far.
    """

    def __init__(
        self,
        client: str = "10.0.0.1",
        server: str = "10.0.0.2",
        client_port: int = 40000,
        server_port: int = 9092,
        client_isn: int = 1000,
        server_isn: int = 5000,
        linktype: int = LINKTYPE_ETHERNET,
        clock: Clock | None = None,
        vlans: Sequence[int] = (),
    ) -> None:
        self.ends = ((client, client_port), (server, server_port))
        self.next = [client_isn & 0xFFFFFFFF, server_isn & 0xFFFFFFFF]
        """Each side's next sequence number."""
        self.linktype = linktype
        self.clock = clock or Clock()
        self.vlans = vlans

    def tcp(self, side: int, flags: int, payload: bytes = b"", seq: int | None = None, ack: int | None = None) -> bytes:
        """A segment's bytes from `side`; seq and ack default to the tracked ones, and nothing advances."""
        (src, sport), (dst, dport) = self.ends[side], self.ends[1 - side]
        seq = self.next[side] if seq is None else seq
        ack = self.next[1 - side] if ack is None else ack
        return tcp(src, dst, sport, dport, seq, ack if flags & ACK else 0, flags, payload)

    def wrap(self, side: int, ip_payload: bytes, **ip_options: Any) -> bytes:
        src, dst = self.ends[side][0], self.ends[1 - side][0]
        return frame(self.linktype, ip(src, dst, ip_payload, **ip_options), self.vlans)

    def segment(
        self, side: int, payload: bytes = b"", flags: int = ACK | PSH, seq: int | None = None, ack: int | None = None, **ip_options: Any
    ) -> Packet:
        """One packet from `side`. Without an explicit `seq` the side's sequence number advances past it."""
        if seq is None:
            seq = self.next[side]
            self.next[side] = (seq + len(payload) + bool(flags & SYN) + bool(flags & FIN)) & 0xFFFFFFFF
        data = self.wrap(side, self.tcp(side, flags, payload, seq, ack), **ip_options)
        return packet(self.linktype, data, self.clock)

    def handshake(self) -> list[Packet]:
        return [self.segment(CLIENT, flags=SYN), self.segment(SERVER, flags=SYN | ACK), self.segment(CLIENT, flags=ACK)]

    def send(self, side: int, data: bytes, sizes: int | Sequence[int] = 1460) -> list[Packet]:
        """`data` from `side` in segments of `sizes` bytes (one size, or a list; the last one repeats)."""
        out, at, i = [], 0, 0
        while at < len(data):
            size = sizes if isinstance(sizes, int) else sizes[min(i, len(sizes) - 1)]
            out.append(self.segment(side, data[at : at + size]))
            at += size
            i += 1
        return out

    def ack(self, side: int) -> Packet:
        """A pure ACK from `side` of everything the peer sent."""
        return self.segment(side, flags=ACK)

    def fin(self, side: int) -> Packet:
        return self.segment(side, flags=FIN | ACK)

    def rst(self, side: int) -> Packet:
        return self.segment(side, flags=RST | ACK)

    def close(self) -> list[Packet]:
        """The usual four-way close started by the client."""
        return [self.fin(CLIENT), self.fin(SERVER), self.ack(CLIENT)]

    def fragmented(
        self, side: int, payload: bytes, count: int, ident: int = 1, before: Sequence[int] = (), after: Sequence[int] = ()
    ) -> list[Packet]:
        """A data segment from `side` sent as `count` IP fragments, in order; the sequence number advances."""
        seq = self.next[side]
        self.next[side] = (seq + len(payload)) & 0xFFFFFFFF
        segment = self.tcp(side, ACK | PSH, payload, seq)
        src, dst = self.ends[side][0], self.ends[1 - side][0]
        if ":" in src:
            pieces = ipv6_fragments(src, dst, segment, count, ident=ident, before=before, after=after)
        else:
            pieces = ipv4_fragments(src, dst, segment, count, ident=ident)
        return [packet(self.linktype, frame(self.linktype, piece, self.vlans), self.clock) for piece in pieces]


# -- Kafka ----------------------------------------------------------------------------------------------------------


def tagged_fields(fields: Sequence[tuple[int, bytes]]) -> bytes:
    return write_uvarint(len(fields)) + b"".join(write_uvarint(tag) + write_uvarint(len(data)) + data for tag, data in fields)


def request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    body: bytes = b"",
    client_id: str | None = "craft",
    header_version: int | None = None,
    tagged: Sequence[tuple[int, bytes]] = (),
    catalog: Catalog = BUILTIN,
) -> bytes:
    """A request frame, size prefix included. The header version follows the API's in `catalog` unless given."""
    if header_version is None:
        header_version = catalog.request_header_version(api_key, api_version)
    header = struct.pack("!hhi", api_key, api_version, correlation_id)
    if header_version >= 1:
        if client_id is None:
            header += struct.pack("!h", -1)
        else:
            encoded = client_id.encode()
            header += struct.pack("!h", len(encoded)) + encoded
    if header_version >= 2:
        header += tagged_fields(tagged)
    return struct.pack("!i", len(header) + len(body)) + header + body


def response(correlation_id: int, body: bytes = b"", header_version: int = 0, tagged: Sequence[tuple[int, bytes]] = ()) -> bytes:
    """A response frame, size prefix included; header v1 adds tagged fields."""
    header = struct.pack("!i", correlation_id)
    if header_version >= 1:
        header += tagged_fields(tagged)
    return struct.pack("!i", len(header) + len(body)) + header + body


# -- copies of real conversations ------------------------------------------------------------------------------


def conversation_copy(packets: Sequence[Packet], k: int, broker: bytes, start: int, t0: int, broker_port: int = 9092) -> Iterator[Packet]:
    """The Ethernet/IPv4 packets of a capture as its copy `k`: client address 10.(100+k>>16).(k>>8).k, broker
    `broker`, times moved from `start` to `t0`; many copies make a large capture of distinct connections."""
    client = bytes([10, 100 + (k >> 16 & 0x3F), k >> 8 & 0xFF, k & 0xFF])
    for p in packets:
        data = bytearray(p.data)
        if len(data) >= 38 and data[12:14] == b"\x08\x00" and data[14] >> 4 == 4:
            sport = struct.unpack_from("!H", data, 34)[0]
            if sport == broker_port:
                data[26:30], data[30:34] = broker, client
            else:
                data[26:30], data[30:34] = client, broker
        yield p._replace(ts=p.ts - start + t0, data=bytes(data))
