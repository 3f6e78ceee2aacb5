"""Kafka framing (size prefixes, gaps, resync), connection detection on unknown ports, headers, and pairing.

The framer is driven directly with chunks and gaps; detection and pairing through the `Dissector`, since they
live in the connection it builds.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.dissector import Dissector
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.kafka.detect import find_request, find_response, plausible_request
from kdissect.kafka.framing import RESYNC_WINDOW, Framer
from kdissect.kafka.headers import (
    HeaderError,
    parse_request_header,
    parse_response_header,
)
from kdissect.kafka.phase import IGNORED
from kdissect.limits import Limits
from kdissect.schema import BUILTIN
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER

MAX = 1 << 20


class Recorder:
    def __init__(self, requests: bool = True, max_size: int = MAX, synced: bool = True) -> None:
        self.frames = []
        self.reports = []
        if requests:
            find = lambda buf, start: find_request(buf, start, max_size, BUILTIN)
        else:
            find = lambda buf, start: find_response(buf, start, max_size, self.correlations)
        self.correlations: list[int] = []
        self.framer = Framer(
            self.frames.append, lambda d, ts, i: self.reports.append((d.code, d.offset)), find, 8 if requests else 4, max_size, synced
        )
        self.index = 0

    def data(self, chunk: bytes) -> None:
        self.index += 1
        self.framer.data(chunk, self.index * 10, self.index)

    def feed(self, stream: bytes, size: int) -> None:
        for at in range(0, len(stream), size):
            self.data(stream[at : at + size])

    def summary(self) -> list[tuple[int, int, int]]:
        """(offset, size, bytes held) of each frame."""
        return [(f.offset, f.size, len(f.data)) for f in self.frames]


def requests(*correlations: int, body: int = 20) -> list[bytes]:
    return [craft.request(3, 1, c, bytes([c % 256]) * body) for c in correlations]


# -- framing --------------------------------------------------------------------------------------------------------


def test_many_frames_in_one_segment() -> None:
    frames = requests(*range(1, 11))
    r = Recorder()
    r.data(b"".join(frames))
    assert [f.data for f in r.frames] == [f[4:] for f in frames]
    assert [f.offset for f in r.frames] == [sum(len(x) for x in frames[:i]) for i in range(10)]
    assert all((f.first_packet, f.last_packet) == (1, 1) for f in r.frames)
    assert r.reports == [] and r.framer.buf == b""


def test_one_frame_across_many_segments() -> None:
    [frame] = requests(5, body=3000)
    r = Recorder()
    r.feed(frame, 7)
    [got] = r.frames
    assert got.data == frame[4:]
    segments = -(-len(frame) // 7)
    assert (got.first_packet, got.last_packet, got.ts_first, got.ts) == (1, segments, 10, segments * 10)
    assert r.framer.offset == len(frame)


def test_frames_straddling_segments_keep_their_own_first_packet() -> None:
    a, b = requests(1, 2, body=10)
    r = Recorder()
    r.data(a + b[:5])
    r.data(b[5:])
    assert [(f.first_packet, f.last_packet) for f in r.frames] == [(1, 1), (1, 2)]


def test_size_prefix_split_across_segments() -> None:
    a, b = requests(1, 2)
    r = Recorder()
    r.data(a + b[:2])
    r.data(b[2:3])
    r.data(b[3:])
    assert [f.data for f in r.frames] == [a[4:], b[4:]]


def test_gap_inside_a_frame_costs_only_the_missing_bytes() -> None:
    a, b, c = requests(1, 2, 3, body=100)
    r = Recorder()
    r.data(a + b[:30])
    r.framer.gap(50, 0)
    r.data(b[80:] + c)
    assert r.summary() == [(0, len(a) - 4, len(a) - 4), (len(a), len(b) - 4, 26), (len(a) + len(b), len(c) - 4, len(c) - 4)]
    assert r.frames[1].lost == 50
    assert r.frames[1].rest == ((76, b[80:]),) and r.frames[1].holes() == ((26, 76),)
    assert r.frames[1].filled() == b[4:30] + bytes(50) + b[80:]
    assert r.frames[2].data == c[4:]
    assert r.reports == []


def test_several_holes_in_one_frame_and_a_lost_tail() -> None:
    (b,) = requests(2, body=300)
    r = Recorder()
    r.data(b[:40])
    r.framer.gap(10, 0)
    r.data(b[50:100])
    r.framer.gap(20, 0)
    r.data(b[120:200])
    r.framer.finish()
    [frame] = r.frames
    assert frame.data == b[4:40] and frame.rest == ((46, b[50:100]), (116, b[120:200]))
    assert frame.holes() == ((36, 46), (96, 116), (196, len(b) - 4)) and frame.lost == 10 + 20 + len(b) - 200


def test_late_bytes_fill_a_hole_while_the_frame_is_open() -> None:
    a, b = requests(1, 2, body=200)
    r = Recorder()
    r.data(b[:40])
    r.framer.gap(30, 0)
    r.data(b[70:150])
    assert r.framer.fill(50, b[50:60]) == 10  # part of the hole
    assert r.framer.fill(30, b[30:80]) == 10 + 10  # what is still missing of it; the rest is held already
    r.data(b[150:] + a)
    assert [f.data for f in r.frames] == [b[4:], a[4:]] and r.frames[0].rest == ()
    assert r.framer.fill(40, b[40:70]) == 0  # the frame is gone: too late


def test_gap_ending_exactly_at_a_frame_boundary() -> None:
    a, b = requests(1, 2, body=100)
    r = Recorder()
    r.data(a[:50])
    r.framer.gap(len(a) - 50, 0)
    r.data(b)
    assert r.summary() == [(0, len(a) - 4, 46), (len(a), len(b) - 4, len(b) - 4)]
    assert r.reports == []


def test_gap_across_a_boundary_resyncs_on_the_next_request_header() -> None:
    a, b, c = requests(1, 2, 3, body=100)
    r = Recorder()
    r.data(a[:60])
    r.framer.gap(len(a) - 60 + 20, 0)  # the rest of a and the first 20 bytes of b
    r.data(b[20:] + c)
    assert r.summary() == [(0, len(a) - 4, 56), (len(a) + len(b), len(c) - 4, len(c) - 4)]
    assert r.reports == [("frame.skipped", len(a) + 20)]


def test_gap_before_a_frame_starts_resyncs() -> None:
    a, b = requests(1, 2, body=40)
    r = Recorder()
    r.framer.gap(13, 0)
    r.data(a[5:] + b)
    assert r.summary() == [(len(a) + 13 - 5, len(b) - 4, len(b) - 4)]
    assert r.reports == [("frame.skipped", 13)]


def test_gap_inside_a_size_prefix() -> None:
    a, b, c = requests(1, 2, 3)
    r = Recorder()
    r.data(a + b[:2])
    r.framer.gap(4, 0)
    r.data(b[6:] + c)
    assert [f.offset for f in r.frames] == [0, len(a) + len(b)]


def test_stream_starting_mid_frame() -> None:
    a, b, c = requests(1, 2, 3, body=64)
    r = Recorder(synced=False)
    r.data(a[30:] + b[:10])
    r.data(b[10:] + c)
    assert [(f.offset, f.data) for f in r.frames] == [(len(a) - 30, b[4:]), (len(a) - 30 + len(b), c[4:])]
    assert r.reports == [("frame.skipped", 0)]


def test_size_above_the_maximum_is_reported_and_skipped_without_allocation() -> None:
    a, c = requests(1, 3)
    bogus = struct.pack(">i", 0x7FFFFFF0) + b"\x00\x03\x00\x01" + b"junk" * 10
    r = Recorder(max_size=1000)
    r.data(a + bogus)
    r.data(c)
    assert [f.data for f in r.frames] == [a[4:], c[4:]]
    assert r.reports == [("frame.bad-size", len(a)), ("frame.skipped", len(a))]
    assert len(r.framer.buf) == 0


@pytest.mark.parametrize("size", [-1, 0, 7, -(1 << 31)])
def test_impossible_small_or_negative_sizes(size: int) -> None:
    (c,) = requests(3)
    r = Recorder()
    r.data(struct.pack(">i", size) + b"\xff" * 12 + c)
    assert [f.data for f in r.frames] == [c[4:]]
    assert r.reports == [("frame.bad-size", 0), ("frame.skipped", 0)]


def test_unrecognisable_bytes_are_bounded_while_out_of_sync() -> None:
    r = Recorder(synced=False)
    junk = b"\xff" * 100_000
    for _ in range(30):
        r.data(junk)
    assert len(r.framer.buf) <= RESYNC_WINDOW + len(junk)
    assert r.reports and all(code == "frame.skipped" for code, _ in r.reports)
    (c,) = requests(3)
    r.data(c)
    assert [f.data for f in r.frames] == [c[4:]]
    assert r.framer.offset + len(r.framer.buf) == 30 * len(junk) + len(c)


def test_finish_hands_on_a_frame_cut_by_the_end() -> None:
    a, b = requests(1, 2, body=100)
    r = Recorder()
    r.data(a + b[:50])
    r.framer.finish()
    assert r.summary() == [(0, len(a) - 4, len(a) - 4), (len(a), len(b) - 4, 46)]


def test_responses_resync_on_an_outstanding_correlation_id() -> None:
    x = craft.response(77, b"\x10" * 40)
    y = craft.response(78, b"\x20" * 40)
    r = Recorder(requests=False)
    r.correlations = [77, 78]
    r.framer.start(True)
    r.data(b"\x01\x02\x03\x99\x99" + x[:10])  # the end of some earlier response, then x
    r.data(x[10:] + y)
    assert [f.data[:4] for f in r.frames] == [struct.pack(">i", 77), struct.pack(">i", 78)]
    assert r.reports == [("frame.skipped", 0)]


def test_responses_resync_on_whole_frames_without_outstanding_ids() -> None:
    x = craft.response(5, b"\0" * 10)
    y = craft.response(6, b"\0" * 20)
    r = Recorder(requests=False)
    r.framer.gap(100, 0)
    r.data(x + y)
    assert [f.offset for f in r.frames] == [100, 100 + len(x)]


@settings(max_examples=200, deadline=None)
@given(
    bodies=st.lists(st.integers(0, 300), min_size=1, max_size=12),
    sizes=st.lists(st.integers(1, 400), min_size=1, max_size=6),
    gap=st.one_of(st.none(), st.tuples(st.floats(0, 1), st.integers(1, 500))),
)
def test_frames_survive_any_segmentation_and_one_gap(bodies, sizes, gap) -> None:
    frames = [craft.request(3, 1, i, bytes([i % 200 + 1]) * n) for i, n in enumerate(bodies)]
    stream = b"".join(frames)
    starts = [sum(len(f) for f in frames[:i]) for i in range(len(frames))]
    lo = hi = len(stream)
    if gap is not None:
        lo = int(gap[0] * (len(stream) - 1))
        hi = min(len(stream), lo + gap[1])
    r = Recorder()
    at, i = 0, 0
    while at < len(stream):
        if at == lo:
            r.framer.gap(hi - lo, 0)
            at = hi
            continue
        end = min(at + sizes[i % len(sizes)], len(stream), lo if at < lo else len(stream))
        r.data(stream[at:end])
        at, i = end, i + 1
    r.framer.finish()
    original = dict(zip(starts, frames))
    whole = {f.offset: f for f in r.frames if f.lost == 0}
    assert all(original[offset][4:] == f.data for offset, f in whole.items())
    for start, frame in original.items():
        if start + len(frame) <= lo or start >= hi:
            assert start in whole, f"frame at {start} lost (gap {lo}..{hi})"
    cut = [f for f in r.frames if f.lost]
    assert len(cut) <= 1
    if cut:
        assert cut[0].offset + 4 <= lo < cut[0].offset + 4 + cut[0].size
        assert original[cut[0].offset][4 : 4 + len(cut[0].data)] == cut[0].data


# -- detection helpers -----------------------------------------------------------------------------------------------


def test_plausible_request() -> None:
    (a,) = requests(1)
    assert plausible_request(a, 0, MAX, BUILTIN) is True
    assert plausible_request(a[:13], 0, MAX, BUILTIN) is None
    assert plausible_request(craft.request(3, 1, -5), 0, MAX, BUILTIN) is False  # negative correlation id
    assert plausible_request(craft.request(3, 999, 1), 0, MAX, BUILTIN) is False  # version out of range
    assert plausible_request(craft.request(3, 1, 1, client_id=None), 0, MAX, BUILTIN) is True
    assert plausible_request(craft.request(3, 1, 1, client_id="bad\x01id"), 0, MAX, BUILTIN) is False
    assert plausible_request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0, MAX, BUILTIN) is False


# -- headers ------------------------------------------------------------------------------------------------------------


def test_request_header_versions() -> None:
    v0 = parse_request_header(craft.request(7, 0, 3, b"body")[4:], BUILTIN)  # ControlledShutdown v0: no client id
    assert (v0.version, v0.client_id, v0.length) == (0, None, 8)
    v1 = parse_request_header(craft.request(3, 1, 3, b"body", client_id="abc")[4:], BUILTIN)
    assert (v1.version, v1.client_id, v1.length) == (1, "abc", 13)
    null = parse_request_header(craft.request(3, 1, 3, b"body", client_id=None)[4:], BUILTIN)
    assert (null.client_id, null.length) == (None, 10)
    tagged = craft.request(18, 3, 9, b"\x00", client_id="c", tagged=[(0, b"xy"), (300, b"")])
    v2 = parse_request_header(tagged[4:], BUILTIN)
    assert v2.version == 2 and v2.client_id == "c"
    assert [(t.tag, t.data, t.offset) for t in v2.tagged] == [(0, b"xy", 14), (300, b"", 19)]
    assert v2.length == len(tagged) - 4 - 1


def test_unreadable_headers() -> None:
    with pytest.raises(HeaderError):
        parse_request_header(b"\x00\x03\x00", BUILTIN)
    with pytest.raises(HeaderError) as exc:
        parse_request_header(struct.pack(">hhih", 3, 1, 1, 50) + b"short", BUILTIN)
    assert exc.value.offset == 10
    with pytest.raises(HeaderError):
        parse_request_header(struct.pack(">hhih", 3, 1, 1, -2), BUILTIN)
    with pytest.raises(HeaderError):  # a tagged field that claims more than there is
        parse_request_header(craft.request(18, 3, 1, client_id="c")[4:-1] + b"\x01\x00\x09ab", BUILTIN)


def test_response_header_versions() -> None:
    flexible = parse_response_header(craft.response(4, b"\0", 1, [(1, b"z")])[4:], 3, 12, BUILTIN)
    assert (flexible.correlation_id, flexible.version, flexible.length, flexible.tagged[0].data) == (4, 1, 8, b"z")
    # ApiVersions answers with header v0 whatever version was asked, so clients can always read it
    api_versions = parse_response_header(craft.response(4, b"\x00\x00")[4:], 18, 3, BUILTIN)
    assert (api_versions.version, api_versions.length) == (0, 4)
    orphan = parse_response_header(craft.response(4, b"\0")[4:], None, None, BUILTIN)
    assert orphan.version == 0


# -- connections: detection -------------------------------------------------------------------------------------------


def run(packets, **options) -> list:
    return list(Dissector(**options).run(packets))


def statuses(evs) -> list[tuple[str, int | None]]:
    return [(e.status, e.correlation_id) for e in evs if isinstance(e, Exchange)]


def notices(evs) -> list[str]:
    return [e.diagnostic.code for e in evs if isinstance(e, Notice)]


def session(conv: craft.Conversation, pairs=((1, 1), (2, 2))) -> list:
    out = conv.handshake()
    for req, resp in pairs:
        out += conv.send(CLIENT, craft.request(3, 1, req, b"\0\0\0\0"))
        out += conv.send(SERVER, craft.response(resp, b"\0" * 8))
    return out + conv.close()


def test_unknown_port_detected_from_the_syn_sender() -> None:
    conv = craft.Conversation(client_port=55555, server_port=19092)
    evs = run(session(conv))
    assert statuses(evs) == [("ok", 1), ("ok", 2)]
    [end] = [e for e in evs if isinstance(e, ConnectionEnd)]
    assert (end.connection.client.port, end.connection.broker.port) == (55555, 19092)


def test_unknown_port_client_sending_first_even_when_server_port_is_higher() -> None:
    conv = craft.Conversation(client_port=1234, server_port=60000)
    evs = run(session(conv))
    assert statuses(evs) == [("ok", 1), ("ok", 2)]


def test_syn_sender_that_does_not_open_with_a_request_is_ignored() -> None:
    conv = craft.Conversation(client_port=55555, server_port=8080)
    packets = conv.handshake() + conv.send(CLIENT, b"GET / HTTP/1.1\r\nHost: example\r\n\r\n")
    packets += conv.send(SERVER, b"HTTP/1.1 200 OK\r\n\r\n" + craft.response(1, b"\0" * 8)) + conv.close()
    dissector = Dissector()
    evs = list(dissector.run(packets))
    assert evs == []
    assert (dissector.counters.ignored_connections, dissector.counters.kafka_connections) == (1, 0)


def test_non_kafka_connection_on_another_port_says_nothing_about_its_gaps() -> None:
    conv = craft.Conversation(client_port=55555, server_port=8080)
    packets = conv.handshake()
    data = conv.send(CLIENT, b"GET / HTTP/1.1\r\n" + b"X-Pad: " + b"p" * 3000 + b"\r\n\r\n", sizes=1000)
    packets += data[1:] + [conv.ack(SERVER)] + conv.close()  # the first segment lost: undecided at the gap
    assert run(packets) == []


def test_kafka_on_another_port_tells_the_gaps_seen_before_detection() -> None:
    conv = craft.Conversation(client_port=55555, server_port=19092)
    packets = conv.handshake()
    data = conv.send(CLIENT, craft.request(3, 1, 1, b"\0" * 2000) + craft.request(3, 1, 2, b"\0\0\0\0"), sizes=1000)
    packets += data[1:] + conv.send(SERVER, craft.response(2, b"\0"))
    evs = run(packets)
    gaps = [e for e in evs if isinstance(e, Notice)]
    assert [(g.diagnostic.code, g.diagnostic.offset, g.connection is not None) for g in gaps] == [
        ("tcp.gap", 0, True),
        ("frame.skipped", 1000, True),
    ]
    assert statuses(evs) == [("ok", 2)]


def test_server_speaking_first_on_another_port_is_ignored_within_the_probe_bound() -> None:
    conv = craft.Conversation(client_port=55555, server_port=2525)
    dissector = Dissector()
    for p in conv.handshake():
        dissector.feed(p)
    for p in conv.send(SERVER, b"x" * 200_000, sizes=1460):
        assert dissector.feed(p) == []
    connection = next(iter(dissector._flows.values()))[0]
    assert connection.phase is IGNORED and connection.phase.over
    assert all(len(s.sink.items) == 0 and not s.recent for s in connection.streams)
    assert dissector.counters.ignored_connections == 1


def test_one_sided_bulk_transfer_without_syn_is_ignored_within_the_probe_bound() -> None:
    conv = craft.Conversation(client_port=55555, server_port=8443)
    conv.handshake()
    dissector = Dissector()
    for p in conv.send(SERVER, b"\x17\x03\x03" * 100_000, sizes=1460):
        assert dissector.feed(p) == []
    connection = next(iter(dissector._flows.values()))[0]
    assert connection.phase is IGNORED


def test_mid_stream_detection_on_an_unknown_port() -> None:
    conv = craft.Conversation(client_port=50000, server_port=29092)
    conv.handshake()  # before the capture
    old = craft.request(3, 1, 100, b"\x07" * 300)
    conv.send(CLIENT, old[:200])  # not captured either: the capture starts mid-frame
    packets = conv.send(CLIENT, old[200:] + craft.request(3, 1, 101, b"\0\0\0\0"))
    packets += conv.send(SERVER, craft.response(100, b"\0" * 8) + craft.response(101, b"\0" * 8))
    evs = run(packets)
    assert statuses(evs) == [("orphan-response", 100), ("ok", 101)]
    assert notices(evs) == ["frame.skipped"]
    [end] = [e for e in evs if isinstance(e, ConnectionEnd)]
    assert end.mid_stream and (end.connection.client.port, end.connection.broker.port) == (50000, 29092)


def test_mid_stream_detection_when_the_broker_speaks_first_in_the_capture() -> None:
    conv = craft.Conversation(client_port=50000, server_port=29092)
    conv.handshake()
    conv.send(CLIENT, craft.request(3, 1, 100, b"\0\0\0\0"))
    packets = conv.send(SERVER, craft.response(100, b"\0" * 8))  # the first packet captured is a response
    packets += conv.send(CLIENT, craft.request(3, 1, 101, b"\0\0\0\0"))
    packets += conv.send(SERVER, craft.response(101, b"\0" * 8))
    evs = run(packets)
    assert statuses(evs) == [("orphan-response", 100), ("ok", 101)]


def test_mid_stream_on_the_kafka_port_finds_the_first_whole_frame() -> None:
    conv = craft.Conversation()
    conv.handshake()
    first = craft.request(3, 1, 5, b"\x01" * 500)
    conv.send(CLIENT, first[:100])
    packets = conv.send(CLIENT, first[100:]) + conv.send(CLIENT, craft.request(3, 1, 6, b"\0\0\0\0"))
    packets += conv.send(SERVER, craft.response(5, b"\0" * 8) + craft.response(6, b"\0" * 8))
    evs = run(packets)
    assert statuses(evs) == [("orphan-response", 5), ("ok", 6)]


# -- connections: pairing ----------------------------------------------------------------------------------------------


def produce_body(version: int, acks: int) -> bytes:
    """Enough of a Produce body for the core to read acks: transactional id, acks, timeout, no topics."""
    if version >= 9:
        return b"\x00" + struct.pack(">hi", acks, 1000) + b"\x01\x00"
    if version >= 3:
        return struct.pack(">hhi", -1, acks, 1000) + b"\x00\x00\x00\x00"
    return struct.pack(">hii", acks, 1000, 0)


def exchange_session(*frames_by_side, **options) -> list:
    conv = craft.Conversation()
    packets = conv.handshake()
    for side, frame in frames_by_side:
        packets += conv.send(side, frame)
    return run(packets + conv.close(), **options)


@pytest.mark.parametrize("version", [0, 2, 3, 8, 9, 11])
def test_produce_acks_zero_expects_no_response(version: int) -> None:
    evs = exchange_session(
        (CLIENT, craft.request(0, version, 1, produce_body(version, 0))),
        (CLIENT, craft.request(0, version, 2, produce_body(version, 1))),
        (SERVER, craft.response(2, b"\0" * 8, 1 if version >= 9 else 0)),
    )
    assert statuses(evs) == [("no-response-expected", 1), ("ok", 2)]
    [end] = [e for e in evs if isinstance(e, ConnectionEnd)]
    assert end.unanswered == 0


def test_produce_acks_zero_answered_anyway_still_pairs() -> None:
    evs = exchange_session((CLIENT, craft.request(0, 3, 1, produce_body(3, 0))), (SERVER, craft.response(1, b"\0" * 8)))
    assert statuses(evs) == [("ok", 1)]


def test_produce_acks_zero_left_at_the_end() -> None:
    evs = exchange_session((CLIENT, craft.request(0, 7, 1, produce_body(7, 0))))
    assert statuses(evs) == [("no-response-expected", 1)]


def test_orphan_response() -> None:
    evs = exchange_session(
        (CLIENT, craft.request(3, 1, 1, b"\0\0\0\0")), (SERVER, craft.response(99, b"\0")), (SERVER, craft.response(1, b"\0"))
    )
    assert statuses(evs) == [("orphan-response", 99), ("ok", 1)]


def test_unanswered_requests_at_the_end() -> None:
    evs = exchange_session((CLIENT, craft.request(3, 1, 1, b"\0\0\0\0")), (CLIENT, craft.request(3, 1, 2, b"\0\0\0\0")))
    assert statuses(evs) == [("unanswered", 1), ("unanswered", 2)]
    [end] = [e for e in evs if isinstance(e, ConnectionEnd)]
    assert (end.requests, end.responses, end.unanswered) == (2, 0, 2)


def test_a_later_response_settles_earlier_requests_in_order() -> None:
    evs = exchange_session(
        *[(CLIENT, craft.request(3, 1, c, b"\0\0\0\0")) for c in (1, 2, 3, 4)],
        (SERVER, craft.response(3, b"\0")),
        (SERVER, craft.response(4, b"\0")),
    )
    assert statuses(evs) == [("unanswered", 1), ("unanswered", 2), ("ok", 3), ("ok", 4)]
    assert [e.id for e in evs if isinstance(e, Exchange)] == [1, 2, 3, 4]


def test_duplicate_correlation_ids_pair_oldest_first() -> None:
    evs = exchange_session(
        (CLIENT, craft.request(3, 1, 7, b"\x01\0\0\0")),
        (CLIENT, craft.request(3, 1, 7, b"\x02\0\0\0")),
        (SERVER, craft.response(7, b"a")),
        (SERVER, craft.response(7, b"b")),
    )
    pairs = [(e.request.frame.data[-4], e.response.frame.data[-1]) for e in evs if isinstance(e, Exchange)]
    assert pairs == [(1, ord("a")), (2, ord("b"))]


def test_outstanding_requests_are_bounded() -> None:
    frames = [(CLIENT, craft.request(3, 1, c, b"\0\0\0\0")) for c in range(1, 8)]
    conv = craft.Conversation()
    dissector = Dissector(limits=Limits(max_outstanding_requests=3))
    seen = []
    for p in conv.handshake():
        dissector.feed(p)
    for _, frame in frames:
        for p in conv.send(CLIENT, frame):
            seen.append(statuses(dissector.feed(p)))
    # the fourth request pushes out the first, and so on: each reported as soon as it is pushed out
    assert seen == [[], [], [], [("unanswered", 1)], [("unanswered", 2)], [("unanswered", 3)], [("unanswered", 4)]]
    assert statuses(dissector.finish()) == [("unanswered", 5), ("unanswered", 6), ("unanswered", 7)]


def test_api_versions_response_header_is_v0_even_for_a_flexible_request() -> None:
    body = b"\x00\x00" + b"\x02" + b"\x00" * 6  # error code, then what a v3 body holds; only the header matters here
    evs = exchange_session((CLIENT, craft.request(18, 3, 1, b"\x05kafka\x041.0\x00", client_id="x")), (SERVER, craft.response(1, body, 0)))
    [ex] = [e for e in evs if isinstance(e, Exchange)]
    assert ex.status == "ok"
    assert ex.request.header.version == 2
    assert (ex.response.header.version, ex.response.header.length) == (0, 4)


def test_flexible_response_header_tagged_fields() -> None:
    evs = exchange_session((CLIENT, craft.request(3, 12, 1, b"\0")), (SERVER, craft.response(1, b"\0\0", 1, [(5, b"abc")])))
    [ex] = [e for e in evs if isinstance(e, Exchange)]
    assert (ex.response.header.version, ex.response.header.length) == (1, 4 + 1 + 1 + 1 + 3)
    assert [(t.tag, t.data) for t in ex.response.header.tagged] == [(5, b"abc")]


def test_null_client_id_and_header_tagged_fields_through_the_dissector() -> None:
    evs = exchange_session(
        (CLIENT, craft.request(3, 12, 1, b"\0", client_id=None, tagged=[(0, b"\x01\x02")])),
        (SERVER, craft.response(1, b"\0", 1)),
    )
    [ex] = [e for e in evs if isinstance(e, Exchange)]
    assert ex.client_id is None
    assert [(t.tag, t.data) for t in ex.request.header.tagged] == [(0, b"\x01\x02")]


def test_unreadable_request_header() -> None:
    bad = struct.pack(">ihhih", 12, 3, 1, 1, 200) + b"ab"  # a client id longer than the frame
    evs = exchange_session((CLIENT, bad), (CLIENT, craft.request(3, 1, 2, b"\0\0\0\0")), (SERVER, craft.response(2, b"\0")))
    assert statuses(evs) == [("unreadable", None), ("ok", 2)]
    [ex] = [e for e in evs if isinstance(e, Exchange) and e.status == "unreadable"]
    assert [d.code for d in ex.diagnostics] == ["header.unreadable"]


def test_response_cut_before_its_correlation_id() -> None:
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, craft.request(3, 1, 1, b"\0\0\0\0"))
    parts = conv.send(SERVER, craft.response(1, b"\0" * 100), sizes=[6, 50, 100])
    packets += [parts[0], parts[2], conv.ack(CLIENT)]
    evs = run(packets)
    exchanges = [e for e in evs if isinstance(e, Exchange)]
    assert statuses(evs) == [("orphan-response", None), ("unanswered", 1)]
    assert [d.code for d in exchanges[0].diagnostics] == ["frame.incomplete", "header.unreadable"]
    assert exchanges[0].response.frame.data == b"\0\0"


def test_response_gap_across_a_boundary_resyncs_on_an_outstanding_id() -> None:
    conv = craft.Conversation()
    packets = conv.handshake()
    for c in (1, 2, 3):
        packets += conv.send(CLIENT, craft.request(3, 1, c, b"\0\0\0\0"))
    responses = craft.response(1, b"\x11" * 300) + craft.response(2, b"\x22" * 300) + craft.response(3, b"\x33" * 300)
    parts = conv.send(SERVER, responses, sizes=250)  # 250..500 holds the end of 1 and the start of 2
    packets += parts[:1] + parts[2:] + [conv.ack(CLIENT)]
    evs = run(packets)
    assert statuses(evs) == [("malformed", 1), ("unanswered", 2), ("ok", 3)]  # the first response lost its end
    first = next(e for e in evs if isinstance(e, Exchange))
    assert (first.response.frame.lost, [d.code for d in first.diagnostics]) == (304 - 246, ["frame.incomplete"])
    assert notices(evs) == ["tcp.gap", "frame.skipped"]
