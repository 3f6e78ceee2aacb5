"""Varints, timestamps and the value classes."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.util import decode_varint as kafka_decode_varint
from kafka.record.util import encode_varint as kafka_encode_varint

from kdissect.records import LegacyMessage, Record, decode_records, format_timestamp
from kdissect.records.encode import Draft, encode_batch
from kdissect.testing.record_encoder import encode_message_set
from kdissect.wire import WireError, read_varint, read_varlong, write_varint


@settings(max_examples=300, database=None)
@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_roundtrip_and_kafka_python_agrees(value):
    data = write_varint(value)
    theirs = bytearray()
    kafka_encode_varint(value, theirs.append)
    assert data == bytes(theirs)
    assert read_varint(data + b"tail", 0) == (value, len(data))
    assert kafka_decode_varint(data, 0) == (value, len(data))


@settings(max_examples=300, database=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_roundtrip(value):
    data = write_varint(value)
    assert len(data) <= 10
    assert read_varlong(data, 0) == (value, len(data))


def test_varint_limits():
    with pytest.raises(WireError):
        read_varint(b"\xff\xff\xff\xff\xff\x01", 0)
    with pytest.raises(WireError):
        read_varlong(b"\xff" * 10 + b"\x01", 0)
    with pytest.raises(IndexError):
        read_varint(b"\xff\xff", 0)
    assert read_varint(b"\xff\xff\xff\xff\x0f", 0) == (-(2**31), 5)


def test_format_timestamp():
    assert format_timestamp(1714564800123) == "2024-05-01T12:00:00.123Z"
    assert format_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert format_timestamp(-1) == "none"
    assert format_timestamp(None) == "none"
    assert format_timestamp(-1001) == "1969-12-31T23:59:58.999Z"
    assert format_timestamp(2**62) == f"{2**62} (out of range)"
    assert format_timestamp(-(2**62)) == f"{-(2**62)} (out of range)"


def test_values_are_frozen_and_equal_by_value():
    (record,) = decode_records(encode_batch([Draft(b"k", b"v", (("h", None),), 12)])).records()
    assert type(record) is Record
    assert record == Record(0, 12, 0, 0, 0, b"k", b"v", (("h", None),))
    assert hash(record) == hash(Record(0, 12, 0, 0, 0, b"k", b"v", (("h", None),)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.value = b"x"  # type: ignore[misc]
    assert dataclasses.replace(record, value=b"x").value == b"x"
    rs = decode_records(encode_batch([Draft(b"k", b"v")]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        rs.batches[0].crc = 0  # type: ignore[misc]
    assert not hasattr(record, "__dict__")


def test_values_survive_pickle_and_copy():
    """Records are built by a fast constructor that retypes its instance; the result must be an ordinary one."""
    blob = encode_batch([Draft(b"k", b"v", (("a", None),), 5)]) + encode_message_set([Draft(b"k", b"v")], magic=1, codec="gzip")
    rs = decode_records(blob)
    assert pickle.loads(pickle.dumps(rs)) == rs == copy.deepcopy(rs)
    assert type(rs.batches[1]) is LegacyMessage and type(rs.batches[1].messages[0]) is LegacyMessage
