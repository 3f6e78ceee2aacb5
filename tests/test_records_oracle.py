"""kafka-python as an independent oracle: its builders make the bytes, its readers and ours must agree."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from kdissect.records import LegacyMessage, RecordBatch, decode_records

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BIG = 1 << 30


def _rows(n: int, with_headers: bool = True):
    """Compressible rows (kafka-python sends uncompressed when compression does not pay), nulls included."""
    rows = []
    for i in range(n):
        key = None if i % 5 == 3 else b"key-%d" % (i % 7)
        value = None if i % 9 == 4 else b"value " * (i % 13) + bytes([i % 256])
        headers = [("h", b"1"), ("h", None), ("trace", b"t" * i)][: i % 4] if with_headers else []
        rows.append((1_700_000_000_000 + 37 * i, key, value, headers))
    return rows


def _kp_records(batch) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


def _ours(records) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


@pytest.mark.parametrize("codec", list(CODECS))
def test_v2_batch_matches_kafka_python(codec):
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=CODECS[codec], is_transactional=False, producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=BIG
    )
    for offset, (ts, key, value, headers) in enumerate(_rows(60)):
        builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    data = bytes(builder.build())

    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    rs = decode_records(data)
    assert rs.diagnostics == ()
    (batch,) = rs.batches
    assert isinstance(batch, RecordBatch)
    assert batch.codec == codec
    assert _ours(batch.records) == _kp_records(DefaultRecordBatch(data))
    assert (batch.base_offset, batch.crc, batch.attributes, batch.last_offset_delta) == (
        theirs.base_offset,
        theirs.crc,
        theirs.attributes,
        theirs.last_offset_delta,
    )
    assert (batch.base_timestamp, batch.max_timestamp, batch.record_count) == (theirs.first_timestamp, theirs.max_timestamp, 60)
    assert batch.crc_valid and batch.span == (0, len(data)) and batch.batch_length == len(data) - 12
    if codec != "none":
        assert batch.compressed_size < batch.uncompressed_size


def test_v2_transactional_producer_fields_match_kafka_python():
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=True, producer_id=4711, producer_epoch=3, base_sequence=99, batch_size=BIG
    )
    builder.append(0, timestamp=5, key=b"k", value=b"v", headers=[])
    data = bytes(builder.build())
    theirs = DefaultRecordBatch(data)
    (batch,) = decode_records(data).batches
    assert batch.transactional and theirs.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4711, 3, 99)
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (4711, 3, 99)
    assert not batch.control and batch.timestamp_type == "CreateTime"


LEGACY = [(0, "none"), (1, "none"), (1, "gzip"), (1, "snappy"), (1, "lz4")]


@pytest.mark.parametrize("magic,codec", LEGACY)
def test_legacy_message_set_matches_kafka_python(magic, codec):
    rows = _rows(40, with_headers=False)
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=CODECS[codec], batch_size=BIG)
    for offset, (ts, key, value, _) in enumerate(rows):
        builder.append(offset, timestamp=ts, key=key, value=value)
    data = bytearray(builder.build())
    base = 1000
    if codec == "none":
        for pos, offset in _entry_positions(data):
            struct.pack_into(">q", data, pos, base + offset)
    else:
        # A broker gives a magic 1 wrapper the offset of its last inner message; kafka-python leaves 0 there.
        struct.pack_into(">q", data, 0, base + len(rows) - 1)
    data = bytes(data)

    theirs = [r for batch in MemoryRecords(data) for r in batch]
    rs = decode_records(data)
    assert rs.diagnostics == ()
    assert all(isinstance(m, LegacyMessage) and m.crc_valid for m in rs.batches)
    ours = list(rs.records())
    assert [(m.offset, m.timestamp, m.key, m.value) for m in ours] == [(r.offset, r.timestamp, r.key, r.value) for r in theirs]
    assert [m.offset for m in ours] == list(range(base, base + len(rows)))
    assert all(m.magic == magic and m.crc_valid and m.headers == () for m in ours)
    if codec != "none":
        (wrapper,) = rs.batches
        assert wrapper.codec == codec and len(wrapper.messages) == len(rows)
        assert wrapper.compressed_size == len(wrapper.value) < wrapper.uncompressed_size


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_legacy_magic0_compressed_inner_offsets_are_absolute(codec):
    if codec == "lz4":
        pytest.importorskip("xxhash", reason="kafka-python writes magic 0 lz4 (KAFKA-3160 framing) only with xxhash")
    rows = _rows(10, with_headers=False)
    builder = LegacyRecordBatchBuilder(magic=0, compression_type=CODECS[codec], batch_size=BIG)
    for i, (ts, key, value, _) in enumerate(rows):
        builder.append(500 + i, timestamp=ts, key=key, value=value)
    data = bytes(builder.build())
    theirs = list(LegacyRecordBatch(data, 0))
    rs = decode_records(data)
    assert [d.code for d in rs.diagnostics] == (["codec.lz4-legacy-checksum"] if codec == "lz4" else [])
    ours = list(rs.records())
    assert [(m.offset, m.timestamp, m.key, m.value) for m in ours] == [(r.offset, r.timestamp, r.key, r.value) for r in theirs]
    assert [m.offset for m in ours] == list(range(500, 510))
    assert all(m.timestamp is None and m.timestamp_type is None for m in ours)


def _entry_positions(data: bytes):
    pos = 0
    while pos < len(data):
        offset, size = struct.unpack_from(">qi", data, pos)
        yield pos, offset
        pos += 12 + size


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_memory_records_blob_of_several_batches(magic):
    parts = []
    offset = 0
    codecs = ["gzip", "none", "snappy", "lz4"] if magic < 2 else ["zstd", "none", "gzip", "lz4", "snappy"]
    if magic == 0:
        codecs.remove("lz4")
    for codec in codecs:
        builder = MemoryRecordsBuilder(magic, CODECS[codec], BIG, offset=offset)
        for ts, key, value, headers in _rows(25, with_headers=magic == 2):
            builder.append(ts, key, value, headers if magic == 2 else None)
        builder.close()
        parts.append(bytes(builder.buffer()))
        offset += 25
    data = b"".join(parts)
    rs = decode_records(data)
    assert rs.diagnostics == ()
    theirs = [r for batch in MemoryRecords(data) for r in batch]
    ours = list(rs.records())
    if magic == 2:
        assert _ours(ours) == [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    else:
        assert [(m.key, m.value, m.timestamp) for m in ours] == [(r.key, r.value, r.timestamp) for r in theirs]
    assert len(ours) == 25 * len(codecs)
