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

from kdissect.diagnostic import Severity
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
_FIRST_WINDOW = 256
"""Input first offered to a gzip member; doubled each time the member needs more."""

Problem = tuple[str, Severity, str]
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

    def add(self, chunk: bytes) -> None:
        if not chunk:
            return
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
    """gzip, several members in a row allowed (wbits 47 also takes a zlib stream).

    Each member is fed windows that double from `_FIRST_WINDOW`, so the `unused_data` zlib copies when a member
    ends is at most twice the member: many tiny members cost their own bytes, not the rest of the payload each.
    """
    data = memoryview(payload)
    n = len(data)
    pos = 0
    while pos < n:
        d = zlib.decompressobj(47)
        end, window = pos, _FIRST_WINDOW
        while not d.eof:
            if end >= n:
                problems.append(("codec.error", "error", "gzip: the stream ends before its end marker"))
                return
            start, end = end, min(n, end + window)
            sink.add(d.decompress(data[start:end], sink.room + 1))
            window *= 2
        pos = end - len(d.unused_data)
        if pos < n and bytes(data[pos : pos + 2]) != b"\x1f\x8b":
            problems.append(("codec.trailing-bytes", "warning", f"gzip: {n - pos} bytes after the last member"))
            return


def _unsnappy(payload: Buffer, sink: _Sink, problems: list[Problem]) -> None:
    """Raw snappy, or the xerial framing Kafka's Java client writes: a 16-byte header, then length-prefixed chunks.

    The header's version and compat int32s are ignored: some producers write them little-endian.
    """
    data = memoryview(payload)
    if data[:8] != XERIAL_MAGIC:
        _raw_snappy(data, sink)
        return
    n = len(data)
    if n < XERIAL_HEADER_SIZE:
        problems.append(("codec.error", "error", f"snappy: xerial header cut at {n} of 16 bytes"))
        return
    pos = XERIAL_HEADER_SIZE
    while pos < n:
        if pos + 4 > n:
            problems.append(("codec.error", "error", f"snappy: xerial chunk length cut at {pos}"))
            return
        size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        pos += 4
        if size < 0 or pos + size > n:
            problems.append(("codec.error", "error", f"snappy: xerial chunk of {size} bytes at {pos} overruns the payload"))
            return
        _raw_snappy(data[pos : pos + size], sink)
        pos += size


def _raw_snappy(chunk: Buffer, sink: _Sink) -> None:
    """One raw snappy block, its length preamble checked against the room before anything is allocated."""
    if cramjam.snappy.decompress_raw_len(chunk) > sink.room:
        sink.refuse()
    sink.add(bytes(cramjam.snappy.decompress_raw(chunk)))


def _unlz4(payload: Buffer, sink: _Sink, problems: list[Problem]) -> None:
    """lz4 frames, one after another, read at offsets into the payload; a KAFKA-3160 header checksum is repaired."""
    data = memoryview(payload)
    n = len(data)
    pos = 0
    while pos < n:
        if data[pos : pos + 4] != LZ4_MAGIC:
            problems.append(("codec.error", "error", f"lz4: {n - pos} bytes that do not start an lz4 frame"))
            return
        try:
            pos, ended = _lz4_frame(lz4.frame.create_decompression_context(), data, pos, sink)
        except RuntimeError as e:
            if "headerChecksum" not in str(e):
                raise
            context = lz4.frame.create_decompression_context()
            header_end = pos + lz4_header_checksum_index(data[pos:]) + 1
            _lz4_frame(context, memoryview(_repaired_lz4_header(data[pos:header_end], problems)), 0, sink)
            pos, ended = _lz4_frame(context, data, header_end, sink)
        if not ended:
            problems.append(("codec.error", "error", "lz4: the frame ends before its end mark"))
            return


def _lz4_frame(context: object, data: memoryview, pos: int, sink: _Sink) -> tuple[int, bool]:
    """Feed `data` from `pos` until the frame ends or the input runs out: where it stopped, and whether it ended.

    A call can return decoded output without reading input (a block decoded earlier, given out a step at a time).
    """
    while True:
        out, read, ended = lz4.frame.decompress_chunk(context, data[pos:], max_length=min(sink.room + 1, _STEP))
        pos += read
        sink.add(out)
        if ended:
            return pos, True
        if not out and not read:
            return pos, False


def lz4_header_checksum_index(frame: Buffer) -> int:
    """Where the one-byte header checksum sits: after magic, FLG, BD and the optional size and dictionary id."""
    flg = frame[4]
    return 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)


def _repaired_lz4_header(header: memoryview, problems: list[Problem]) -> bytes:
    """Kafka before 0.10 hashed the magic too (KAFKA-3160); old clients still send such frames. Put the right byte in.

    `header` ends with the checksum byte; only the header is copied, never the frame.
    """
    hc = len(header) - 1
    good = (xxh32(header[4:hc]) >> 8) & 0xFF
    if header[hc] == (xxh32(header[:hc]) >> 8) & 0xFF:
        problems.append(("codec.lz4-legacy-checksum", "note", "lz4: header checksum computed the pre-0.10 way (KAFKA-3160); tolerated"))
    else:
        problems.append(
            ("codec.lz4-header-checksum", "warning", f"lz4: header checksum {header[hc]:#04x}, expected {good:#04x}; decoded anyway")
        )
    return bytes(header[:hc]) + bytes((good,))


def _unzstd(payload: Buffer, sink: _Sink, problems: list[Problem]) -> None:
    """zstd frames, with or without a content size, read as a bounded stream."""
    with zstandard.ZstdDecompressor().stream_reader(memoryview(payload), read_across_frames=True) as reader:
        while True:
            chunk = reader.read(min(sink.room + 1, _STEP))
            if not chunk:
                return
            sink.add(chunk)


_DECOMPRESSORS = {GZIP: _gunzip, SNAPPY: _unsnappy, LZ4: _unlz4, ZSTD: _unzstd}
