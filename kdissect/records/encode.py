"""Record batches and legacy messages written: the bytes `kdissect anonymize` puts back, and what tests build.

Anything the decoder reads can be written, including what a normal producer would not write (log-append
timestamps, control batches, nested wrappers through `encode_message`, KAFKA-3160 lz4 frames). Compression
follows Kafka's Java client (snappy xerial-framed in 32 KiB chunks, lz4 frames of independent blocks).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import cramjam
import lz4.frame
import zstandard

from kdissect.records.batch import CONTROL_BIT, CRC_START, DELETE_HORIZON_BIT, HEADER, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT
from kdissect.records.codecs import CODEC_IDS, GZIP, LZ4, NONE, SNAPPY, XERIAL_MAGIC, ZSTD, lz4_header_checksum_index
from kdissect.records.crc import crc32, crc32c, xxh32
from kdissect.records.values import Header
from kdissect.wire import write_varint


@dataclass(frozen=True, slots=True)
class Draft:
    """A record to encode. `offset_delta` defaults to its position in the batch."""

    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[Header, ...] = ()
    timestamp: int = 0
    offset_delta: int | None = None
    attributes: int = 0


def _nullable(data: bytes | None) -> bytes:
    return write_varint(-1) if data is None else write_varint(len(data)) + data


def encode_record(draft: Draft, offset_delta: int, base_timestamp: int) -> bytes:
    body = bytearray((draft.attributes,))
    body += write_varint(draft.timestamp - base_timestamp)
    body += write_varint(offset_delta)
    body += _nullable(draft.key)
    body += _nullable(draft.value)
    body += write_varint(len(draft.headers))
    for key, value in draft.headers:
        raw = key.encode() if isinstance(key, str) else key
        body += write_varint(len(raw)) + raw
        body += _nullable(value)
    return write_varint(len(body)) + bytes(body)


def encode_batch(
    records: Sequence[Draft],
    *,
    codec: str = "none",
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    log_append_time: bool = False,
    delete_horizon: bool = False,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    legacy_lz4: bool = False,
) -> bytes:
    """One v2 batch. Timestamps default to the first record's and the largest record's, and the last offset
    delta to the last record's, as producers write them (a compacted batch keeps a larger one: give it)."""
    codec_id = CODEC_IDS[codec]
    stamps = [r.timestamp for r in records] or [0]
    if base_timestamp is None:
        base_timestamp = stamps[0]
    if max_timestamp is None:
        max_timestamp = max(stamps)
    deltas = [i if r.offset_delta is None else r.offset_delta for i, r in enumerate(records)]
    if last_offset_delta is None:
        last_offset_delta = deltas[-1] if deltas else 0
    body = b"".join(encode_record(r, d, base_timestamp) for r, d in zip(records, deltas))
    if codec_id != NONE:
        body = compress(codec_id, body, legacy_lz4=legacy_lz4)
    attributes = (
        codec_id
        | (TIMESTAMP_TYPE_BIT if log_append_time else 0)
        | (TRANSACTIONAL_BIT if transactional else 0)
        | (CONTROL_BIT if control else 0)
        | (DELETE_HORIZON_BIT if delete_horizon else 0)
    )
    header = bytearray(HEADER.size)
    HEADER.pack_into(
        header,
        0,
        base_offset,
        HEADER.size - 12 + len(body),
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    batch = header + body
    struct.pack_into(">I", batch, CRC_START - 4, crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


def encode_message(
    offset: int, *, magic: int, key: bytes | None = None, value: bytes | None = None, timestamp: int = -1, attributes: int = 0
) -> bytes:
    """One log entry: offset, size and a v0 or v1 message."""

    def sized(data: bytes | None) -> bytes:
        return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data

    head = struct.pack(">bb", magic, attributes) + (struct.pack(">q", timestamp) if magic else b"")
    body = head + sized(key) + sized(value)
    return struct.pack(">qiI", offset, 4 + len(body), crc32(body)) + body


def compress(codec: int, data: bytes, *, legacy_lz4: bool = False) -> bytes:
    """Compress as Kafka's Java client does. `legacy_lz4` writes the KAFKA-3160 header checksum of pre-0.10
    clients."""
    if codec == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        out = bytearray(XERIAL_MAGIC + (1).to_bytes(4, "big") + (1).to_bytes(4, "big"))
        for i in range(0, len(data), 32 * 1024):
            chunk = bytes(cramjam.snappy.compress_raw(data[i : i + 32 * 1024]))
            out += len(chunk).to_bytes(4, "big") + chunk
        return bytes(out)
    if codec == LZ4:
        frame = lz4.frame.compress(data, block_linked=False, store_size=not legacy_lz4)
        if not legacy_lz4:
            return frame
        hc = lz4_header_checksum_index(frame)
        return frame[:hc] + bytes(((xxh32(frame[:hc]) >> 8) & 0xFF,)) + frame[hc + 1 :]
    if codec == ZSTD:
        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"cannot compress with codec {codec}")
