"""Codec quirks and decompression bombs."""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.limits import Limits
from kdissect.records import Budget, decode_records
from kdissect.records.batch import CRC_START, HEADER
from kdissect.records.codecs import (
    CODEC_IDS,
    GZIP,
    LZ4,
    SNAPPY,
    XERIAL_MAGIC,
    ZSTD,
    decompress,
    lz4_header_checksum_index,
)
from kdissect.records.crc import crc32c, xxh32
from kdissect.records.encode import Draft, compress, encode_batch, encode_message, encode_record
from kdissect.testing.record_encoder import encode_message_set

MiB = 1 << 20
GiB = 1 << 30
ZEROS = bytes(MiB)


def _codes(rs) -> list[str]:
    return [d.code for d in rs.diagnostics]


def _batch_with_payload(codec: int, payload: bytes, count: int = 1) -> bytes:
    """A v2 batch whose records section is `payload` as given, with a valid CRC."""
    header = bytearray(HEADER.pack(0, HEADER.size - 12 + len(payload), 0, 2, 0, codec, count - 1, 0, 0, -1, -1, -1, count))
    batch = header + payload
    struct.pack_into(">I", batch, CRC_START - 4, crc32c(bytes(batch[CRC_START:])))
    return bytes(batch)


def _records_section(n: int, size: int = 200) -> bytes:
    return b"".join(encode_record(Draft(b"k%d" % i, bytes([i % 256]) * size), i, 0) for i in range(n))


# Bombs: one GiB of zeros each, built a MiB at a time.


def _gzip_bomb() -> bytes:
    """After a full flush every further MiB of zeros compresses to the same bytes, so the member is built by repetition."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = c.compress(ZEROS) + c.flush(zlib.Z_FULL_FLUSH)
    piece = c.compress(ZEROS) + c.flush(zlib.Z_FULL_FLUSH)
    final_block = c.flush()[:-8]
    crc = 0
    for _ in range(GiB // MiB):
        crc = zlib.crc32(ZEROS, crc)
    return head + piece * (GiB // MiB - 1) + final_block + struct.pack("<II", crc, GiB & 0xFFFFFFFF)


def _snappy_bomb() -> bytes:
    chunk = bytes(cramjam.snappy.compress_raw(bytes(32 * MiB)))
    framed = struct.pack(">i", len(chunk)) + chunk
    return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + framed * (GiB // (32 * MiB))


def _lz4_bomb() -> bytes:
    c = lz4.frame.LZ4FrameCompressor(block_linked=False)
    return c.begin() + b"".join(c.compress(ZEROS) for _ in range(GiB // MiB)) + c.flush()


def _zstd_bomb() -> bytes:
    c = zstandard.ZstdCompressor().compressobj()
    return b"".join(c.compress(ZEROS) for _ in range(GiB // MiB)) + c.flush()


BOMBS = {GZIP: _gzip_bomb, SNAPPY: _snappy_bomb, LZ4: _lz4_bomb, ZSTD: _zstd_bomb}


@pytest.fixture(scope="module", params=sorted(BOMBS), ids=lambda c: ["", "gzip", "snappy", "lz4", "zstd"][c])
def bomb(request) -> tuple[int, bytes]:
    return request.param, _batch_with_payload(request.param, BOMBS[request.param]())


def test_bomb_stops_at_the_batch_cap_in_bounded_memory(bomb):
    codec, batch = bomb
    limits = Limits(max_decompressed_batch=4 * MiB)
    tracemalloc.start()
    try:
        rs = decode_records(batch, limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "codec.bomb" in _codes(rs)
    bomb_diag = next(d for d in rs.diagnostics if d.code == "codec.bomb")
    assert (bomb_diag.severity, bomb_diag.scope, bomb_diag.offset) == ("error", "batch", HEADER.size)
    (b,) = rs.batches
    assert b.uncompressed_size <= 4 * MiB
    assert peak < 16 * MiB, peak


def test_bomb_under_default_limits(bomb):
    codec, batch = bomb
    rs = decode_records(batch)
    assert "codec.bomb" in _codes(rs)
    assert rs.batches[0].uncompressed_size <= Limits().max_decompressed_batch


def test_snappy_chunk_claiming_more_than_the_cap_is_not_decompressed():
    claim = b"\x80\x80\x80\x80\x04" + b"\x00" * 10
    rs = decode_records(_batch_with_payload(SNAPPY, claim))
    assert _codes(rs)[0] == "codec.bomb"
    assert rs.batches[0].uncompressed_size == 0


def test_lz4_frame_claiming_a_huge_content_size():
    descriptor = bytes([0x68, 0x40]) + (1 << 40).to_bytes(8, "little")
    frame = b"\x04\x22\x4d\x18" + descriptor + bytes([(xxh32(descriptor) >> 8) & 0xFF])
    frame += (3 | 0x80000000).to_bytes(4, "little") + b"abc" + b"\x00\x00\x00\x00"
    rs = decode_records(_batch_with_payload(LZ4, frame))
    assert "codec.error" in _codes(rs)


def test_exchange_budget_is_shared_across_batches_and_calls():
    payload = compress(ZSTD, _records_section(15000))
    batch = _batch_with_payload(ZSTD, payload, 15000)
    size = len(_records_section(15000))
    limits = Limits(max_decompressed_batch=size + 1, max_decompressed_exchange=int(size * 2.5))
    budget = Budget(limits.max_decompressed_exchange)
    first = decode_records(batch + batch, limits=limits, budget=budget)
    assert first.diagnostics == ()
    second = decode_records(batch, limits=limits, budget=budget)
    assert _codes(second)[0] == "codec.bomb"
    assert "exchange" in second.diagnostics[0].message
    assert second.batches[0].uncompressed_size == size // 2
    assert budget.remaining == 0


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_batch_of_several_megabytes(codec):
    records = [Draft(b"%d" % i, bytes([i % 256]) * 4000 + b"%d" % i) for i in range(2000)]
    rs = decode_records(encode_batch(records, codec=codec))
    assert rs.diagnostics == ()
    (batch,) = rs.batches
    assert batch.uncompressed_size > 7 * MiB > batch.compressed_size
    assert [r.value for r in batch.records] == [d.value for d in records]


def test_zstd_frame_without_content_size():
    section = _records_section(50)
    c = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    payload = c.compress(section) + c.flush()
    assert zstandard.get_frame_parameters(payload).content_size == zstandard.CONTENTSIZE_UNKNOWN
    rs = decode_records(_batch_with_payload(ZSTD, payload, 50))
    assert rs.diagnostics == ()
    assert rs.batches[0].uncompressed_size == len(section)


def test_zstd_several_frames():
    section = _records_section(40)
    payload = compress(ZSTD, section[:3000]) + compress(ZSTD, section[3000:])
    rs = decode_records(_batch_with_payload(ZSTD, payload, 40))
    assert rs.diagnostics == () and len(rs.batches[0].records) == 40


def test_gzip_multi_member():
    section = _records_section(30)
    payload = compress(GZIP, section[:1000]) + compress(GZIP, section[1000:])
    rs = decode_records(_batch_with_payload(GZIP, payload, 30))
    assert rs.diagnostics == () and len(rs.batches[0].records) == 30


def test_gzip_corrupt_stream():
    payload = bytearray(compress(GZIP, _records_section(30)))
    payload[len(payload) // 2] ^= 0xFF
    rs = decode_records(_batch_with_payload(GZIP, bytes(payload), 30))
    assert "codec.error" in _codes(rs)


def test_xerial_snappy_with_several_chunks_and_either_byte_order():
    section = _records_section(600)
    framed = compress(SNAPPY, section)
    assert framed[:8] == XERIAL_MAGIC and len(section) > 3 * 32 * 1024
    little = framed[:8] + struct.pack("<ii", 1, 1) + framed[16:]
    odd = framed[:8] + struct.pack(">ii", 7, -3) + framed[16:]
    for payload in (framed, little, odd):
        rs = decode_records(_batch_with_payload(SNAPPY, payload, 600))
        assert rs.diagnostics == ()
        assert rs.batches[0].uncompressed_size == len(section)


def test_raw_snappy_without_xerial_framing():
    section = _records_section(20)
    rs = decode_records(_batch_with_payload(SNAPPY, bytes(cramjam.snappy.compress_raw(section)), 20))
    assert rs.diagnostics == () and len(rs.batches[0].records) == 20


def test_xerial_chunk_overrunning_the_payload():
    framed = bytearray(compress(SNAPPY, _records_section(10)))
    struct.pack_into(">i", framed, 16, 1 << 20)
    rs = decode_records(_batch_with_payload(SNAPPY, bytes(framed), 10))
    assert "codec.error" in _codes(rs)


def test_lz4_kafka_3160_header_checksum_is_tolerated():
    records = [Draft(b"k", b"v" * 100), Draft(None, b"w" * 100)]
    for magic in (0, 1):
        payload = encode_message_set(records, magic=magic, codec="lz4", legacy_lz4=True)
        rs = decode_records(payload)
        assert _codes(rs) == ["codec.lz4-legacy-checksum"]
        assert rs.diagnostics[0].severity == "note"
        assert [(m.key, m.value) for m in rs.records()] == [(d.key, d.value) for d in records]
    rs = decode_records(encode_batch(records, codec="lz4", legacy_lz4=True))
    assert _codes(rs) == ["codec.lz4-legacy-checksum"] and len(rs.batches[0].records) == 2


def test_legacy_lz4_frame_is_one_the_lz4_library_itself_rejects():
    frame = compress(LZ4, b"hello" * 100, legacy_lz4=True)
    with pytest.raises(RuntimeError, match="headerChecksum"):
        lz4.frame.decompress(frame)


def test_lz4_header_checksum_wrong_either_way_is_a_warning():
    frame = bytearray(compress(LZ4, _records_section(5)))
    frame[lz4_header_checksum_index(frame)] ^= 0x5A
    rs = decode_records(_batch_with_payload(LZ4, bytes(frame), 5))
    assert _codes(rs) == ["codec.lz4-header-checksum"]
    assert len(rs.batches[0].records) == 5


def test_lz4_frame_cut_short():
    frame = compress(LZ4, _records_section(50))
    rs = decode_records(_batch_with_payload(LZ4, frame[:-20], 50))
    assert "codec.error" in _codes(rs)


def test_unknown_codec():
    rs = decode_records(_batch_with_payload(6, b"abc"))
    assert "codec.unknown" in _codes(rs)
    assert rs.batches[0].codec == "unknown-6" and rs.batches[0].records == ()


def test_compressed_legacy_wrapper_with_null_value():
    rs = decode_records(encode_message(0, magic=1, value=None, attributes=GZIP))
    assert _codes(rs) == ["messageset.null-wrapper"]


@pytest.mark.parametrize("codec", sorted(CODEC_IDS))
def test_codec_names(codec):
    (batch,) = decode_records(encode_batch([Draft(b"k", b"v" * 50)], codec=codec)).batches
    assert batch.codec == codec and batch.attributes & 7 == CODEC_IDS[codec]


def test_xxh32_matches_published_vectors():
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


@settings(max_examples=200, deadline=None, database=None)
@given(st.binary(max_size=64))
def test_xxh32_agrees_with_the_lz4_library(data):
    """lz4 checks the header checksum with its own XXH32: a descriptor hashed by ours must pass."""
    frame = compress(LZ4, data)
    hc = 6 + (8 if frame[4] & 0x08 else 0)
    assert frame[hc] == (xxh32(frame[4:hc]) >> 8) & 0xFF
    assert lz4.frame.decompress(frame) == data


# Many members or frames in one payload: the work must grow with the payload, not with its square.


class _Meter:
    """Bytes a codec library read, wrote or had copied for it, and how many calls did it.

    A buffer handed over as a view of the payload costs what the library consumed of it; one handed over as
    `bytes` was copied for the call and costs its whole length, as do the leftovers zlib copies out.
    """

    def __init__(self):
        self.work = 0
        self.calls = 0

    def charge(self, *sizes: int) -> None:
        self.work += sum(sizes)
        self.calls += 1

    @staticmethod
    def copied(data) -> int:
        return 0 if isinstance(data, memoryview) else len(data)


class _MeteredInflater:
    def __init__(self, meter: _Meter, real):
        self._meter, self._real = meter, real

    def decompress(self, data, max_length=0):
        out = self._real.decompress(data, max_length)
        self._meter.charge(len(data), len(out), len(self._real.unused_data), len(self._real.unconsumed_tail))
        return out

    def __getattr__(self, name):
        return getattr(self._real, name)


def _meter_libraries(monkeypatch) -> _Meter:
    meter = _Meter()
    inflater, chunk, raw = zlib.decompressobj, lz4.frame.decompress_chunk, cramjam.snappy.decompress_raw
    reader = zstandard.ZstdDecompressor.stream_reader

    def lz4_chunk(context, data, max_length=-1, return_bytearray=False):
        out, read, ended = chunk(context, data, max_length=max_length, return_bytearray=return_bytearray)
        meter.charge(meter.copied(data), read, len(out))
        return out, read, ended

    def snappy(data):
        out = raw(data)
        meter.charge(meter.copied(data), len(data), len(out))
        return out

    def zstd_reader(self, source, *args, **kwargs):
        meter.charge(meter.copied(source), len(source))
        return reader(self, source, *args, **kwargs)

    monkeypatch.setattr(zlib, "decompressobj", lambda *a: _MeteredInflater(meter, inflater(*a)))
    monkeypatch.setattr(lz4.frame, "decompress_chunk", lz4_chunk)
    monkeypatch.setattr(cramjam.snappy, "decompress_raw", snappy)
    monkeypatch.setattr(zstandard.ZstdDecompressor, "stream_reader", zstd_reader)
    return meter


def _xerial(chunks: list[bytes]) -> bytes:
    return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"".join(struct.pack(">i", len(c)) + c for c in chunks)


def _framed_payload(codec: str, parts: list[bytes]) -> bytes:
    """One gzip member, lz4 frame (pre-0.10 checksums among them), xerial chunk or zstd frame per part."""
    if codec == "snappy":
        return _xerial([bytes(cramjam.snappy.compress_raw(p)) for p in parts])
    if codec == "lz4":
        return b"".join(compress(LZ4, p, legacy_lz4=i % 2 == 1) for i, p in enumerate(parts))
    return b"".join(compress(CODEC_IDS[codec], p) for p in parts)


@pytest.mark.parametrize("codec", ["gzip", "lz4", "snappy", "zstd"])
def test_many_frames_cost_work_linear_in_the_payload(codec, monkeypatch):
    """At 1x, 2x, 4x and 8x as many members or frames, the bytes the libraries touch grow 2, 4 and 8-fold."""
    meter = _meter_libraries(monkeypatch)
    work, calls = [], []
    for scale in (1, 2, 4, 8):
        parts = [b"m%06d;" % i for i in range(500 * scale)]
        meter.work = meter.calls = 0
        data, over, problems = decompress(CODEC_IDS[codec], _framed_payload(codec, parts), MiB)
        assert data == b"".join(parts) and not over
        assert all(code == "codec.lz4-legacy-checksum" for code, _, _ in problems)
        work.append(meter.work)
        calls.append(meter.calls)
    for i, scale in enumerate((1, 2, 4, 8)):
        assert work[i] <= work[0] * scale * 1.1, work
        assert calls[i] <= calls[0] * scale * 1.1, calls
