"""Bounds on what is built, not only on bytes: records per batch, per exchange and per capture, array elements.

Past each budget the rest is counted and named by a diagnostic; memory stays flat however many there are.
"""

from __future__ import annotations

import tracemalloc

import pytest

from kdissect.decode.body import CompiledBodies
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.limits import Limits
from kdissect.records import Budget, decode_records
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import BUILTIN
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response
from kdissect.testing.record_encoder import encode_message_set

METADATA, PRODUCE = 3, 0
SCALES = (1, 2, 4, 8)


def _tiny(n: int, codec: str = "zstd") -> bytes:
    return encode_batch([Draft(None, b"v") for _ in range(n)], codec=codec)


def _peak(work, *args, **kwargs) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = work(*args, **kwargs)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _not_shown(rs) -> list[str]:
    return [d.message for d in rs.diagnostics if d.code == "records.not-shown"]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_batch_past_its_record_budget_is_counted_not_built(codec):
    limits = Limits(max_records_batch=1000)
    rs = decode_records(_tiny(5000, codec), limits=limits)
    (batch,) = rs.batches
    assert len(batch.records) == 1000 and batch.record_count == 5000
    assert [m.split(" counted")[0] for m in _not_shown(rs)] == ["4000 records"]
    assert [r.offset for r in batch.records] == list(range(1000))
    assert rs.not_shown == 4000 and sum(1 for _ in rs.records()) + rs.not_shown == 5000  # totals still add up
    assert not any(d.code == "batch.record-count-mismatch" for d in rs.diagnostics)


def test_peak_memory_stays_flat_past_the_batch_budget():
    """Tiny records at 1x..8x: what is built stops at the budget, so the peak grows only with the payload's bytes."""
    limits = Limits(max_records_batch=2000)
    peaks, payloads = [], []
    for scale in SCALES:
        blob = _tiny(20_000 * scale)
        rs, peak = _peak(decode_records, blob, limits=limits)
        assert sum(len(b.records) for b in rs.batches) == 2000
        peaks.append(peak)
        payloads.append(rs.batches[0].uncompressed_size)
    growth = [p - peaks[0] for p in peaks]
    assert growth[-1] <= 2 * (payloads[-1] - payloads[0]), (peaks, payloads)  # the decompressed bytes, no objects
    generous = Limits(max_records_batch=10**6, max_records_exchange=10**6)
    unbounded, peak = _peak(decode_records, _tiny(20_000 * 8), limits=generous)
    assert len(unbounded.batches[0].records) == 160_000 and peaks[-1] * 4 < peak, (peaks, peak)


def test_the_exchange_budget_spans_batches_and_fields():
    limits = Limits(max_records_batch=600, max_records_exchange=1500)
    budget = Budget(limits.max_decompressed_exchange, limits.max_records_exchange)
    blob = b"".join(_tiny(500) for _ in range(3))
    first = decode_records(blob, limits=limits, budget=budget)
    assert [len(b.records) for b in first.batches] == [500, 500, 497]  # each batch costs one besides its records
    second = decode_records(blob, limits=limits, budget=budget)
    assert second.batches == () and _not_shown(second)[0].startswith("3 batches or messages counted")
    assert second.not_shown == 1500  # by their headers' counts


def test_legacy_wrappers_count_their_inner_messages():
    blob = encode_message_set([Draft(b"k", b"v") for _ in range(300)], magic=1, codec="gzip")
    rs = decode_records(blob, limits=Limits(max_records_batch=100))
    (wrapper,) = rs.batches
    assert len(wrapper.messages) == 100 and _not_shown(rs)[0].startswith("200 messages counted")
    assert wrapper.messages[-1].offset == 99  # offsets still count back from the wrapper's, past the cut


def _produce_capture(batches: int, per_batch: int) -> list:
    conv = Conversation(clock=Clock())
    packets = conv.handshake()
    for correlation in range(1, batches + 1):
        records = _tiny(per_batch)
        values = {"Acks": 1, "TimeoutMs": 100, "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": records}]}]}
        packets += conv.send(CLIENT, request(PRODUCE, 8, correlation, encode_body(PRODUCE, 8, "request", values)))
        packets += conv.send(SERVER, response(correlation, encode_body(PRODUCE, 8, "response", {"Responses": []})))
    return packets


def test_the_capture_budget_is_what_the_traffic_earns():
    """A capture starts with `max_records_capture` and earns one record per 8 bytes of frames: tiny records
    compressed a hundredfold soon spend it, and what follows is counted, not built."""
    limits = Limits(max_records_capture=2500)
    exchanges = [e for e in make_dissector(Options(limits=limits)).run(_produce_capture(6, 1000)) if isinstance(e, Exchange)]
    built = [sum(len(b.records) + 1 for placed in e.request.body.records for b in placed.records.batches) for e in exchanges]
    earned = 2500 + sum((e.request.frame.size + e.response.frame.size) // 8 for e in exchanges)
    assert built[:2] == [1001, 1001] and built[-1] < 1001 and sum(built) <= earned
    told = [[d.message for d in e.request.diagnostics if d.code == "records.not-shown"] for e in exchanges]
    assert told[0] == [] and told[-1] and "max_records_capture 2500" in told[-1][0]


def _metadata_request(topics: int) -> bytes:
    values = {"Topics": [{"Name": f"t{i}"} for i in range(topics)], "AllowAutoTopicCreation": True}
    return encode_body(METADATA, 4, "request", values)


def _raw_records(buf: bytes, start: int, end: int) -> bytes:
    return bytes(buf[start:end])


def test_array_elements_past_the_budget_are_read_and_counted_not_kept():
    bodies = CompiledBodies(BUILTIN, _raw_records, keep=100)
    body, diagnostics = bodies.decode(METADATA, 4, "request", _metadata_request(1000), 0)
    assert len(body.fields["Topics"]) == 100 and body.fields["Topics"][-1]["Name"] == "t99"
    assert body.fields["AllowAutoTopicCreation"] is True  # what follows the array still decodes
    assert diagnostics == []  # the decoder tells the exchange, below


@pytest.mark.parametrize("kind", ["structs", "strings", "fixed"])
def test_peak_memory_of_huge_arrays_stays_flat(kind):
    """An array of 1x..8x elements under a budget of 1000: the peak is the body's bytes, not its elements."""
    bodies = CompiledBodies(BUILTIN, _raw_records, keep=1000)
    peaks = []
    for scale in SCALES:
        n = 25_000 * scale
        if kind == "structs":
            key, version, direction, values = METADATA, 4, "request", {"Topics": [{"Name": ""}] * n}
        elif kind == "strings":
            key, version, direction, values = 15, 0, "request", {"Groups": [""] * n}  # DescribeGroups
        else:
            values = {"GroupId": "g", "Topics": [{"Name": "t", "PartitionIndexes": [1] * n}]}
            key, version, direction = 9, 1, "request"
        data = encode_body(key, version, direction, values)
        (body, _), peak = _peak(bodies.decode, key, version, direction, data, 0)
        assert body.fields is not None
        peaks.append(peak - len(data))
    assert peaks[-1] < 2 * peaks[0] + 200_000, peaks


def test_exchanges_name_what_was_cut():
    conv = Conversation(clock=Clock())
    packets = conv.handshake() + conv.send(CLIENT, request(METADATA, 4, 1, _metadata_request(500)))
    packets += conv.send(SERVER, response(1, encode_body(METADATA, 4, "response", {"Brokers": [], "Topics": []})))
    (exchange,) = [e for e in make_dissector(Options(limits=Limits(max_array_elements=50))).run(packets) if isinstance(e, Exchange)]
    assert [d.message for d in exchange.request.diagnostics if d.code == "body.array-cut"] == [
        "Topics: 500 elements, the first 50 kept (max_array_elements)"
    ]


class _Discard:
    """A UTF-8 text stream whose byte buffer counts what it is given and keeps none of it."""

    encoding = "utf-8"

    def __init__(self) -> None:
        self.buffer = self
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def flush(self) -> None:
        pass


def test_the_json_writer_streams_a_large_exchange():
    """One Produce of 10k..40k records: its NDJSON line grows fourfold, while what writing it takes stays flat, as it
    is made a few records at a time; built whole (records' JSON objects, then the line) it grows with the line."""
    from kdissect.views.json_lines import JsonLinesWriter, exchange_tree

    streamed, whole, written = [], [], []
    for scale in (1, 2, 4):
        events = make_dissector(Options()).run(_produce_capture(1, 10_000 * scale))
        (exchange,) = [e for e in events if isinstance(e, Exchange)]
        out = _Discard()
        streamed.append(_peak(JsonLinesWriter(out).write_exchange, exchange)[1])
        written.append(out.written)
        whole.append(_peak(JsonLinesWriter(_Discard()).write, exchange_tree(exchange))[1])
    assert written[2] > 3.5 * written[0], written
    assert streamed[2] < 1.3 * streamed[0] and streamed[2] < written[2] // 8, (streamed, written)
    assert whole[2] > 3 * whole[0], whole


def test_nested_compressed_fan_out_stays_within_the_record_budgets():
    """gzip wrappers of wrappers of wrappers, each holding 12..48 copies of the level below (1,728 to 110,592
    messages from a few hundred bytes): the record budgets stop what is built, so dissecting and writing the exchange
    peaks alike at every fan-out, and the messages past the budgets are counted."""
    from kdissect.testing.record_encoder import nested_fan_out
    from kdissect.views.json_lines import JsonLinesWriter

    limits = Limits(max_records_batch=500, max_records_exchange=1000)
    peaks = []
    for fanout in (12, 24, 48):
        values = {
            "Acks": 1,
            "TimeoutMs": 100,
            "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": nested_fan_out(fanout, 3)}]}],
        }
        conv = Conversation(clock=Clock())
        packets = conv.handshake() + conv.send(CLIENT, request(PRODUCE, 2, 1, encode_body(PRODUCE, 2, "request", values)))
        out = _Discard()

        def dissect_and_write(packets=packets, out=out):
            exchanges = [e for e in make_dissector(Options(limits=limits)).run(packets) if isinstance(e, Exchange)]
            writer = JsonLinesWriter(out)
            for exchange in exchanges:
                writer.write_exchange(exchange)
            return exchanges

        (exchange,), peak = _peak(dissect_and_write)
        peaks.append(peak)
        (placed,) = exchange.request.body.records
        assert placed.records.not_shown > 0 and sum(1 for _ in placed.records.records()) <= 1000, fanout
    assert peaks[2] < 1.5 * peaks[0], peaks
