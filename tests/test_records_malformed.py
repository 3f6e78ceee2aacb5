"""Broken bytes: decoding goes as far as it can, says where it stopped, and never raises."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.limits import Limits
from kdissect.records import decode_records
from kdissect.records.codecs import GZIP
from kdissect.records.encode import Draft, compress, encode_batch, encode_message
from kdissect.testing.record_encoder import encode_message_set
from kdissect.wire import write_varint

RECORDS = [Draft(b"k%d" % i, b"value-%d" % i, (("h", b"%d" % i),), 1000 + i) for i in range(4)]


def _codes(rs) -> list[str]:
    return [d.code for d in rs.diagnostics]


def _blob() -> tuple[bytes, list[int]]:
    """A v2 batch, a gzip v2 batch, a magic 1 snappy wrapper and two magic 0 messages; and where each ends."""
    parts = [
        encode_batch(RECORDS, base_offset=0),
        encode_batch(RECORDS, codec="gzip", base_offset=4),
        encode_message_set(RECORDS, magic=1, codec="snappy", base_offset=8),
        encode_message_set(RECORDS[:2], magic=0, base_offset=12),
    ]
    blob = b"".join(parts)
    boundaries = [0]
    pos = 0
    while pos < len(blob):
        pos += 12 + struct.unpack_from(">i", blob, pos + 8)[0]
        boundaries.append(pos)
    return blob, boundaries


def test_every_cut_point_is_a_partial_tail_or_a_clean_end():
    blob, boundaries = _blob()
    assert decode_records(blob).diagnostics == ()
    for cut in range(len(blob) + 1):
        rs = decode_records(blob[:cut])
        complete = [b for b in boundaries if b <= cut]
        assert len(rs.batches) == len(complete) - 1
        if cut in boundaries:
            assert rs.diagnostics == () and rs.truncated == 0
        else:
            (note,) = rs.diagnostics
            assert (note.code, note.severity, note.scope, note.offset) == ("batch.truncated", "note", "batch", complete[-1])
            assert rs.truncated == cut - complete[-1]


def test_corrupt_crc_is_reported_and_records_still_decode():
    batch = bytearray(encode_batch(RECORDS))
    batch[-1] ^= 0xFF
    rs = decode_records(bytes(batch))
    assert _codes(rs) == ["batch.crc-mismatch"]
    assert not rs.batches[0].crc_valid
    assert [r.key for r in rs.records()] == [d.key for d in RECORDS]


def test_corrupt_legacy_crc_is_reported_and_message_still_decodes():
    message = bytearray(encode_message(5, magic=1, key=b"k", value=b"v", timestamp=9))
    message[-1] ^= 0xFF
    rs = decode_records(bytes(message))
    assert _codes(rs) == ["messageset.crc-mismatch"]
    (m,) = rs.batches
    assert not m.crc_valid and m.key == b"k" and m.value == bytes([ord("v") ^ 0xFF])


def _with_records_section(records: bytes, count: int) -> bytes:
    """A v2 batch whose records section is `records` as given (CRC kept valid, so only the records are wrong)."""
    from kdissect.records.batch import CRC_START, HEADER
    from kdissect.records.crc import crc32c

    header = bytearray(HEADER.pack(0, HEADER.size - 12 + len(records), 0, 2, 0, 0, count - 1, 0, 0, -1, -1, -1, count))
    batch = header + records
    struct.pack_into(">I", batch, CRC_START - 4, crc32c(bytes(batch[CRC_START:])))
    return bytes(batch)


def _record(body: bytes) -> bytes:
    return write_varint(len(body)) + body


def test_a_record_cut_short_inside_a_complete_batch():
    good = _record(b"\x00\x00\x00\x02k\x02v\x00")
    rs = decode_records(_with_records_section(good + good[:-3], 2))
    assert _codes(rs) == ["record.truncated", "batch.record-count-mismatch"]
    assert [r.key for r in rs.records()] == [b"k"]
    assert rs.diagnostics[0].offset == 61 + len(good)


def test_too_long_varint():
    body = b"\x00\x00\x00" + b"\x81\x80\x80\x80\x80\x00" + b"k\x00\x00"
    rs = decode_records(_with_records_section(_record(body), 1))
    assert "varint.too-long" in _codes(rs)


def test_varint_running_past_the_end():
    rs = decode_records(_with_records_section(b"\x80", 1))
    assert _codes(rs)[0] == "varint.truncated"


def test_record_fields_disagreeing_with_the_record_length():
    body = b"\x00\x00\x00\x02k\x02v\x00"
    padded = _record(body + b"\xff\xff")
    rs = decode_records(_with_records_section(padded + _record(body), 2))
    assert _codes(rs) == ["record.bad-length"]
    assert [r.value for r in rs.records()] == [b"v", b"v"]


def test_header_key_that_is_not_utf8_stays_bytes():
    body = b"\x00\x00\x00\x01\x01\x02" + b"\x04\xff\xfe" + b"\x02x"
    rs = decode_records(_with_records_section(_record(body), 1))
    assert _codes(rs) == ["record.header-key-not-utf8"]
    (record,) = rs.records()
    assert record.headers == ((b"\xff\xfe", b"x"),)


def test_impossible_header_count():
    body = b"\x00\x00\x00\x01\x01" + write_varint(1000)
    rs = decode_records(_with_records_section(_record(body), 1))
    assert _codes(rs) == ["record.bad-header-count"]


def test_unknown_magic_is_skipped_by_its_size():
    weird = bytearray(encode_batch(RECORDS))
    weird[16] = 7
    rs = decode_records(bytes(weird) + encode_batch(RECORDS, base_offset=4))
    assert _codes(rs) == ["batch.bad-magic"]
    assert [r.offset for r in rs.records()] == [4, 5, 6, 7]


def test_size_too_small_to_frame_stops_decoding():
    bad = struct.pack(">qi", 0, 3) + b"\x00" * 30
    rs = decode_records(encode_batch(RECORDS) + bad)
    assert _codes(rs) == ["batch.bad-length"]
    assert len(rs.batches) == 1 and rs.diagnostics[0].offset == len(encode_batch(RECORDS))


def test_v2_length_below_its_header_is_skipped():
    short = struct.pack(">qiib", 0, 40, 0, 2) + b"\x00" * 35
    rs = decode_records(short + encode_batch(RECORDS))
    assert _codes(rs) == ["batch.bad-length"]
    assert len(list(rs.records())) == 4


def test_legacy_key_length_overrunning_the_message():
    message = bytearray(encode_message(0, magic=0, key=b"abc", value=b"xyz"))
    struct.pack_into(">i", message, 18, 500)
    rs = decode_records(bytes(message))
    assert "messageset.bad-length" in _codes(rs)


def test_empty_blob():
    rs = decode_records(b"")
    assert rs.batches == () and rs.diagnostics == () and rs.truncated == 0


def test_memoryview_and_bytearray_input():
    blob, _ = _blob()
    expected = decode_records(blob)
    assert decode_records(memoryview(blob)) == expected == decode_records(bytearray(blob))


def _never_fails(data: bytes, limits: Limits = Limits()) -> None:
    rs = decode_records(data, limits=limits)
    assert "records.internal-error" not in _codes(rs), rs.diagnostics
    assert all(d.severity in ("error", "warning", "note") for d in rs.diagnostics)


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=300))
def test_garbage_never_raises(data):
    _never_fails(data)


@settings(max_examples=300, deadline=None, database=None)
@given(st.data())
def test_mutated_blobs_never_raise(data):
    blob, _ = _blob()
    mutated = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(mutated) - 1))
        mutated[i] = data.draw(st.integers(0, 255))
    _never_fails(bytes(mutated), Limits(max_decompressed_batch=1 << 16))


@pytest.mark.parametrize("magic", [0, 1])
def test_nesting_beyond_the_limit_is_not_opened(magic):
    """Kafka never nests compressed wrappers, but bytes can: ten levels, limit eight."""
    blob = encode_message(0, magic=magic, key=b"leaf", value=b"deep")
    for _ in range(10):
        blob = encode_message(0, magic=magic, value=compress(GZIP, blob), attributes=GZIP)
    rs = decode_records(blob)
    assert _codes(rs) == ["messageset.too-deep"]
    depth, m = 0, rs.batches[0]
    while m.messages:
        depth, m = depth + 1, m.messages[0]
    assert depth == 8 and m.codec == "gzip"
    deep = decode_records(blob, limits=Limits(max_nesting=20))
    assert deep.diagnostics == ()
    assert [(r.key, r.value) for r in deep.records()] == [(b"leaf", b"deep")]
