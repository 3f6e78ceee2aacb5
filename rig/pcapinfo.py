"""A small, independent reader of the rig's captures, used to check them.

It is deliberately naive and separate from ``kdissect``: it reads classic pcap
files (Ethernet, Linux cooked v1/v2), IPv4 + TCP, reassembles each direction of
each connection by sequence number, cuts Kafka frames by their size prefix and
reads only the request header (api key, version, correlation id, client id) and
the response's correlation id. That is enough to check that a capture is whole
(no sequence gaps, every request answered) and to list the API versions seen.

    python -m rig.pcapinfo captures/*.pcap
"""

from __future__ import annotations

import struct
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterator

LINKTYPE_ETHERNET = 1
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276
LINK_NAMES = {LINKTYPE_ETHERNET: "EN10MB", LINKTYPE_LINUX_SLL: "LINUX_SLL", LINKTYPE_LINUX_SLL2: "LINUX_SLL2"}


def api_name(key: int) -> str:
    try:
        from kafka.protocol.api_key import ApiKey  # kafka-python 3 knows all names

        return ApiKey(key).name
    except Exception:
        return f"api{key}"


@dataclass
class Packet:
    ts: float
    src: tuple
    dst: tuple
    seq: int
    flags: int
    payload: bytes
    wire_len: int


@dataclass
class PcapFile:
    linktype: int
    snaplen: int
    nano: bool
    packets: list


def read_pcap(path: str) -> PcapFile:
    """Parse a classic pcap file into TCP/IPv4 packets (others are skipped)."""
    with open(path, "rb") as src:
        data = src.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap file")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    _, _, _, _, snaplen, linktype = struct.unpack(endian + "HHiIII", data[4:24])
    linktype &= 0xFFFF
    packets = []
    pos = 24
    while pos + 16 <= len(data):
        sec, frac, caplen, wire_len = struct.unpack(endian + "IIII", data[pos : pos + 16])
        frame = data[pos + 16 : pos + 16 + caplen]
        pos += 16 + caplen
        ts = sec + frac / (1e9 if nano else 1e6)
        packet = _parse_frame(linktype, frame, ts, wire_len)
        if packet is not None:
            packets.append(packet)
    return PcapFile(linktype, snaplen, nano, packets)


def _parse_frame(linktype: int, frame: bytes, ts: float, wire_len: int):
    if linktype == LINKTYPE_ETHERNET:
        ethertype, off = struct.unpack("!H", frame[12:14])[0], 14
        while ethertype == 0x8100:  # VLAN tags
            ethertype, off = struct.unpack("!H", frame[off + 2 : off + 4])[0], off + 4
    elif linktype == LINKTYPE_LINUX_SLL:
        ethertype, off = struct.unpack("!H", frame[14:16])[0], 16
    elif linktype == LINKTYPE_LINUX_SLL2:
        ethertype, off = struct.unpack("!H", frame[0:2])[0], 20
    else:
        return None
    if ethertype != 0x0800:
        return None
    ip = frame[off:]
    ihl = (ip[0] & 0x0F) * 4
    total = struct.unpack("!H", ip[2:4])[0]
    if ip[9] != 6:
        return None
    src_ip, dst_ip = ip[12:16], ip[16:20]
    tcp = ip[ihl:total]
    sport, dport, seq = struct.unpack("!HHI", tcp[:8])
    data_off = (tcp[12] >> 4) * 4
    flags = tcp[13]
    return Packet(ts, (_ip(src_ip), sport), (_ip(dst_ip), dport), seq, flags, bytes(tcp[data_off:]), wire_len)


def _ip(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)


@dataclass
class Stream:
    """One direction of one TCP connection, reassembled."""

    src: tuple
    dst: tuple
    data: bytes = b""
    gaps: int = 0
    segments: list = field(default_factory=list)  # (stream offset, length) of each data segment
    syn_seen: bool = False


def reassemble(packets: list) -> dict:
    """Return {(src, dst): Stream}, in-order bytes per direction."""
    by_dir: dict = defaultdict(list)
    isn: dict = {}
    for p in packets:
        key = (p.src, p.dst)
        if p.flags & 0x02:  # SYN
            isn[key] = p.seq + 1
        if p.payload:
            by_dir[key].append(p)
    streams = {}
    for key in set(by_dir) | set(isn):
        stream = Stream(*key, syn_seen=key in isn)
        segs = by_dir.get(key, [])
        base = isn.get(key, segs[0].seq if segs else 0)
        # Relative sequence numbers (mod 2**32), then in order; retransmissions collapse.
        rel = sorted(((p.seq - base) % 2**32, p.payload) for p in segs)
        out = bytearray()
        for off, payload in rel:
            end = off + len(payload)
            if off > len(out):
                stream.gaps += 1
                out.extend(b"\0" * (off - len(out)))
            if end > len(out):
                out.extend(payload[len(out) - off :])
            stream.segments.append((off, len(payload)))
        stream.data = bytes(out)
        streams[key] = stream
    return streams


@dataclass
class Frame:
    offset: int
    size: int
    body: bytes
    segments: int  # how many TCP segments carried part of this frame


def frames(stream: Stream) -> Iterator[Frame]:
    pos = 0
    data = stream.data
    while pos + 4 <= len(data):
        size = struct.unpack("!i", data[pos : pos + 4])[0]
        if size < 0 or pos + 4 + size > len(data):
            break
        start, end = pos, pos + 4 + size
        segs = sum(1 for off, ln in stream.segments if off < end and off + ln > start)
        yield Frame(pos, size, data[pos + 4 : end], segs)
        pos = end


CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def batch_codecs(data: bytes, legacy: bool = True) -> Counter:
    """Count record batches (magic 2) and legacy messages (magic 0/1) by codec.

    A heuristic scan, good enough to check a capture: a candidate counts only if
    its CRC (CRC-32C for v2, CRC-32 for v0/v1) matches. Keys are like "v2 zstd".
    """
    import zlib

    try:
        from crc32c import crc32c
    except ImportError:  # without it, v2 batches are recognized by shape only
        crc32c = None
    found: Counter = Counter()
    n = len(data)
    pos = data.find(b"\x02", 16)
    while 0 <= pos < n:
        start = pos - 16
        if start >= 0 and pos + 7 <= n:
            length = struct.unpack("!i", data[start + 8 : start + 12])[0]
            end = start + 12 + length
            if 49 <= length and end <= n:
                crc = struct.unpack("!I", data[pos + 1 : pos + 5])[0]
                if crc32c is None or crc32c(data[pos + 5 : end]) == crc:
                    attrs = struct.unpack("!h", data[pos + 5 : pos + 7])[0]
                    tag = "v2 " + CODEC_NAMES.get(attrs & 7, str(attrs & 7))
                    if attrs & 0x10:
                        tag += " transactional"
                    if attrs & 0x20:
                        tag += " control"
                    found[tag] += 1
        pos = data.find(b"\x02", pos + 1)
    if legacy and n <= 1_000_000:
        for pos in range(16, n - 2):
            magic = data[pos]
            if magic > 1:
                continue
            start = pos - 16
            size = struct.unpack("!i", data[start + 8 : start + 12])[0]
            end = start + 12 + size
            if size < 14 or end > n:
                continue
            crc = struct.unpack("!I", data[start + 12 : start + 16])[0]
            if zlib.crc32(data[pos:end]) == crc:
                found[f"v{magic} " + CODEC_NAMES.get(data[pos + 1] & 7, "?")] += 1
    return found


@dataclass
class Summary:
    path: str
    linktype: str
    nano: bool
    packets: int
    bytes: int
    connections: int
    gaps: int
    requests: Counter  # (api_key, api_version) -> count
    responses: int
    unanswered: list  # (api_key, api_version, correlation_id): lost replies
    unanswered_at_close: list  # the same, but cut off by the connection closing
    max_frame: int
    max_segments_per_frame: int
    client_ids: set
    request_stream: bytes
    response_stream: bytes
    mtu_max_packet: int
    exchanges: list  # [api_key, api_version, request body, response body or None], requests in stream order

    def bodies(self, api_key: int) -> Iterator[tuple[int, bytes, bytes | None]]:
        """(version, request, response) of every request of one API, the frames' bodies after the size."""
        for key, version, request, response in self.exchanges:
            if key == api_key:
                yield version, request, response

    def codecs(self) -> Counter:
        """Batches/messages by codec, requests and responses together (Produce and Fetch)."""
        return batch_codecs(self.request_stream) + batch_codecs(self.response_stream)

    def api_table(self) -> str:
        """E.g. ``ApiVersions(18) v3; Metadata(3) v12; Produce(0) v10 x5``."""
        keys = defaultdict(list)
        for (key, version), n in sorted(self.requests.items()):
            keys[key].append(f"v{version}" + (f"x{n}" if n > 1 else ""))
        return "; ".join(f"{api_name(k)}({k}) {','.join(v)}" for k, v in sorted(keys.items()))


def summarize(path: str, port: int | None = None) -> Summary:
    """Read *path* and pair requests with responses on the broker *port*.

    Without *port*, the side that received the first SYN (or the lower port)
    is taken to be the broker.
    """
    pcap = read_pcap(path)
    streams = reassemble(pcap.packets)
    if port is None:
        syns = [p.dst[1] for p in pcap.packets if p.flags & 0x12 == 0x02]
        port = Counter(syns).most_common(1)[0][0] if syns else 9092
    requests: Counter = Counter()
    pending: dict = {}  # (client address, correlation id) -> (key, version, corr, index on conn, exchange)
    exchanges: list = []
    order: dict = defaultdict(list)  # client address -> request correlation ids in order
    answered_upto: dict = {}  # client address -> index of the last answered request
    responses = 0
    max_frame = 0
    max_segs = 0
    client_ids = set()
    gaps = 0
    req_bytes, resp_bytes = bytearray(), bytearray()
    conns = set()
    closed = {p.src for p in pcap.packets if p.flags & 0x05} | {p.dst for p in pcap.packets if p.flags & 0x05}
    ordered = sorted(streams.items())
    for (src, dst), stream in ordered:  # requests first, so responses find them
        gaps += stream.gaps
        if dst[1] != port:
            continue
        conns.add((src, dst))
        req_bytes += stream.data
        for fr in frames(stream):
            key, version, corr = struct.unpack("!hhi", fr.body[:8])
            requests[(key, version)] += 1
            exchanges.append([key, version, fr.body, None])
            pending[(src, corr)] = (key, version, corr, len(order[src]), exchanges[-1])
            order[src].append(corr)
            clen = struct.unpack("!h", fr.body[8:10])[0]
            if clen >= 0:
                client_ids.add(fr.body[10 : 10 + clen].decode("utf-8", "replace"))
            max_frame = max(max_frame, fr.size)
            max_segs = max(max_segs, fr.segments)
    for (src, dst), stream in ordered:
        if src[1] != port:
            continue
        resp_bytes += stream.data
        for fr in frames(stream):
            corr = struct.unpack("!i", fr.body[:4])[0]
            found = pending.pop((dst, corr), None)
            if found is not None:
                responses += 1
                answered_upto[dst] = max(answered_upto.get(dst, -1), found[3])
                found[4][3] = fr.body
            max_frame = max(max_frame, fr.size)
            max_segs = max(max_segs, fr.segments)
    # Kafka answers in order on a connection. Requests after the last answered one, on a
    # connection that was then closed (FIN/RST), were cut off by the close: the client gave
    # up (a long-poll Fetch at shutdown) or the broker hung up. Anything else is a loss.
    unanswered, at_close = [], []
    for (client, _corr), (key, version, corr, index, _exchange) in sorted(pending.items(), key=lambda item: item[0]):
        if client in closed and index > answered_upto.get(client, -1):
            at_close.append((key, version, corr))
        else:
            unanswered.append((key, version, corr))
    return Summary(
        path=path,
        linktype=LINK_NAMES.get(pcap.linktype, str(pcap.linktype)),
        nano=pcap.nano,
        packets=len(pcap.packets),
        bytes=sum(len(p.payload) for p in pcap.packets),
        connections=len(conns),
        gaps=gaps,
        requests=requests,
        responses=responses,
        unanswered=sorted(unanswered),
        unanswered_at_close=sorted(at_close),
        max_frame=max_frame,
        max_segments_per_frame=max_segs,
        client_ids=client_ids,
        request_stream=bytes(req_bytes),
        response_stream=bytes(resp_bytes),
        mtu_max_packet=max((p.wire_len for p in pcap.packets), default=0),
        exchanges=exchanges,
    )


def main(argv: list[str]) -> int:
    for path in argv:
        s = summarize(path)
        print(
            f"{path}: {s.linktype}{' nano' if s.nano else ''}, {s.packets} packets, "
            f"{s.connections} connections, {sum(s.requests.values())} requests, "
            f"{s.responses} responses, {len(s.unanswered)} unanswered "
            f"(+{len(s.unanswered_at_close)} cut off by a close), {s.gaps} gaps, "
            f"largest frame {s.max_frame} B over up to {s.max_segments_per_frame} segments, "
            f"largest packet {s.mtu_max_packet} B"
        )
        print("  " + s.api_table())
        print("  batches: " + ", ".join(f"{k} x{n}" for k, n in sorted(s.codecs().items())))
        for label, items in (("unanswered", s.unanswered), ("cut off by a close", s.unanswered_at_close)):
            if items:
                print(f"  {label}: " + ", ".join(f"{api_name(k)} v{v} corr {c}" for k, v, c in items))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
