"""The fast NDJSON encoder (orjson over the stage values) writes exactly what json.dumps writes from the plain
tree: on every event of every capture, and on the values where orjson's spelling differs (floats in exponent
notation, nan, integers past 64 bits, control characters, bytes that are not text)."""

from __future__ import annotations

import dataclasses
import glob
import io
import json
import math
import os

import pytest

from kdissect.capture import open_capture
from kdissect.dissector import Options, file_dissector
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.schema.tree import Struct, UnknownTag
from kdissect.views.json_lines import (
    JsonLinesWriter,
    connection_end_json,
    encode,
    exchange_tree,
    notice_json,
    streamed,
    value_json,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURES = sorted(glob.glob(os.path.join(ROOT, "captures", "*.pcap")))
PUBLIC = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "captures-public", "*.pcap*")))


def reference(obj: dict) -> bytes:
    """What kdissect wrote before the fast path: json.dumps of the plain tree."""
    return (json.dumps(value_json(obj), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def trees(path: str):
    """Every event as its tree, TLS captures read with their key logs (or the secrets their pcapng embeds)."""
    keylog = os.path.splitext(path)[0] + ".keylog"
    keys = open(keylog, "rb").read() if os.path.exists(keylog) else b""
    with open_capture(path) as capture:
        for event in file_dissector(capture, Options(tls_keylog=keys)).run(capture.packets()):
            if isinstance(event, Exchange):
                yield exchange_tree(event)
            elif isinstance(event, Notice):
                yield notice_json(event)
            elif isinstance(event, ConnectionEnd):
                yield connection_end_json(event)


@pytest.mark.parametrize("path", CAPTURES + PUBLIC, ids=os.path.basename)
def test_every_event_of_a_capture_encodes_as_json_dumps_does(path):
    count = 0
    for obj in trees(path):
        assert encode(obj) == reference(obj)
        count += 1
    assert count > 0


@pytest.fixture
def in_small_pieces(monkeypatch):
    """The streaming writer cut as fine as it goes: two elements (or 64 bytes of records) a piece, each piece
    handed on at once."""
    from kdissect.views import json_lines

    monkeypatch.setattr(json_lines, "PIECE", 2)
    monkeypatch.setattr(json_lines, "PIECE_BYTES", 64)
    monkeypatch.setattr(json_lines, "FLUSH", 1)


@pytest.mark.parametrize("path", CAPTURES + PUBLIC, ids=os.path.basename)
def test_every_exchange_streamed_in_pieces_is_the_same_line(path, in_small_pieces):
    """`streamed` writes a large exchange a few records or elements at a time; joined, the pieces are the line."""
    count = 0
    for obj in trees(path):
        if obj["type"] == "exchange":
            assert b"".join(streamed(obj)) == encode(obj)
            count += 1
    assert count > 0


FLOATS = [0.0, -0.0, 1.5, 0.1, 1e-4, 9.999e-5, 1e-5, 1e16, 1e15, 1.7976931348623157e308, 5e-324, -2.5e-7, math.inf, -math.inf, math.nan]


def exchange_with(struct: Struct) -> dict:
    return {"type": "exchange", "layout": 1, "latency_ms": None, "request": {"body": struct}}


@pytest.mark.parametrize("value", FLOATS, ids=repr)
def test_a_float_field_is_spelt_as_json_dumps_spells_it(value):
    struct = Struct(("Value", "Values"), [value, [value, 2.0]])
    assert encode(exchange_with(struct)) == reference(exchange_with(struct)) == b"".join(streamed(exchange_with(struct)))


@pytest.mark.parametrize("value", [2**63, 2**64, -(2**63) - 1, 2**70])
def test_an_integer_past_64_bits_is_written_whole(value):
    obj = exchange_with(Struct(("Offset",), [value]))
    assert encode(obj) == reference(obj) == b"".join(streamed(obj))
    assert json.loads(encode(obj))["request"]["body"]["Offset"] == value


@pytest.mark.parametrize(
    "data",
    [b"plain", b"tab\tnew\nline\r", b"bell\x07", b"del\x7f", b"\xff\xfe", "h\u00e9 \u2028 \U0001f600".encode(), b""],
    ids=repr,
)
def test_bytes_text_and_control_characters(data):
    struct = Struct(("Key", "Name", "unknown tag 9"), [data, data.decode("utf-8", "replace"), UnknownTag(9, data, 0)])
    assert encode(exchange_with(struct)) == reference(exchange_with(struct))


def test_annotations_and_nested_structs():
    inner = Struct(("TopicId",), [b"\x00" * 16])
    inner.annotations = {"TopicId": "orders"}
    obj = exchange_with(Struct(("Topics", "Ratio"), [[inner, inner], 1e-9]))
    assert encode(obj) == reference(obj) == b"".join(streamed(obj))


def test_a_text_stream_gets_the_same_lines_as_a_byte_stream():
    obj = exchange_with(Struct(("Name",), ["h\u00e9"]))
    text = io.StringIO()
    JsonLinesWriter(text).write(obj)
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8")
    JsonLinesWriter(stream).write(obj)
    stream.flush()
    assert text.getvalue().encode() == raw.getvalue() == reference(obj)


def test_a_dataclass_value_with_a_float():
    @dataclasses.dataclass
    class Odd:
        ratio: float
        ratios: list

    obj = exchange_with(Struct(("Odd",), [Odd(1e-7, [2.5e20, 1.0])]))
    assert encode(obj) == reference(obj)
