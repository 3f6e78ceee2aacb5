"""Decompression under a byte cap.

Every decompressor asks its library for at most the bytes still allowed plus one, so a bomb is noticed by
getting that one byte too many, and nothing is ever allocated from a size the payload itself claims.
Problems come back as (code, severity, message) triples; the caller knows where the payload sits.
"""

from __future__ import annotations

import zlib

import cramjam
import lz4.frame
import zstandard

from kdissect.records.crc import xxh32

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd", "unknown-5", "unknown-6", "unknown-7")
"""Indexed by the three codec bits of the attributes."""
CODEC_IDS = {name: i for i, name in enumerate(CODEC_NAMES[:5])}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_SIZE = 16
LZ4_MAGIC = b"\x04\x22\x4d\x18"

_STEP = 1 << 20
"""Most output asked of lz4 and zstd in one call: both allocate the whole request before filling it."""

Problem = tuple[str, str, str]
Buffer = bytes | memoryview


class _Full(Exception):
    """The cap is reached: stop decompressing, keep what fits."""


class _Sink:
    """Output chunks and the room left under the cap."""

    __slots__ = ("chunks", "room", "over")

    def __init__(self, cap: int):
        self.chunks: list[bytes] = []
        self.room = cap
        self.over = False

    def add(self, chunk) -> None:
        if len(chunk) > self.room:
            self.chunks.append(chunk[: self.room])
            self.room = 0
            self.over = True
            raise _Full
        self.chunks.append(chunk)
        self.room -= len(chunk)

    def refuse(self) -> None:
        """A chunk claims more than the room left: it is not decompressed at all."""
        self.over = True
        raise _Full


def decompress(codec: int, payload: Buffer, cap: int) -> tuple[bytes, bool, list[Problem]]:
    """Decompressed bytes (at most `cap`), whether the cap cut them short, and problems met."""
    problems: list[Problem] = []
    unpack = _DECOMPRESSORS.get(codec)
    if unpack is None:
        return b"", False, [("codec.unknown", "error", f"compression type {codec} is not defined")]
    sink = _Sink(cap)
    try:
        unpack(payload, sink, problems)
    except _Full:
        pass
    except (zlib.error, RuntimeError, ValueError, cramjam.DecompressionError, zstandard.ZstdError) as e:
        problems.append(("codec.error", "error", f"{CODEC_NAMES[codec]}: {e}"))
    return b"".join(sink.chunks), sink.over, problems


def _gunzip(payload: Buffer, sink: _Sink, problems: list[Problem]) -> None:
    """gzip, several members in a row allowed (wbits 47 also takes a zlib stream)."""
    rest = payload
    while rest:
        d = zlib.decompressobj(47)
        sink.add(d.decompress(rest, sink.room + 1))
        if not d.eof:
            problems.append(("codec.error", "error", "gzip: the stream ends before its end marker"))
            return
        rest = d.unused_data
        if rest and rest[:2] != b"\x1f\x8b":
            problems.append(("codec.trailing-bytes", "warning", f"gzip: {len(rest)} bytes after the last member"))
            return


def _unsnappy(payload: Buffer, sink: _Sink, problems: list[Problem]) -> None:
    """Raw snappy, or the xerial framing Kafka's Java client writes: a 16-byte header, then length-prefixed chunks.

    The header's version and compat int32s are ignored: some producers write them little-endian.
    """
    if payload[:8] != XERIAL_MAGIC:
        _raw_snappy(payload, sink)
        return
    n = len(payload)
    if n < XERIAL_HEADER_SIZE:
        problems.append(("codec.error", "error", f"snappy: xerial header cut at {n} of 16 bytes"))
        return
    pos = XERIAL_HEADER_SIZE
    while pos < n:
        if pos + 4 > n:
            problems.append(("codec.error", "error", f"snappy: xerial chunk length cut at {pos}"))
            return
        size = int.from_bytes(payload[pos : pos + 4], "big", signed=True)
        pos += 4
        if size < 0 or pos + size > n:
            problems.append(("codec.error", "error", f"snappy: xerial chunk of {size} bytes at {pos} overruns the payload"))
            return
        _raw_snappy(payload[pos : pos + size], sink)
        pos += size


def _raw_snappy(chunk: Buffer, sink: _Sink) -> None:
    """One raw snappy block, its length preamble checked against the room before anything is allocated."""
    if cramjam.snappy.decompress_raw_len(chunk) > sink.room:
        sink.refuse()
    sink.add(bytes(cramjam.snappy.decompress_raw(chunk)))


def _unlz4(payload: Buffer, sink: _Sink, problems: list[Problem]) -> None:
    """lz4 frames, one after another; a KAFKA-3160 header checksum is repaired."""
    rest = payload
    while rest:
        if rest[:4] != LZ4_MAGIC:
            problems.append(("codec.error", "error", f"lz4: {len(rest)} bytes that do not start an lz4 frame"))
            return
        d = lz4.frame.LZ4FrameDecompressor()
        try:
            chunk = d.decompress(rest, max_length=min(sink.room + 1, _STEP))
        except RuntimeError as e:
            if "headerChecksum" not in str(e):
                raise
            rest = _repair_lz4_header(rest, problems)
            d = lz4.frame.LZ4FrameDecompressor()
            chunk = d.decompress(rest, max_length=min(sink.room + 1, _STEP))
        sink.add(chunk)
        while not d.eof and not d.needs_input:
            sink.add(d.decompress(b"", max_length=min(sink.room + 1, _STEP)))
        if not d.eof:
            problems.append(("codec.error", "error", "lz4: the frame ends before its end mark"))
            return
        rest = d.unused_data


def lz4_header_checksum_index(frame: Buffer) -> int:
    """Where the one-byte header checksum sits: after magic, FLG, BD and the optional size and dictionary id."""
    flg = frame[4]
    return 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)


def _repair_lz4_header(frame: Buffer, problems: list[Problem]) -> bytes:
    """Kafka before 0.10 hashed the magic too (KAFKA-3160); old clients still send such frames. Put the right byte in."""
    hc = lz4_header_checksum_index(frame)
    good = (xxh32(frame[4:hc]) >> 8) & 0xFF
    if frame[hc] == (xxh32(frame[:hc]) >> 8) & 0xFF:
        problems.append(("codec.lz4-legacy-checksum", "note", "lz4: header checksum computed the pre-0.10 way (KAFKA-3160); tolerated"))
    else:
        problems.append(
            ("codec.lz4-header-checksum", "warning", f"lz4: header checksum {frame[hc]:#04x}, expected {good:#04x}; decoded anyway")
        )
    return bytes(frame[:hc]) + bytes((good,)) + bytes(frame[hc + 1 :])


def _unzstd(payload: Buffer, sink: _Sink, problems: list[Problem]) -> None:
    """zstd frames, with or without a content size, read as a bounded stream."""
    with zstandard.ZstdDecompressor().stream_reader(payload, read_across_frames=True) as reader:
        while True:
            chunk = reader.read(min(sink.room + 1, _STEP))
            if not chunk:
                return
            sink.add(chunk)


_DECOMPRESSORS = {GZIP: _gunzip, SNAPPY: _unsnappy, LZ4: _unlz4, ZSTD: _unzstd}
