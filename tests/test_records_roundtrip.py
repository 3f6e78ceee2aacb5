"""Encode arbitrary records with kdissect's encoder, decode them, get them back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.records import LegacyMessage, RecordBatch, decode_records
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import DATA_SCHEMAS
from kdissect.schema.encoder import Encoder
from kdissect.schema.tree import Struct
from kdissect.testing.record_encoder import control_record, encode_message_set, end_txn_marker

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
INT64 = st.integers(-(2**63), 2**63 - 1)
payload = st.none() | st.binary(max_size=40) | st.sampled_from([b"", b"\x00" * 300, bytes(range(256))])
header_key = st.sampled_from(["a", "trace", "é", ""]) | st.text(max_size=8)
header = st.tuples(header_key, payload)
timestamps = st.integers(0, 2**41) | st.just(-1)
drafts = st.builds(Draft, key=payload, value=payload, headers=st.lists(header, max_size=4).map(tuple), timestamp=timestamps)


@settings(max_examples=150, deadline=None, database=None)
@given(
    records=st.lists(drafts, max_size=30),
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(0, 2**62),
    producer=st.tuples(st.integers(-1, 2**62), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1)),
    transactional=st.booleans(),
    leader_epoch=st.integers(-1, 2**31 - 1),
)
def test_v2_roundtrip(records, codec, base_offset, producer, transactional, leader_epoch):
    data = encode_batch(
        records,
        codec=codec,
        base_offset=base_offset,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        transactional=transactional,
        partition_leader_epoch=leader_epoch,
    )
    rs = decode_records(data)
    assert rs.diagnostics == ()
    (batch,) = rs.batches
    assert isinstance(batch, RecordBatch)
    assert batch.crc_valid and batch.codec == codec and batch.transactional == transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.partition_leader_epoch == leader_epoch and batch.record_count == len(records)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in batch.records] == [(d.key, d.value, d.headers, d.timestamp) for d in records]
    assert [r.offset for r in batch.records] == [base_offset + i for i in range(len(records))]


@settings(max_examples=150, deadline=None, database=None)
@given(
    records=st.lists(st.builds(Draft, key=payload, value=payload, timestamp=timestamps), max_size=20),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(0, 2**62),
)
def test_legacy_roundtrip(records, magic, codec, base_offset):
    data = encode_message_set(records, magic=magic, codec=codec, base_offset=base_offset)
    rs = decode_records(data)
    assert rs.diagnostics == ()
    leaves = list(rs.records())
    assert all(isinstance(m, LegacyMessage) and m.crc_valid and m.magic == magic for m in leaves)
    assert [(m.key, m.value) for m in leaves] == [(d.key, d.value) for d in records]
    assert [m.offset for m in leaves] == [base_offset + i for i in range(len(records))]
    assert [m.timestamp for m in leaves] == ([d.timestamp for d in records] if magic else [None] * len(records))


@settings(max_examples=60, deadline=None, database=None)
@given(
    parts=st.lists(
        st.tuples(
            st.sampled_from([0, 1, 2]),
            st.sampled_from(CODECS),
            st.lists(st.builds(Draft, key=payload, value=payload), min_size=1, max_size=5),
        ),
        max_size=6,
    )
)
def test_mixed_magics_in_one_blob(parts):
    """A Fetch response may hold v1 sets and v2 batches side by side; each entry's magic byte decides."""
    blob = b""
    expected = []
    offset = 0
    for magic, codec, records in parts:
        if magic == 2:
            blob += encode_batch(records, codec=codec, base_offset=offset)
        else:
            blob += encode_message_set(records, magic=magic, codec=codec, base_offset=offset)
        expected += [(offset + i, d.key, d.value) for i, d in enumerate(records)]
        offset += len(records)
    rs = decode_records(blob)
    assert rs.diagnostics == () and rs.size == len(blob)
    assert [(r.offset, r.key, r.value) for r in rs.records()] == expected
    assert [r.magic if isinstance(r, LegacyMessage) else 2 for r in rs.records()] == [m for m, _, records in parts for _ in records]


def test_many_records_and_large_values():
    records = [Draft(b"k%d" % i, bytes([i % 251]) * (i * 37 % 9000), (("n", b"%d" % i),), 1000 + i) for i in range(3000)]
    for codec in CODECS:
        rs = decode_records(encode_batch(records, codec=codec, base_offset=7))
        assert rs.diagnostics == ()
        assert [(r.key, r.value, r.headers) for r in rs.records()] == [(d.key, d.value, d.headers) for d in records]


def test_log_append_time_takes_the_batch_max_timestamp():
    records = [Draft(b"a", b"1", timestamp=10), Draft(b"b", b"2", timestamp=30)]
    (batch,) = decode_records(encode_batch(records, log_append_time=True, max_timestamp=99)).batches
    assert batch.timestamp_type == "LogAppendTime"
    assert [r.timestamp for r in batch.records] == [99, 99]
    assert [r.timestamp_delta for r in batch.records] == [0, 20]


def test_legacy_log_append_time_wrapper_stamps_its_messages():
    records = [Draft(b"a", b"1", timestamp=10), Draft(b"b", b"2", timestamp=30)]
    rs = decode_records(encode_message_set(records, magic=1, codec="gzip", log_append_time=True, wrapper_timestamp=77))
    (wrapper,) = rs.batches
    assert wrapper.timestamp_type == "LogAppendTime" and wrapper.timestamp == 77
    assert [m.timestamp for m in wrapper.messages] == [77, 77]


def test_delete_horizon_flag():
    (batch,) = decode_records(encode_batch([Draft(b"k", None, timestamp=5)], delete_horizon=True)).batches
    assert batch.has_delete_horizon and batch.records[0].value is None


def test_duplicate_headers_and_null_header_values_keep_order():
    headers = (("x", b"1"), ("y", None), ("x", b"2"), ("x", None))
    (record,) = decode_records(encode_batch([Draft(None, None, headers)])).records()
    assert record.headers == headers and record.key is None and record.value is None


def test_commit_and_abort_markers():
    blob = encode_batch([end_txn_marker(True, 17)], control=True, transactional=True, producer_id=9, producer_epoch=1, base_offset=40)
    blob += encode_batch([end_txn_marker(False, 18, version=0)], control=True, transactional=True, producer_id=9, base_offset=41)
    rs = decode_records(blob)
    assert rs.diagnostics == ()
    commit, abort = rs.records()
    assert rs.batches[0].control and rs.batches[0].transactional
    assert (commit.control.name, commit.control.type, commit.control.value["CoordinatorEpoch"]) == ("COMMIT", 1, 17)
    assert (abort.control.name, abort.control.type, abort.control.value["CoordinatorEpoch"]) == ("ABORT", 0, 18)
    assert commit.control.schema == "EndTxnMarker" and commit.control.value["Version"] == 0


def test_kraft_control_values_are_read_with_their_schema():
    leader_change = DATA_SCHEMAS["LeaderChangeMessage"][0]
    fields = Struct(
        ("Version", "LeaderId", "Voters", "GrantingVoters"),
        [0, 3, [Struct(("VoterId",), [1]), Struct(("VoterId",), [3])], [Struct(("VoterId",), [3])]],
    )
    value = Encoder().encode(leader_change.fields, 0, True, fields)
    rs = decode_records(encode_batch([control_record(2, value)], control=True))
    (record,) = rs.records()
    assert not rs.diagnostics
    assert record.control.name == "LEADER_CHANGE" and record.control.schema == "LeaderChangeMessage"
    assert record.control.value == fields
    assert record.value == value
    (unknown,) = decode_records(encode_batch([control_record(42, b"")], control=True)).records()
    assert unknown.control.name == "UNKNOWN-42" and unknown.control.schema is None


def test_malformed_control_key_is_a_diagnostic():
    rs = decode_records(encode_batch([Draft(b"\x00", b"")], control=True))
    assert [d.code for d in rs.diagnostics] == ["control.malformed"]
    (record,) = rs.records()
    assert record.control is None and record.key == b"\x00"
