"""Real taps (issue 14): damaged copies of the captures lose only the bytes that are missing.

Each test damages a capture of `captures/` the way SPAN ports, busy hosts and multi-queue NICs do (a segment
dropped, captured late, captured twice, segments reordered within one direction or across both), writes it as a
pcap with the project's writer, reads it back, and compares what kdissect makes of it with the undamaged
capture's decode:

- **late, duplicated or reordered segments**: every exchange of the original, with its pairing, its status, both
  frames, the decoded bodies and every record, comes out identically. Only what a late packet changes by itself is
  left out of the comparison: packet numbers, capture times and latencies.
- **one lost segment**: every exchange it does not touch is identical; the exchange it falls in keeps, batch by
  batch and record by record, every record batch the hole does not touch (when the hole lies inside a records
  field), and its diagnostics say how many bytes are missing and which records were lost.
- **a corrupt or cut pcap record header**: it costs that record, no more: the file reads as the capture without
  that packet, and the decode is the one of that capture.
"""

from __future__ import annotations

import io
import struct
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kdissect.capture import Packet
from kdissect.capture.source import CaptureFile
from kdissect.capture.writer import pcap_bytes
from kdissect.decode.body import Body
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange, Message
from kdissect.records.batch import HEADER
from kdissect.records.values import RecordBatch
from kdissect.testing import damage
from kdissect.views.json_lines import exchange_json

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
LEFT_OUT = ("packets", "id", "time", "ts_ns", "latency_ms", "queue_ms", "service_ms", "queued_behind")
"""What a damaged copy changes by its nature: packet numbers, and times (a late packet completes its message later)."""


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in LEFT_OUT}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def reread(packets: list[Packet]) -> list[Packet]:
    """The damaged packets as a file holds them: written by the pcap writer, read back by the reader."""
    with CaptureFile(io.BytesIO(pcap_bytes(packets, packets[0].linktype)), "damaged.pcap") as capture:
        return list(capture.packets())


def exchanges(packets: list[Packet]) -> dict[damage.Key, Exchange]:
    return {damage.exchange_key(e): e for e in make_dissector(Options()).run(packets) if isinstance(e, Exchange)}


def comparable(found: dict[damage.Key, Exchange]) -> dict[damage.Key, Any]:
    return {key: _strip(exchange_json(e)) for key, e in found.items()}


@cache
def baseline(name: str) -> tuple[list[Packet], dict[damage.Key, Exchange], dict[damage.Key, Any], list[damage.Segment]]:
    with CaptureFile(open(CAPTURES / f"{name}.pcap", "rb"), name) as capture:
        packets = list(capture.packets())
    found = exchanges(packets)
    return packets, found, comparable(found), damage.data_segments(packets)


def big_fetch(name: str) -> tuple[Exchange, list[damage.Segment]]:
    """The capture's largest Fetch response, and the data segments that carry it (its first one excepted)."""
    packets, found, _, segments = baseline(name)
    fetch = max((e for e in found.values() if e.api_key == 1 and e.response), key=lambda e: e.response.frame.size)
    frame = fetch.response.frame
    return fetch, [s for s in segments if frame.first_packet < packets[s.position].index <= frame.last_packet]


# -- late, duplicated, reordered: nothing is lost ---------------------------------------------------------------------

NAMES = ("consumer-group-confluent", "many-records-mtu1500", "large-values-mtu1500", "client-kcat")


@SETTINGS
@given(name=st.sampled_from(NAMES), pick=st.integers(0, 1 << 30), by=st.sampled_from([1, 2, 5, 20, 50]))
def test_a_segment_captured_late_loses_nothing(name: str, pick: int, by: int) -> None:
    packets, _, whole, segments = baseline(name)
    segment = segments[pick % len(segments)]
    by = min(by, damage.last_of_connection(packets, segment) - segment.position - 1)
    if by < 1:
        return  # the segment is its connection's last packet: there is no later to capture it at
    assert comparable(exchanges(reread(damage.delay(packets, segment.position, by)))) == whole


@SETTINGS
@given(name=st.sampled_from(NAMES), pick=st.integers(0, 1 << 30), after=st.integers(0, 60))
def test_a_segment_captured_twice_loses_nothing(name: str, pick: int, after: int) -> None:
    packets, _, whole, segments = baseline(name)
    segment = segments[pick % len(segments)]
    after = min(after, len(packets) - segment.position - 1)
    assert comparable(exchanges(reread(damage.duplicate(packets, segment.position, after)))) == whole


@SETTINGS
@given(name=st.sampled_from(NAMES), pick=st.integers(0, 1 << 30), distance=st.integers(1, 12))
def test_segments_swapped_within_one_direction_lose_nothing(name: str, pick: int, distance: int) -> None:
    """Two segments of one direction swapped, whatever the other direction sent between them (S4)."""
    packets, _, whole, segments = baseline(name)
    first = segments[pick % len(segments)]
    later = [s for s in segments if s.flow == first.flow and s.position > first.position]
    if not later:
        return
    second = later[min(distance, len(later)) - 1]
    assert comparable(exchanges(reread(damage.swap(packets, first.position, second.position)))) == whole


@SETTINGS
@given(name=st.sampled_from(NAMES), pick=st.integers(0, 1 << 30))
def test_segments_swapped_across_directions_lose_nothing(name: str, pick: int) -> None:
    """A data segment and the packet after it, whichever direction that one runs, captured the other way round."""
    packets, _, whole, segments = baseline(name)
    segment = segments[pick % len(segments)]
    if segment.position + 1 >= damage.last_of_connection(packets, segment):
        return
    assert comparable(exchanges(reread(damage.swap(packets, segment.position, segment.position + 1)))) == whole


def test_s3_a_segment_captured_late_after_its_ack_loses_nothing() -> None:
    """S3: a Fetch response's segment captured 5, 20 and 50 packets late, after the client acknowledged it."""
    packets, _, whole, _ = baseline("many-records-mtu1500")
    _, carrying = big_fetch("many-records-mtu1500")
    segment = carrying[5]
    for by in (5, 20, 50):
        moved = damage.delay(packets, segment.position, by)
        assert comparable(exchanges(reread(moved))) == whole
    late_at = next(i for i, p in enumerate(moved) if p.index == packets[segment.position].index)
    peer = [s.position for s in damage.segments(moved) if s.flow == segment.flow[2:] + segment.flow[:2]]
    assert any(segment.position <= at < late_at for at in peer)  # the peer's ACKs past it were captured first


def test_s4_requests_captured_after_their_responses_keep_the_pairing() -> None:
    """S4: each request segment captured after the response to it: no orphan responses, no extra unanswered ones."""
    packets, _, whole, segments = baseline("consumer-group-confluent")
    tried = 0
    for request in (s for s in segments if s.flow[3] == 9092):
        moved = damage.delay(packets, request.position, 3)
        answers = [s for s in damage.data_segments(moved) if s.flow == request.flow[2:] + request.flow[:2]]
        if request.position + 4 >= damage.last_of_connection(packets, request) or not any(
            request.position <= s.position < request.position + 3 for s in answers
        ):
            continue
        tried += 1
        assert comparable(exchanges(reread(moved))) == whole
    assert tried >= 10


# -- one lost segment: only what it held --------------------------------------------------------------------------


def batch_spans(message: Message) -> list[tuple[int, int, RecordBatch]]:
    """Every v2 batch of a message with its (start, end) frame offsets, found by its own header bytes."""
    out = []
    body = message.body
    assert isinstance(body, Body)
    data = message.frame.filled()
    for placed in body.records:
        for b in placed.records.batches:
            if isinstance(b, RecordBatch):
                header = HEADER.pack(
                    *(b.base_offset, b.batch_length, b.partition_leader_epoch, b.magic, b.crc, b.attributes, b.last_offset_delta),
                    *(b.base_timestamp, b.max_timestamp, b.producer_id, b.producer_epoch, b.base_sequence, b.record_count),
                )
                at = data.find(header)
                assert at >= 0
                out.append((at, at + 12 + b.batch_length, b))
    return out


def check_one_hole(name: str, segment: damage.Segment) -> tuple[int, int, bool]:
    """Drop the segment and check what is kept: every other exchange identical; in the frame it fell in, every batch
    it does not touch, and a diagnostic naming what was lost. Returns the batches kept and lost there, and whether
    the hole swallowed a batch's first bytes."""
    packets, whole, comparable_whole, _ = baseline(name)
    damaged = exchanges(reread(damage.drop(packets, segment.position)))
    again = comparable(damaged)
    touched = [key for key in comparable_whole if again.get(key) != comparable_whole[key]]
    assert len(touched) == 1, touched
    [key] = touched
    before, after = [
        next(
            m
            for m in (e.request, e.response)
            if m is not None and m.frame.first_packet <= packets[segment.position].index <= m.frame.last_packet
        )
        for e in (whole[key], damaged[key])
    ]
    assert after.frame.lost == segment.length
    assert any(d.message.startswith(f"{segment.length} of the frame's {before.frame.size} bytes are missing") for d in after.diagnostics)
    [(hole_start, hole_end)] = after.frame.holes()
    spans = batch_spans(before)
    assert spans[0][0] <= hole_start and hole_end <= spans[-1][1]  # the hole lies inside the records field
    kept = [batch for start, end, batch in spans if end <= hole_start or start >= hole_end]
    lost = [batch for start, end, batch in spans if not (end <= hole_start or start >= hole_end)]
    assert [batch for placed in after.body.records for batch in placed.records.batches] == kept  # batch by batch, record by record
    [told] = [d for d in after.diagnostics if d.code == "records.lost"]
    first, last = lost[0].base_offset, lost[-1].base_offset + lost[-1].last_offset_delta
    assert told.message.startswith(f"{segment.length} bytes missing from the capture")
    assert f"offsets {first}-{last} ({last - first + 1} records)" in told.message
    assert after.frame.rest == ((hole_end, before.frame.data[hole_end:]),)
    return len(kept), len(lost), any(hole_start <= start < hole_end for start, _, _ in spans)


def test_s2_one_lost_segment_in_a_fetch_response_keeps_every_other_batch() -> None:
    """S2: one 1448-byte segment lost inside a 44 KB Fetch response of 12 batches and 200 records."""
    _, carrying = big_fetch("many-records-mtu1500")
    kept, lost, _ = check_one_hole("many-records-mtu1500", carrying[len(carrying) // 3])
    assert (kept, lost) == (10, 2)  # this segment holds the end of one batch and the start of the next


def test_every_lost_segment_of_a_fetch_response_costs_only_the_batches_it_touches() -> None:
    """Each segment of the response in turn, its last excepted (it holds the frame's end): the batch after a hole is
    found again by the lost batch's length when its header was captured, by magic, length and CRC when the hole
    swallowed a header."""
    fetch, carrying = big_fetch("many-records-mtu1500")
    batches = len(batch_spans(fetch.response))
    results = [check_one_hole("many-records-mtu1500", segment) for segment in carrying[:-1]]
    assert all(kept + lost == batches and lost in (1, 2) for kept, lost, _ in results), results
    assert sum(swallowed for _, _, swallowed in results) >= 3


@SETTINGS
@given(pick=st.integers(0, 1 << 30))
def test_a_lost_segment_of_a_produce_request_costs_only_its_batch(pick: int) -> None:
    """The Produce requests of many-records: one batch each, over several segments."""
    packets, found, _, segments = baseline("many-records-mtu1500")
    produce = [e for e in found.values() if e.api_key == 0]
    carrying = [
        s for e in produce for s in segments if e.request.frame.first_packet < packets[s.position].index < e.request.frame.last_packet
    ]
    assert carrying
    assert check_one_hole("many-records-mtu1500", carrying[pick % len(carrying)])[:2] == (0, 1)


# -- a corrupt pcap record header: only its record ---------------------------------------------------------------


def record_offsets(data: bytes) -> list[int]:
    """Where each record header of a little-endian pcap file starts."""
    out, at = [], 24
    while at + 16 <= len(data):
        out.append(at)
        at += 16 + struct.unpack_from("<I", data, at + 8)[0]
    return out


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(NAMES), pick=st.integers(0, 1 << 30), cut=st.booleans())
@example(name="many-records-mtu1500", pick=0, cut=True)
@example(name="consumer-group-confluent", pick=0, cut=True)
def test_a_corrupt_pcap_record_header_costs_only_its_record(name: str, pick: int, cut: bool) -> None:
    """A record header claiming more than the snapshot length, or cut short by 8 bytes, with records after it. The
    first record too: the reader learns the file's habits from its first records, and must not learn them from a
    corrupt one."""
    data = (CAPTURES / f"{name}.pcap").read_bytes()
    packets = baseline(name)[0]
    records = record_offsets(data)
    assert len(records) == len(packets) and data[:4] == b"\xd4\xc3\xb2\xa1"
    k = pick % (len(records) - 1)  # the last record has nothing after it to resynchronise on
    at = records[k]
    if cut:
        damaged = data[:at] + data[at + 8 :]
    else:
        damaged = data[: at + 8] + struct.pack("<I", 0x7FFFFFF0) + data[at + 12 :]
    with CaptureFile(io.BytesIO(damaged), "damaged.pcap") as capture:
        read = list(capture.packets())
        [told] = capture.diagnostics()
    without = damage.drop(packets, k)
    assert [(p.ts, p.data) for p in read] == [(p.ts, p.data) for p in without]
    assert told.code == "pcap.resync" and told.offset == at
    assert f"{records[k + 1] - at - (8 if cut else 0)} bytes skipped" in told.message
    assert comparable(exchanges(read)) == comparable(exchanges(without))
