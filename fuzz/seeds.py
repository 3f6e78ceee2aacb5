"""Seed corpora for every harness, derived from the project's captures and its encoders.

`python -m fuzz.seeds [--out fuzz/corpus]` writes one folder per harness. The corpus is generated, not
committed: it is a few hundred small files, rebuilt in seconds, and `fuzz.run` builds it when it is missing.
Inputs that once broke kdissect are committed in `fuzz/regressions/<harness>/` and are seeds too.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import struct
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Iterator

import lz4.frame
import zstandard

from kdissect.capture.packet import Packet
from kdissect.capture.pcapng import EPB
from kdissect.capture.source import open_capture
from kdissect.capture.writer import PcapngWriter, PcapWriter
from kdissect.decode.decoder import Decoder
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.net.segments import SegmentDecoder
from kdissect.records.codecs import GZIP
from kdissect.records.encode import Draft, compress, encode_batch, encode_message
from kdissect.schema import BUILTIN
from kdissect.testing import damage, rfc8448
from kdissect.testing import record_encoder as records_encode
from kdissect.testing.record_encoder import encode_message_set

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = sorted((ROOT / "captures").glob("*.pcap")) + sorted(p for p in (ROOT.parent / "shared" / "captures-public").glob("*.pcap*"))
HARNESSES = (
    "pcap_reader",
    "reassembly",
    "framing",
    "tls_records",
    "tls_keyed",
    "message_decoder",
    "records",
    "dissect",
    "filter_language",
    "spec_reader",
)
SPECS = ROOT.parent / "shared" / "kafka-message-specs"
DRAFTS = ROOT.parent / "shared" / "kafka-draft-specs"
REGRESSIONS = Path(__file__).resolve().parent / "regressions"
MAX_SEED = 32 << 10
"""Larger seeds slow every execution that mutates them; a few KiB reach the same code."""


def _read(path: Path) -> tuple[int, list[Packet]]:
    with open_capture(path) as capture:
        packets = list(capture.packets())
        return (capture.linktypes() or [1])[0], packets


def _pcap(packets: Iterable[Packet], linktype: int, **options) -> bytes:
    out = io.BytesIO()
    PcapWriter(out, linktype, **options).write_all(packets)
    return out.getvalue()


def _connections(packets: list[Packet]) -> list[list[Packet]]:
    """The capture's packets split by TCP connection (either direction), in capture order."""
    decoder = SegmentDecoder(1 << 20)
    flows: dict[tuple, list[Packet]] = defaultdict(list)
    for packet in packets:
        try:
            segment = decoder.decode(packet)
        except Exception:
            continue
        if segment is not None:
            ends = sorted([(segment.src, segment.sport), (segment.dst, segment.dport)])
            flows[tuple(ends)].append(packet)
    return list(flows.values())


def capture_seeds() -> Iterator[bytes]:
    """Whole small captures, each connection of the real ones as a capture of its own, and container variants."""
    for path in CAPTURES:
        linktype, packets = _read(path)
        whole = _pcap(packets, linktype)
        if len(whole) <= MAX_SEED:
            yield whole
        for connection in _connections(packets):
            data = _pcap(connection, linktype)
            yield data[:MAX_SEED]
    linktype, packets = _read(ROOT / "captures" / "kcat-debian-librdkafka.pcap")
    whole = _pcap(packets, linktype)
    third = 24 + sum(16 + len(p.data) for p in packets[:3])
    yield whole[: third + 8] + (0x7FFFFFF0).to_bytes(4, "little") + whole[third + 12 :]  # a corrupt record header: resync
    yield whole[:third] + whole[third + 8 :]  # half a record header cut out: resync
    for position in range(6, min(len(packets), 30), 6):  # a segment dropped or captured late: salvage and patience
        yield _pcap(damage.drop(packets, position), linktype)
        yield _pcap(damage.delay(packets, position, 4), linktype)
    plain = _pcap(packets, linktype, nanosecond=True, big_endian=True)
    yield plain
    yield gzip.compress(plain)
    yield zstandard.ZstdCompressor().compress(plain)
    yield lz4.frame.compress(plain)
    out = io.BytesIO()
    writer = PcapngWriter(out)
    writer.interface(linktype, tsresol=9)
    for packet in packets[:10]:
        writer.packet(packet, 0, EPB)
    writer.block(0x0BAD1DEA, b"\0" * 8)
    yield out.getvalue()


def _ops_from_connection(packets: list[Packet], lost: int | None = None) -> bytes:
    """A real connection in the framing harness's language: header byte, then (side, gap, length, payload) operations.
    The segment at position `lost`, if given, becomes a hole (all of it but its length modulo 16)."""
    decoder = SegmentDecoder(1 << 20)
    out = bytearray(b"\x02")
    client = None
    gap = 0
    for position, packet in enumerate(packets):
        segment = decoder.decode(packet)
        if segment is None or not segment.payload:
            continue
        if client is None:
            client = (segment.src, segment.sport)
        side = 0 if (segment.src, segment.sport) == client else 1
        payload = segment.payload
        if position == lost:
            gap = min(len(payload) // 16, 255)
            payload = payload[: len(payload) - gap * 16]
            if not payload:
                continue
        for at in range(0, len(payload), 4095):
            chunk = payload[at : at + 4095]
            out += bytes((side | (16 if gap else 0), gap)) + len(chunk).to_bytes(2, "big") + chunk
            gap = 0
        if len(out) > MAX_SEED:
            break
    return bytes(out)


def framing_seeds() -> Iterator[bytes]:
    for path in CAPTURES:
        _, packets = _read(path)
        for connection in _connections(packets):
            yield _ops_from_connection(connection)
            data = damage.data_segments(connection)
            if len(data) > 4:  # a segment lost inside the connection: a hole, often inside a frame
                yield _ops_from_connection(connection, data[len(data) // 2].position)


def reassembly_seeds() -> Iterator[bytes]:
    """Operation lists for the reassembly harness: 7 bytes each (options, ack delta, offset delta, length)."""
    op = struct.Struct(">BBhH").pack
    for isn in (1000, 0xFFFFF000):
        head = isn.to_bytes(4, "big") + b"\x01"
        in_order = op(1, 0, 0, 0) + b"".join(op(0, 0, 100 if i else 1, 100) for i in range(20))
        yield head + in_order
        yield head + op(1, 0, 0, 0) + b"".join(op(0, 0, 100, 100) for _ in range(5)) + op(0, 0, -300, 100) + op(128, 200, 0, 100)
        yield head + op(0, 0, 500, 100) + op(0, 0, -500, 500) + op(2, 0, 600, 0)
        yield head + b"".join(op(8 if i == 3 else 0, 0, 50, 100) for i in range(10)) + op(4, 0, 0, 0)
        yield head + op(16, 0, 0, 1400) + op(64, 1, 1400, 100) + op(0, 0, 100, 100)


def tls_seeds() -> Iterator[bytes]:
    """RFC 8448's server records for a keyed session, whole, cut and with a gap; each direction of the rig's TLS
    connections for the bare record reader, whole and cut mid-record."""
    op = struct.Struct(">BH").pack
    server = rfc8448.SERVER_FLIGHT + rfc8448.TICKET + rfc8448.SERVER_DATA
    yield b"\x02\x00" + server
    yield b"\x02\x03" + op(0, 100) + op(0, 600) + op(0, 5) + server
    yield b"\x02\x02" + op(0, len(rfc8448.SERVER_FLIGHT)) + op(1, 40) + server
    yield b"\x03\x00" + rfc8448.TICKET[7:] + rfc8448.SERVER_DATA
    for path in sorted((ROOT / "captures").glob("tls*.pcap")):
        _, packets = _read(path)
        for connection in _connections(packets)[:2]:
            decoder = SegmentDecoder(1 << 20)
            streams: dict[tuple, bytearray] = defaultdict(bytearray)
            for packet in connection:
                segment = decoder.decode(packet)
                if segment is not None:
                    streams[(segment.src, segment.sport)] += segment.payload
            for stream in streams.values():
                yield b"\x00\x00" + bytes(stream[:MAX_SEED])
                yield b"\x00\x02" + op(0, 300) + op(1, 200) + bytes(stream[:MAX_SEED])


def tls_keyed_seeds() -> Iterator[bytes]:
    """Each side of each keyed connection from its ChangeCipherSpec on, whole and cut into chunks with a gap."""
    from fuzz.tls_keyed import connections

    op = struct.Struct(">BH").pack
    for number, connection in enumerate(connections()):
        for side, rest in enumerate(connection.rests):
            flags = bytes([number | side << 4])
            yield flags + b"\x00" + rest[:MAX_SEED]
            yield flags + b"\x03" + op(0, 100) + op(1, 40) + op(0, 7) + rest[:MAX_SEED]


def _exchanges(path: Path, decoder: Decoder | None = None) -> list[Exchange]:
    with open_capture(path) as capture:
        dissector = make_dissector(Options())
        if decoder is not None:
            dissector._shared.decoder = decoder
        return [e for e in dissector.run(capture.packets()) if isinstance(e, Exchange)]


def message_seeds() -> Iterator[bytes]:
    """Request and response bodies from the captures, a few for each API key, version and direction."""
    seen: dict[tuple[int, int, int], int] = defaultdict(int)
    for path in CAPTURES:
        for exchange in _exchanges(path):
            header = exchange.request_header
            if header is None:
                continue
            for direction, message in enumerate((exchange.request, exchange.response)):
                if message is None or message.header is None:
                    continue
                key = (header.api_key, header.api_version, direction)
                if seen[key] >= 3:
                    continue
                seen[key] += 1
                body = message.frame.data[message.header.length :]
                yield bytes((direction,)) + struct.pack(">hh", header.api_key, header.api_version) + body[:MAX_SEED]


class _Grab(Decoder):
    """A decoder that keeps the raw bytes of every records field it meets."""

    def __init__(self) -> None:
        super().__init__(BUILTIN)
        self.blobs: list[bytes] = []

    def _records(self, buf, start, end):
        self.blobs.append(bytes(buf[start:end]))
        return super()._records(buf, start, end)


def records_seeds() -> Iterator[bytes]:
    """Every distinct records field in the captures, and encoder-made batches and message sets of every kind."""
    grab = _Grab()
    for path in CAPTURES:
        _exchanges(path, grab)
    yield from (blob[:MAX_SEED] for blob in grab.blobs if blob)
    drafts = [Draft(b"key", b"value", (("h", b"v"),), 1000), Draft(None, None), Draft(b"", b"x" * 200, (), 2000)]
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        yield encode_batch(drafts, codec=codec)
        for magic in (0, 1):
            yield encode_message_set(drafts, magic=magic, codec=codec)
    yield encode_batch([records_encode.end_txn_marker(True, 5)], control=True, transactional=True)
    yield encode_batch(drafts, codec="lz4", legacy_lz4=True)
    nested = encode_message(0, magic=1, value=b"v")
    for _ in range(5):
        nested = encode_message(0, magic=1, value=compress(GZIP, nested), attributes=GZIP)
    yield nested


def filter_seeds() -> Iterator[bytes]:
    """The docs' and tests' expressions as text (even first byte), and steering bytes for the grammar (odd)."""
    expressions = [
        "api == Fetch and latency_ms > 100",
        "error and broker.port == 9092",
        'request.TopicData.PartitionData.Records.records.key == ff:00:fe:80:81:7f and client_id matches "(gzip|zstd)$"',
        "request.TopicData.PartitionData.Records.batches.codec in {lz4, zstd}",
        "count(response.Responses.Partitions.Records.records) > 100",
        'time >= "2026-11-21T13:34:02Z" and not status == ok',
        "all(response.Responses.PartitionResponses.ErrorCode == 0) or version in {0..3, 7}",
        "(" * 70 + "api" + ")" * 70,
        "not " * 70 + "api",
        "correlation_id == " + "9" * 40,
    ]
    yield from (b"\0" + text.encode() for text in expressions)
    for seed in range(16):
        yield bytes([1]) + bytes((seed * 37 + i * 11) % 256 for i in range(64))


def spec_seeds() -> Iterator[bytes]:
    """Kafka's own specs and the draft specs, each request beside its response, NUL between them."""
    for folder in (SPECS, DRAFTS):
        for request in sorted(folder.glob("*Request.json"))[:40] if folder.is_dir() else ():
            response = request.with_name(request.name.replace("Request.json", "Response.json"))
            if response.is_file():
                yield (request.read_bytes() + b"\0" + response.read_bytes())[:MAX_SEED]
    empty = {"name": "C", "type": "[]D", "versions": "0+", "fields": []}  # an empty struct inside two arrays
    fields = [{"name": "A", "type": "[]B", "versions": "0+", "fields": [empty]}]
    head = {"apiKey": 1, "validVersions": "0", "flexibleVersions": "none"}
    request = json.dumps({**head, "type": "request", "name": "XRequest", "fields": fields})
    yield (request + "\0" + json.dumps({**head, "type": "response", "name": "XResponse", "fields": []})).encode()


SOURCES = {
    "pcap_reader": capture_seeds,
    "dissect": capture_seeds,
    "reassembly": reassembly_seeds,
    "framing": framing_seeds,
    "tls_records": tls_seeds,
    "tls_keyed": tls_keyed_seeds,
    "message_decoder": message_seeds,
    "records": records_seeds,
    "filter_language": filter_seeds,
    "spec_reader": spec_seeds,
}


def build(out: Path, harnesses: Iterable[str] = HARNESSES) -> dict[str, int]:
    """Write each harness's seeds (and its committed regressions) to out/<harness>/; returns the counts."""
    counts = {}
    for name in harnesses:
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        seeds = list(SOURCES[name]())
        regressions = REGRESSIONS / name
        if regressions.is_dir():
            seeds += [p.read_bytes() for p in sorted(regressions.iterdir()) if p.is_file()]
        for seed in seeds:
            (folder / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        counts[name] = len({hashlib.sha1(s).digest() for s in seeds})
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "corpus")
    parser.add_argument("harness", nargs="*", help=f"some of {', '.join(HARNESSES)} (default: all)")
    args = parser.parse_args()
    unknown = set(args.harness) - set(HARNESSES)
    if unknown:
        parser.error(f"no harness named {', '.join(sorted(unknown))}")
    for name, count in build(args.out, args.harness or HARNESSES).items():
        print(f"{name}: {count} seeds in {args.out / name}")


if __name__ == "__main__":
    main()
