"""Capture containers: pcap and pcapng in all their variants, compression, truncation, and files that are not
captures at all. Built in memory with `capture.craft` and `capture.writer`, so every expected value is known.
Then byte ranges: finding a record from any offset (on every capture here and in ../shared/captures-public), and
reading ranges alone, which must give exactly what reading the file whole gives."""

from __future__ import annotations

import dataclasses
import glob
import gzip
import io
import os
import struct

import lz4.frame
import pytest
import zstandard

from kdissect.capture import CaptureError, CaptureFile, Packet, open_capture, ranges, sync
from kdissect.capture.linktypes import LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_RAW
from kdissect.capture.oddities import Oddities
from kdissect.capture.pcapng import EPB, PB, SPB
from kdissect.capture.writer import PcapngWriter, PcapWriter, pcap_bytes
from kdissect.testing import craft

T0 = 1_700_000_000_000_000_000


def sample(n: int = 5, linktype: int = LINKTYPE_ETHERNET, step: int = 1_000_001) -> list[Packet]:
    """A handshake and data: packets with distinct sizes and nanosecond-odd timestamps."""
    conv = craft.Conversation(linktype=linktype, clock=craft.Clock(T0, step))
    packets = conv.handshake()
    for i in range(n - 3):
        packets.append(conv.segment(craft.CLIENT, bytes([i]) * (10 + i)))
    return packets


def read(data: bytes, name: str = "test.pcap") -> tuple[list[Packet], list]:
    capture = CaptureFile(io.BytesIO(data), name)
    packets = list(capture.packets())
    return packets, capture.diagnostics()


def codes(diagnostics) -> list[str]:
    return [d.code for d in diagnostics]


# -- classic pcap -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("nanosecond", [False, True])
@pytest.mark.parametrize("big_endian", [False, True])
def test_pcap_resolutions_and_byte_orders(nanosecond: bool, big_endian: bool) -> None:
    original = sample()
    data = pcap_bytes(original, LINKTYPE_ETHERNET, nanosecond=nanosecond, big_endian=big_endian)
    expected_magic = {(False, False): "d4c3b2a1", (False, True): "a1b2c3d4", (True, False): "4d3cb2a1", (True, True): "a1b23c4d"}
    assert data[:4].hex() == expected_magic[nanosecond, big_endian]
    capture = CaptureFile(io.BytesIO(data), "x.pcap")
    packets = list(capture.packets())
    assert capture.format == "pcap"
    assert capture.linktypes() == [LINKTYPE_ETHERNET]
    assert capture.diagnostics() == []
    assert [p.data for p in packets] == [p.data for p in original]
    assert [p.index for p in packets] == [1, 2, 3, 4, 5]
    # microsecond files lose the nanoseconds, nanosecond files keep them
    assert [p.ts for p in packets] == [p.ts if nanosecond else p.ts // 1000 * 1000 for p in original]
    assert packets[0].offset == 24
    assert packets[1].offset == 24 + 16 + len(original[0].data)


def test_pcap_snaplen_cuts_records_and_keeps_orig_len() -> None:
    original = sample()
    data = pcap_bytes(original, LINKTYPE_ETHERNET, snaplen=60)
    packets, diagnostics = read(data)
    assert diagnostics == []
    for got, sent in zip(packets, original):
        assert got.data == sent.data[:60]
        assert got.orig_len == len(sent.data)
    assert struct.unpack_from("<I", data, 16)[0] == 60


def test_pcap_writer_keeps_the_original_length_of_packets_already_cut() -> None:
    """What a live capture hands over: fewer bytes than were on the wire."""
    cut = [p._replace(data=p.data[:40], orig_len=len(p.data)) for p in sample()]
    out = io.BytesIO()
    writer = PcapWriter(out, LINKTYPE_ETHERNET, 65535, nanosecond=True)
    for p in cut:
        writer.write(p)
    assert writer.packets == 5
    packets, diagnostics = read(out.getvalue())
    assert [(p.ts, p.data, p.orig_len) for p in packets] == [(p.ts, p.data, p.orig_len) for p in cut]
    assert diagnostics == []


def test_pcap_writer_refuses_a_second_link_type() -> None:
    writer = PcapWriter(io.BytesIO(), LINKTYPE_ETHERNET)
    with pytest.raises(ValueError):
        writer.write(sample(3, LINKTYPE_RAW)[0])


def test_pcap_caplen_above_origlen_is_tolerated_with_one_warning() -> None:
    original = [p._replace(orig_len=len(p.data) - 4) for p in sample()]
    packets, diagnostics = read(pcap_bytes(original, LINKTYPE_ETHERNET))
    assert [p.data for p in packets] == [p.data for p in original]
    assert [p.orig_len for p in packets] == [len(p.data) for p in original]
    assert codes(diagnostics) == ["pcap.caplen-exceeds-origlen"]
    assert diagnostics[0].severity == "warning"
    assert "5 times" in diagnostics[0].message
    assert diagnostics[0].offset == 24


def test_pcap_timestamps_going_backwards_are_reported() -> None:
    original = sample()
    original[3] = original[3]._replace(ts=original[0].ts - 1000)
    packets, diagnostics = read(pcap_bytes(original, LINKTYPE_ETHERNET))
    assert len(packets) == 5
    assert codes(diagnostics) == ["capture.time-backwards"]
    assert diagnostics[0].offset == packets[3].offset


def test_pcap_fcs_bits_in_the_link_type_are_masked() -> None:
    data = bytearray(pcap_bytes(sample(), LINKTYPE_ETHERNET))
    struct.pack_into("<I", data, 20, 0x10000000 | 4 << 28 | LINKTYPE_ETHERNET)
    packets, _ = read(bytes(data))
    assert {p.linktype for p in packets} == {LINKTYPE_ETHERNET}


@pytest.mark.parametrize("nanosecond", [False, True])
def test_pcap_large_capture_streams_across_chunks(nanosecond: bool) -> None:
    """Records that straddle the reader's 1 MiB chunks arrive whole and in order."""
    conv = craft.Conversation(clock=craft.Clock(T0, 1000))
    original = conv.send(craft.CLIENT, bytes(range(256)) * 10000, sizes=[1000, 1460, 333, 9000])
    data = pcap_bytes(original, LINKTYPE_ETHERNET, nanosecond=nanosecond)
    assert len(data) > 2 << 20
    packets, diagnostics = read(data)
    assert diagnostics == []
    assert len(packets) == len(original)
    assert all(a.data == b.data for a, b in zip(packets, original))


# -- truncation ---------------------------------------------------------------------------------------------------


def test_pcap_cut_inside_a_record_header() -> None:
    original = sample()
    data = pcap_bytes(original, LINKTYPE_ETHERNET)
    cut = 24 + sum(16 + len(p.data) for p in original[:3]) + 7
    packets, diagnostics = read(data[:cut])
    assert [p.data for p in packets] == [p.data for p in original[:3]]
    assert codes(diagnostics) == ["pcap.truncated"]
    assert diagnostics[0].severity == "error"
    assert diagnostics[0].offset == cut - 7


def test_pcap_cut_inside_packet_data() -> None:
    original = sample()
    data = pcap_bytes(original, LINKTYPE_ETHERNET)
    start = 24 + sum(16 + len(p.data) for p in original[:4])
    packets, diagnostics = read(data[: start + 16 + 5])
    assert len(packets) == 4
    assert codes(diagnostics) == ["pcap.truncated"]
    assert "packet 5 (5 of" in diagnostics[0].message
    assert diagnostics[0].offset == start


def test_pcap_absurd_record_length_costs_that_record() -> None:
    original = sample()
    data = bytearray(pcap_bytes(original, LINKTYPE_ETHERNET))
    at = 24 + 16 + len(original[0].data)
    struct.pack_into("<I", data, at + 8, 0x7FFFFFF0)
    packets, diagnostics = read(bytes(data))
    assert [p.data for p in packets] == [p.data for p in original[:1] + original[2:]]
    assert codes(diagnostics) == ["pcap.resync"]
    assert diagnostics[0].offset == at and f"{16 + len(original[1].data)} bytes skipped" in diagnostics[0].message


def test_pcap_record_header_cut_short_costs_that_record() -> None:
    """Eight bytes of a record header missing from the file: what is read there is no header, and the reader
    finds the next one."""
    original = sample()
    data = pcap_bytes(original, LINKTYPE_ETHERNET)
    at = 24 + 16 + len(original[0].data)
    packets, diagnostics = read(data[:at] + data[at + 8 :])
    assert [p.data for p in packets] == [p.data for p in original[:1] + original[2:]]
    assert codes(diagnostics) == ["pcap.resync"] and diagnostics[0].offset == at


def test_pcap_corrupt_header_with_nothing_plausible_after_it_ends_the_read() -> None:
    original = sample()
    data = bytearray(pcap_bytes(original, LINKTYPE_ETHERNET))
    at = 24 + 16 + len(original[0].data)
    struct.pack_into("<I", data, at + 8, 0x7FFFFFF0)
    packets, diagnostics = read(bytes(data[: at + 40]))
    assert len(packets) == 1 and codes(diagnostics) == ["pcap.corrupt-record"] and diagnostics[0].offset == at


def test_pcap_header_cut_short_is_a_capture_error() -> None:
    data = pcap_bytes([], LINKTYPE_ETHERNET)
    with pytest.raises(CaptureError, match="truncated inside the pcap file header"):
        CaptureFile(io.BytesIO(data[:10]), "short.pcap")


def test_pcap_with_no_packets() -> None:
    packets, diagnostics = read(pcap_bytes([], LINKTYPE_ETHERNET))
    assert packets == [] and diagnostics == []


# -- pcapng -------------------------------------------------------------------------------------------------------


def build_pcapng(writer_actions) -> bytes:
    out = io.BytesIO()
    writer = PcapngWriter(out)
    writer_actions(writer)
    return out.getvalue()


def test_pcapng_sections_interfaces_and_resolutions() -> None:
    base = 1_700_000_000 * 10**9
    # timestamps exact in every resolution used (multiples of 1e9 / 2**9), rising in the order written
    eth = [p._replace(ts=base + 1_953_125 * k) for p, k in zip(sample(4, LINKTYPE_ETHERNET), (1, 3, 5, 7))]
    sll = [p._replace(ts=base + 1_953_125 * k) for p, k in zip(sample(3, LINKTYPE_LINUX_SLL), (2, 4, 6))]
    raw = [p._replace(ts=base + 1_000_000 * k) for p, k in zip(sample(3, LINKTYPE_RAW), (18, 19, 20))]
    sll2 = [p._replace(ts=base + 1_953_125 * 11) for p in sample(3, LINKTYPE_LINUX_SLL2)]

    def actions(w: PcapngWriter) -> None:
        ns = w.interface(LINKTYPE_ETHERNET, tsresol=9)
        pow2 = w.interface(LINKTYPE_LINUX_SLL, tsresol=0x80 | 9)
        for a, b in zip(eth, sll):
            w.packet(a, ns)
            w.packet(b, pow2)
        w.packet(eth[3], ns)
        w.section(big_endian=True)
        w.interface(LINKTYPE_RAW)  # default microseconds
        w.interface(LINKTYPE_LINUX_SLL2, tsresol=3, tsoffset=0)
        w.interface(LINKTYPE_LINUX_SLL2, tsresol=0, tsoffset=1_700_000_000)
        for a in raw:
            w.packet(a, 0)
        w.packet(sll2[0], 1)
        w.packet(sll2[1]._replace(ts=base + 10**9 * 7), 2)

    data = build_pcapng(actions)
    capture = CaptureFile(io.BytesIO(data), "multi.pcapng")
    packets = list(capture.packets())
    assert capture.format == "pcapng"
    assert capture.diagnostics() == []
    assert capture.linktypes() == [LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_RAW, LINKTYPE_LINUX_SLL2]
    expected = [eth[0], sll[0], eth[1], sll[1], eth[2], sll[2], eth[3], *raw]
    assert [(p.linktype, p.data, p.ts) for p in packets[:10]] == [(p.linktype, p.data, p.ts) for p in expected]
    assert packets[10].ts == sll2[0].ts // 10**6 * 10**6
    assert packets[10].linktype == LINKTYPE_LINUX_SLL2
    assert packets[11].ts == base + 10**9 * 7  # if_tsoffset seconds added back
    assert [p.index for p in packets] == list(range(1, 13))
    assert capture._reader.sections == 2


def test_pcapng_simple_and_obsolete_packet_blocks() -> None:
    eth = sample(4)

    def actions(w: PcapngWriter) -> None:
        w.interface(LINKTYPE_ETHERNET, snaplen=62, tsresol=9)
        w.packet(eth[0], 0, EPB)
        w.packet(eth[1], 0, SPB)
        w.packet(eth[2], 0, PB)
        w.packet(eth[3], 0, SPB)

    capture = CaptureFile(io.BytesIO(build_pcapng(actions)), "spb.pcapng")
    packets = list(capture.packets())
    assert [p.data for p in packets] == [p.data[:62] for p in eth]
    assert [p.orig_len for p in packets] == [len(p.data) for p in eth]
    # a simple packet block has no timestamp: it takes the one before
    assert [p.ts for p in packets] == [eth[0].ts, eth[0].ts, eth[2].ts, eth[2].ts]
    assert codes(capture.diagnostics()) == ["pcapng.obsolete-packet-block"]
    assert capture.diagnostics()[0].severity == "note"


def test_pcapng_unknown_blocks_are_skipped_with_one_note() -> None:
    eth = sample(3)

    def actions(w: PcapngWriter) -> None:
        w.interface(LINKTYPE_ETHERNET)
        w.block(0x4, b"\0" * 4)  # name resolution: known, silently skipped
        w.packet(eth[0])
        w.block(0x0ABCDEF0, b"junk" * 3)
        w.packet(eth[1])
        w.block(0x0ABCDEF0, b"")
        w.packet(eth[2])

    packets, diagnostics = read(build_pcapng(actions), "x.pcapng")
    assert [p.data for p in packets] == [p.data for p in eth]
    assert codes(diagnostics) == ["pcapng.unknown-block"]
    assert "0xabcdef0" in diagnostics[0].message and "2 times" in diagnostics[0].message
    assert diagnostics[0].severity == "note"


def test_pcapng_packet_on_an_undescribed_interface() -> None:
    eth = sample(3)

    def actions(w: PcapngWriter) -> None:
        w.interface(LINKTYPE_ETHERNET)
        w.packet(eth[0])
        w._interfaces.append(w._interfaces[0])  # write on interface 1 without describing it
        w.packet(eth[1], 1)
        w.packet(eth[2])

    packets, diagnostics = read(build_pcapng(actions), "x.pcapng")
    assert [p.data for p in packets] == [eth[0].data, eth[2].data]
    assert [p.index for p in packets] == [1, 2]
    assert codes(diagnostics) == ["pcapng.unknown-interface"]


def test_pcapng_caplen_above_origlen_and_time_backwards() -> None:
    eth = sample(4)

    def actions(w: PcapngWriter) -> None:
        w.interface(LINKTYPE_ETHERNET, tsresol=9)
        w.packet(eth[0]._replace(orig_len=10))
        w.packet(eth[1])
        w.packet(eth[2]._replace(ts=eth[0].ts - 5))
        w.packet(eth[3])

    packets, diagnostics = read(build_pcapng(actions), "x.pcapng")
    assert packets[0].orig_len == len(eth[0].data)
    assert sorted(codes(diagnostics)) == ["capture.time-backwards", "pcapng.caplen-exceeds-origlen"]


def pcapng_sample() -> tuple[bytes, list[Packet], list[int]]:
    """A pcapng file and the file offset where each of its blocks starts."""
    eth = sample(5)
    out = io.BytesIO()
    writer = PcapngWriter(out)
    writer.interface(LINKTYPE_ETHERNET, tsresol=9)
    starts = []
    for p in eth:
        starts.append(out.tell())
        writer.packet(p)
    return out.getvalue(), eth, starts


@pytest.mark.parametrize("into", [3, 8, 20, 40])
def test_pcapng_cut_inside_a_block(into: int) -> None:
    data, eth, starts = pcapng_sample()
    packets, diagnostics = read(data[: starts[3] + into], "x.pcapng")
    assert [p.data for p in packets] == [p.data for p in eth[:3]]
    assert codes(diagnostics) == ["pcapng.truncated"]
    assert diagnostics[0].offset == starts[3]


def test_pcapng_cut_inside_the_section_header() -> None:
    data, _, _ = pcapng_sample()
    packets, diagnostics = read(data[:10], "x.pcapng")
    assert packets == []
    assert codes(diagnostics) == ["pcapng.truncated"]


def test_pcapng_corrupt_block_length_stops_reading() -> None:
    data, _eth, starts = pcapng_sample()
    data = bytearray(data)
    struct.pack_into("<I", data, starts[2] + 4, 13)
    packets, diagnostics = read(bytes(data), "x.pcapng")
    assert len(packets) == 2
    assert codes(diagnostics) == ["pcapng.corrupt-block"]
    assert diagnostics[0].offset == starts[2]


def test_pcapng_bad_byte_order_magic() -> None:
    data, _, _ = pcapng_sample()
    data = data[:8] + b"\0\0\0\0" + data[12:]
    packets, diagnostics = read(data, "x.pcapng")
    assert packets == []
    assert codes(diagnostics) == ["pcapng.bad-section"]


def test_misnamed_files_get_a_note() -> None:
    data, _, _ = pcapng_sample()
    _, diagnostics = read(data, "capture.pcap")
    assert codes(diagnostics) == ["capture.misnamed"]
    _, diagnostics = read(pcap_bytes(sample(), LINKTYPE_ETHERNET), "capture.pcapng")
    assert codes(diagnostics) == ["capture.misnamed"]


# -- compression --------------------------------------------------------------------------------------------------

COMPRESSORS = {
    "gzip": gzip.compress,
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
    "lz4": lz4.frame.compress,
}


@pytest.mark.parametrize("kind", COMPRESSORS)
@pytest.mark.parametrize("container", ["pcap", "pcapng"])
def test_compressed_captures(tmp_path, kind: str, container: str) -> None:
    if container == "pcap":
        original = sample(30)
        data = pcap_bytes(original, LINKTYPE_ETHERNET, nanosecond=True)
    else:
        data, original, _ = pcapng_sample()
    path = tmp_path / f"c.{container}.{kind}"
    path.write_bytes(COMPRESSORS[kind](data))
    with open_capture(path) as capture:
        packets = list(capture.packets())
        assert capture.compression == kind
        assert capture.format == container
        assert capture.diagnostics() == []
        _done, total = capture.progress()
        assert total == path.stat().st_size
    assert [(p.ts, p.data) for p in packets] == [(p.ts, p.data) for p in original]


@pytest.mark.parametrize("kind", ["gzip", "lz4"])
def test_truncated_compressed_stream_keeps_what_it_held(kind: str) -> None:
    """A compressed capture cut short yields every packet decompressed before the cut, then a diagnostic."""
    conv = craft.Conversation(clock=craft.Clock(T0, 1000))
    original = conv.send(craft.CLIENT, bytes(range(256)) * 12000, sizes=1460)
    data = pcap_bytes(original, LINKTYPE_ETHERNET)
    compressed = COMPRESSORS[kind](data)
    packets, diagnostics = read(compressed[: len(compressed) * 3 // 4])
    assert [p.data for p in packets] == [p.data for p in original[: len(packets)]]
    # the cut lies three quarters into a stream of barely compressible data: nearly that much must come out
    assert len(packets) > len(original) * 7 // 10
    assert "capture.truncated-stream" in codes(diagnostics)


def test_truncated_zstd_stream_keeps_whole_packets() -> None:
    """A zstd stream cut short says so, besides the pcap record the cut split in two."""
    conv = craft.Conversation(clock=craft.Clock(T0, 1000))
    original = conv.send(craft.CLIENT, bytes(range(256)) * 3000, sizes=1001)
    compressed = COMPRESSORS["zstd"](pcap_bytes(original, LINKTYPE_ETHERNET))
    packets, diagnostics = read(compressed[: len(compressed) // 2])
    assert 0 < len(packets) < len(original)
    assert [p.data for p in packets] == [p.data for p in original[: len(packets)]]
    assert codes(diagnostics) == ["pcap.truncated", "capture.truncated-stream"]


def test_compressed_stream_cut_before_any_data() -> None:
    compressed = COMPRESSORS["zstd"](pcap_bytes(sample(), LINKTYPE_ETHERNET))
    with pytest.raises(CaptureError, match="cannot read the zstd stream: cut inside a frame"):
        CaptureFile(io.BytesIO(compressed[:20]), "x.pcap.zst")


# -- not a capture --------------------------------------------------------------------------------------------------


def one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_missing_file(tmp_path) -> None:
    with pytest.raises(CaptureError) as exc:
        open_capture(tmp_path / "nope.pcap")
    assert one_line(exc).endswith("nope.pcap: no such file")


def test_directory(tmp_path) -> None:
    with pytest.raises(CaptureError) as exc:
        open_capture(tmp_path)
    assert "is a directory" in one_line(exc)


def test_empty_file(tmp_path) -> None:
    path = tmp_path / "empty.pcap"
    path.write_bytes(b"")
    with pytest.raises(CaptureError) as exc:
        open_capture(path)
    assert one_line(exc).endswith("the file is empty")


@pytest.mark.parametrize(
    "content", [b"hello world, not a capture", b"ab", b"\x1f\x8b" + b"\0" * 30, gzip.compress(b"text inside gzip", mtime=0)]
)
def test_not_a_capture(tmp_path, content: bytes) -> None:
    path = tmp_path / "text.pcap"
    path.write_bytes(content)
    with pytest.raises(CaptureError) as exc:
        open_capture(path)
    assert one_line(exc).startswith(str(path))


def test_corrupt_zstd_is_a_capture_error(tmp_path) -> None:
    path = tmp_path / "bad.pcap.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + b"\xff" * 40)
    with pytest.raises(CaptureError) as exc:
        open_capture(path)
    one_line(exc)


def test_open_capture_closes_the_file_it_rejects(tmp_path, monkeypatch) -> None:
    opened = []
    real_open = open

    def tracking_open(*args, **kwargs):
        f = real_open(*args, **kwargs)
        opened.append(f)
        return f

    path = tmp_path / "x.pcap"
    path.write_bytes(b"garbage!")
    monkeypatch.setattr("builtins.open", tracking_open)
    with pytest.raises(CaptureError):
        open_capture(path)
    assert opened and all(f.closed for f in opened)


@pytest.mark.parametrize("block_type,body", [(1, b""), (6, b"\0" * 8), (3, b""), (2, b"\0" * 4)])
def test_pcapng_blocks_too_short_for_their_type_are_skipped(block_type: int, body: bytes) -> None:
    eth = sample(3)

    def actions(w: PcapngWriter) -> None:
        w.interface(LINKTYPE_ETHERNET, tsresol=9)
        w.packet(eth[0])
        w.block(block_type, body)
        w.packet(eth[1])

    packets, diagnostics = read(build_pcapng(actions), "x.pcapng")
    assert [p.data for p in packets] == [eth[0].data, eth[1].data]
    assert codes(diagnostics) == ["pcapng.corrupt-block"]
    assert "too short" in diagnostics[0].message


# -- byte ranges --------------------------------------------------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT = sorted(glob.glob(os.path.join(ROOT, "captures", "*.pcap")))
PUBLIC = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "captures-public", "*.pcap*")))
ALL = PROJECT + PUBLIC


def is_pcapng(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x0a\x0d\x0d\x0a"


def indexed(path: str, split_size: int) -> tuple[ranges.CaptureInfo, list[ranges.Split], list[ranges.RangeIndex]]:
    """A file probed, planned and each range indexed, as the planner's callers do."""
    with open(path, "rb") as raw:
        info = ranges.probe(0, path, raw, os.path.getsize(path), split_size)
    planned = ranges.plan(info, split_size)
    found = []
    if info.kind in ("pcap", "pcapng"):
        for s in planned:
            with open(path, "rb") as raw:
                found.append(ranges.index_range(info, s, raw))
    return info, planned, found


def true_offsets(path: str) -> list[int]:
    with open_capture(path) as capture:
        return [p.offset for p in capture.packets()]


def pcap_rules(data: bytes) -> sync.PcapRules:
    info = ranges.probe(0, "x", io.BytesIO(data), len(data), len(data))
    assert info.rules is not None
    return info.rules


def expected_sync(offsets: list[int], start: int) -> int | None:
    return next((o for o in offsets if o >= start), None)


@pytest.mark.parametrize("path", [p for p in ALL if not is_pcapng(p)], ids=os.path.basename)
def test_pcap_sync_finds_exactly_the_records(path):
    data = open(path, "rb").read()
    rules = pcap_rules(data)
    offsets = true_offsets(path)
    step = max(1, len(data) // 3000)
    for start in range(24, len(data), step):
        assert sync.find_pcap_sync(rules, data, start, eof=True) == expected_sync(offsets, start), start


@pytest.mark.parametrize("path", [p for p in PUBLIC if is_pcapng(p)], ids=os.path.basename)
def test_pcapng_sync_finds_exactly_the_blocks(path):
    data = open(path, "rb").read()
    order = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
    blocks = []
    pos = 0
    while pos < len(data):
        blocks.append(pos)
        pos += struct.unpack_from(order + "I", data, pos + 4)[0]
    for start in range(0, len(data)):
        assert sync.find_pcapng_sync(order, data, start, 0, eof=True) == expected_sync(blocks, start), start


def test_a_file_whose_records_all_claim_more_than_their_original_length_still_syncs():
    odd = [p for p in PUBLIC if "go-sniffer" in p]
    if not odd:
        pytest.skip("../shared/captures-public is not here")
    data = open(odd[0], "rb").read()
    rules = pcap_rules(data)
    assert not rules.strict_orig  # incl_len > orig_len on every record: tolerated
    offsets = true_offsets(odd[0])
    assert sync.find_pcap_sync(rules, data, 25, eof=True) == offsets[1]
    strict = sync.PcapRules(rules.order, rules.frac_limit, rules.snaplen, True, rules.first_sec)
    assert sync.find_pcap_sync(strict, data, 25, eof=True) is None


def test_runs_of_zeros_and_payload_lookalikes_are_not_records():
    rules = sync.PcapRules("<", 1_000_000, 262144, True, 1_700_000_000)
    zeros = bytes(4096)
    assert sync.find_pcap_sync(rules, zeros, 0, eof=True) is None
    # one plausible header alone, with garbage after it, is not enough
    lone = struct.pack("<IIII", 1_700_000_000, 5, 20, 20) + bytes(20) + b"\xff" * 64
    assert sync.find_pcap_sync(rules, lone, 0, eof=True) is None
    assert not sync.pcap_plausible(rules, 1_700_000_000, 1_000_000, 60, 60)  # sub-second field too large
    assert not sync.pcap_plausible(rules, 1_700_000_000, 0, 60, 59)  # captured more than was sent
    assert not sync.pcap_plausible(rules, 1_700_000_000 + 10**9, 0, 60, 60)  # decades from the file's start


def test_a_chain_that_needs_more_bytes_says_so():
    data = open(PROJECT[0], "rb").read() if PROJECT else pytest.skip("no captures/")
    rules = pcap_rules(data)
    assert sync.pcap_chain(rules, data[:40], 24, eof=False) is None
    assert sync.find_pcap_sync(rules, data[:40], 24, eof=False) is None


def test_a_range_whose_walk_does_not_land_on_the_next_sync_sends_the_file_whole(tmp_path):
    path = next(p for p in PROJECT if "many-records" in p)
    info, planned, found = indexed(path, 20000)
    settled, count = ranges.settle(info, planned, found)
    assert len(settled) == len(planned) and count == len(true_offsets(path))
    found[2] = dataclasses.replace(found[2], landing=found[2].landing + 4)  # as if range 2's walk had skipped into range 3
    settled, count = ranges.settle(info, planned, found)
    assert len(settled) == 1 and settled[0].whole and count is None


def read_in_ranges(path: str, split_size: int) -> tuple[list[ranges.Split], list[Packet], Oddities]:
    """Every settled range read on its own, as a task would, its packets and oddities put together in order."""
    info, planned, found = indexed(path, split_size)
    settled = ranges.settle(info, planned, found)[0] if found else planned
    packets, odd = [], Oddities()
    for s in settled:
        with open(path, "rb") as raw:
            capture = CaptureFile(raw, os.path.basename(path), first=s.first, prefix=s.prefix, index_base=s.index_base, stop=s.stop)
            packets.extend(capture.packets())
            odd.merge(capture.oddities())
    return settled, packets, odd


def assert_ranges_read_as_the_whole(path: str, split_size: int) -> list[ranges.Split]:
    with open(path, "rb") as raw:
        whole = CaptureFile(raw, os.path.basename(path))
        packets = list(whole.packets())
    settled, got, odd = read_in_ranges(path, split_size)
    assert got == packets  # data, times, offsets and packet numbers
    assert odd.diagnostics() == whole.diagnostics()
    return settled


@pytest.mark.parametrize("path", ALL, ids=os.path.basename)
def test_ranges_read_alone_give_the_files_own_packets(path):
    settled = assert_ranges_read_as_the_whole(path, 4096)
    if path in PROJECT:  # these are sound: every range holding a packet's start is cut (one inside a packet joins another)
        starts = {offset // 4096 for offset in true_offsets(path)} | {0}
        if os.path.getsize(path) <= 4096:  # one range (a crafted capture can be that small): read whole
            assert [s.whole for s in settled] == [True]
        else:
            assert len(settled) == len(starts) > 1 and not any(s.whole for s in settled)


def test_a_truncated_file_read_in_ranges_names_the_same_packet(tmp_path):
    path = next(p for p in PROJECT if "many-records" in p)
    data = open(path, "rb").read()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[: len(data) - 700])
    settled = assert_ranges_read_as_the_whole(str(cut), 8192)
    assert len(settled) > 2
    _, _, odd = read_in_ranges(str(cut), 8192)
    assert [e.code for e in odd.entries()] == ["pcap.truncated"] and "inside packet" in odd.entries()[0].message


def test_pcapng_ranges_start_with_the_sections_and_interfaces_in_force(tmp_path):
    """Three sections, the later ones big-endian, each with an interface no packet uses."""
    path = next(p for p in PROJECT if "many-records" in p)
    with open_capture(path) as capture:
        packets = list(capture.packets())
    target = tmp_path / "sections.pcapng"
    third = len(packets) // 3
    with open(target, "wb") as f:
        w = PcapngWriter(f)
        w.interface(packets[0].linktype, tsresol=9)
        for i, p in enumerate(packets):
            if i in (third, 2 * third):
                w.section(big_endian=True)
                w.interface(99)
                w.interface(p.linktype, tsresol=6)
            w.packet(p, 1 if i >= third else 0)
    settled = assert_ranges_read_as_the_whole(str(target), 8192)
    assert len(settled) > 5
    assert any(s.prefix[8:12] == b"\x1a\x2b\x3c\x4d" for s in settled)  # a big-endian section in force


def test_oddities_of_ranges_add_up():
    first, second = Oddities(), Oddities()
    first.add("pcap.caplen-exceeds-origlen", "a record's captured length exceeds its original length", 40)
    first.count("capture.time-backwards", 2, "a packet's timestamp is earlier than the one before", 100)
    second.count("capture.time-backwards", 3, "a packet's timestamp is earlier than the one before", 9000)
    total = Oddities()
    total.merge(first.entries())
    total.merge(second.entries())
    assert [(e.code, e.offset, e.times) for e in total.entries()] == [
        ("pcap.caplen-exceeds-origlen", 40, 1),
        ("capture.time-backwards", 100, 5),
    ]
    assert "(5 times, first here)" in total.diagnostics()[1].message
