"""TCP stream reassembly: order, loss, retransmission, wrap-around, connection lifecycle.

Most tests drive one `Reassembler` directly with a recording sink, so the delivered stream (bytes and gaps, in
order) can be compared with what was sent; the lifecycle tests go through the `Dissector`.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.dissector import Dissector
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.net.reassembly import NO_PATIENCE, Patience, Reassembler
from kdissect.net.tcp import ACK, FIN, PSH, RST, SYN
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER

MOD = 1 << 32


class Sink:
    """Records what reassembly delivers: ("data", bytes) and ("gap", length), merged where adjacent."""

    def __init__(self) -> None:
        self.items: list[tuple[str, object]] = []
        self.started: bool | None = None
        self.indexes: list[int] = []
        self.filled: list[tuple[int, bytes]] = []

    def start(self, mid_stream: bool) -> None:
        assert self.started is None, "start() called twice"
        self.started = mid_stream

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        assert chunk
        self.indexes.append(index)
        if self.items and self.items[-1][0] == "data":
            self.items[-1] = ("data", self.items[-1][1] + bytes(chunk))
        else:
            self.items.append(("data", bytes(chunk)))

    def gap(self, length: int, ts: int) -> None:
        assert length > 0
        if self.items and self.items[-1][0] == "gap":
            self.items[-1] = ("gap", self.items[-1][1] + length)
        else:
            self.items.append(("gap", length))

    def fill(self, offset: int, data: bytes) -> int:
        """Late bytes for a declared gap: recorded, not used (a framer uses them while their frame is open)."""
        self.filled.append((offset, data))
        return 0

    def delivered(self) -> bytes:
        """The stream with every gap as '?' bytes, for comparing positions."""
        return b"".join(v if kind == "data" else b"?" * v for kind, v in self.items)


class Stream:
    """One direction under test: a reassembler, its sink, and the diagnostics it reported. Packet numbers and
    timestamps count the calls."""

    def __init__(self, isn: int | None = 1000, max_buffer: int = 1 << 20, reorder: bool = True, patience: Patience = NO_PATIENCE) -> None:
        self.sink = Sink()
        self.reports: list[tuple[str, int, int]] = []
        self.r = Reassembler(self.sink, lambda d, ts, index: self.reports.append((d.code, d.offset, index)), max_buffer, reorder, patience)
        self.isn = isn
        self.index = 0
        if isn is not None:
            self.send(isn, flags=SYN)

    def send(self, seq: int, payload: bytes = b"", flags: int = ACK | PSH, missing: int = 0) -> None:
        self.index += 1
        self.r.segment(seq & 0xFFFFFFFF, payload, missing, flags, self.index, self.index)

    def at(self, offset: int, payload: bytes, **kw) -> None:
        """Send payload for stream offset `offset` (counted from the byte after the SYN)."""
        self.send(self.isn + 1 + offset, payload, **kw)

    def ack(self, offset: int) -> None:
        self.index += 1
        self.r.acknowledged((self.isn + 1 + offset) & 0xFFFFFFFF, self.index, self.index)

    def codes(self) -> list[str]:
        return [code for code, _, _ in self.reports]


def chunks(data: bytes, sizes: list[int]) -> list[tuple[int, bytes]]:
    out, at, i = [], 0, 0
    while at < len(data):
        size = sizes[i % len(sizes)]
        out.append((at, data[at : at + size]))
        at += size
        i += 1
    return out


DATA = bytes(range(256)) * 40


# -- order --------------------------------------------------------------------------------------------------------


def test_in_order() -> None:
    s = Stream()
    for at, piece in chunks(DATA, [100, 1, 1460, 7]):
        s.at(at, piece)
    assert s.sink.started is False
    assert s.sink.items == [("data", DATA)]
    assert (s.r.offset, s.r.bytes, s.r.out_of_order, s.r.retransmitted, s.r.gaps) == (len(DATA), len(DATA), 0, 0, 0)
    assert s.reports == []


def test_reversed() -> None:
    s = Stream()
    pieces = chunks(DATA, [1000])
    for at, piece in reversed(pieces):
        s.at(at, piece)
    assert s.sink.items == [("data", DATA)]
    assert s.r.out_of_order == len(pieces) - 1
    assert s.r.pending == {} and s.r.pending_bytes == 0
    assert s.reports == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.binary(min_size=1, max_size=3000),
    sizes=st.lists(st.integers(1, 700), min_size=1, max_size=8),
    isn=st.one_of(st.integers(0, MOD - 1), st.integers(MOD - 3000, MOD - 1)),
    seed=st.integers(0, 2**32),
    duplicates=st.integers(0, 6),
)
def test_any_order_any_duplicates_gives_the_original_bytes(data, sizes, isn, seed, duplicates) -> None:
    rng = random.Random(seed)
    pieces = chunks(data, sizes)
    sent = pieces + [rng.choice(pieces) for _ in range(duplicates)]
    # overlapping retransmissions: a span across piece boundaries, same bytes
    for _ in range(duplicates):
        a = rng.randrange(len(data))
        b = rng.randrange(a, len(data)) + 1
        sent.append((a, data[a:b]))
    rng.shuffle(sent)
    s = Stream(isn)
    for at, piece in sent:
        s.at(at, piece)
    assert s.sink.items == [("data", data)]
    assert s.r.offset == len(data) and s.r.bytes == len(data)
    assert s.reports == []
    assert s.r.pending_bytes == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.binary(min_size=1, max_size=3000),
    sizes=st.lists(st.integers(1, 700), min_size=1, max_size=8),
    isn=st.one_of(st.integers(0, MOD - 1), st.integers(MOD - 3000, MOD - 1)),
    seed=st.integers(0, 2**32),
    drop=st.floats(0, 0.6),
    small_buffer=st.booleans(),
)
def test_lost_bytes_become_gaps_never_wrong_bytes(data, sizes, isn, seed, drop, small_buffer) -> None:
    rng = random.Random(seed)
    sent = [piece for piece in chunks(data, sizes) if rng.random() >= drop]
    for _ in range(rng.randrange(4)):  # overlapping retransmissions of random spans
        a = rng.randrange(len(data))
        b = rng.randrange(a, len(data)) + 1
        sent.append((a, data[a:b]))
    rng.shuffle(sent)
    s = Stream(isn, max_buffer=500 if small_buffer else 1 << 20)
    for at, piece in sent:
        s.at(at, piece)
    s.r.flush(0)
    covered = [False] * len(data)
    for at, piece in sent:
        covered[at : at + len(piece)] = [True] * len(piece)
    end = max((i + 1 for i, c in enumerate(covered) if c), default=0)
    got: list[int | None] = []
    for kind, value in s.sink.items:
        got += list(value) if kind == "data" else [None] * value
    assert len(got) == end == s.r.offset
    assert all(b is None or b == data[i] for i, b in enumerate(got))
    if not small_buffer:  # with room to wait, exactly the bytes never sent are missing
        assert [b is not None for b in got] == covered[:end]
    gap_starts = [i for i, b in enumerate(got) if b is None and (i == 0 or got[i - 1] is not None)]
    assert [offset for code, offset, _ in s.reports if code == "tcp.gap"] == gap_starts
    assert s.r.gap_bytes == got.count(None)


def test_wrap_around() -> None:
    isn = MOD - 700
    s = Stream(isn)
    pieces = chunks(DATA, [500])
    for at, piece in [pieces[1], pieces[0], *pieces[2:]]:
        s.at(at, piece)
    assert s.sink.items == [("data", DATA)]
    assert s.r.next_seq == (isn + 1 + len(DATA)) % MOD
    assert s.reports == []


def test_wrap_around_with_a_gap_and_an_ack() -> None:
    isn = MOD - 100
    s = Stream(isn)
    s.at(0, b"a" * 50)
    s.at(150, b"c" * 50)  # offset 50..150 lost, straddling the wrap
    s.ack(200)
    assert s.reports == [("tcp.gap", 50, 4)]
    assert s.sink.items == [("data", b"a" * 50), ("gap", 100), ("data", b"c" * 50)]


# -- retransmissions ------------------------------------------------------------------------------------------------


def test_retransmission_of_delivered_bytes_is_dropped() -> None:
    s = Stream()
    s.at(0, b"hello ")
    s.at(6, b"world")
    s.at(0, b"hello ")
    s.at(3, b"lo wo")
    assert s.sink.items == [("data", b"hello world")]
    assert s.r.retransmitted == 11
    assert s.reports == []


def test_retransmission_with_different_bytes_keeps_the_first_copy() -> None:
    s = Stream()
    s.at(0, b"hello ")
    s.at(6, b"world")
    s.at(4, b"oXXyyZ")  # the first different byte is at offset 5
    s.at(11, b"!")
    assert s.sink.items == [("data", b"hello world!")]
    assert s.reports == [("tcp.retransmission-differs", 5, 4)]


def test_keep_alive_probe_is_not_a_differing_retransmission() -> None:
    s = Stream()
    s.at(0, b"abc")
    s.at(2, b"\x00")  # Windows-style keep-alive: one garbage byte at next expected - 1
    s.at(2, b"", flags=ACK)  # Linux-style: no byte at all
    s.at(3, b"d")
    assert s.sink.items == [("data", b"abcd")]
    assert s.reports == [] and s.r.retransmitted == 0


def test_overlap_that_extends_past_the_delivered_end() -> None:
    s = Stream()
    s.at(0, b"0123456789")
    s.at(5, b"56789abcdef")
    assert s.sink.items == [("data", b"0123456789abcdef")]
    assert s.r.retransmitted == 5


def test_differing_duplicate_of_a_held_segment() -> None:
    s = Stream()
    s.at(10, b"KLMNO")
    s.at(10, b"KLXNOPQ")  # the held copy wins, its tail extends it
    s.at(0, b"ABCDEFGHIJ")
    assert s.sink.items == [("data", b"ABCDEFGHIJKLMNOPQ")]
    assert s.reports == [("tcp.retransmission-differs", 12, 3)]


def test_retransmission_after_a_syn_retransmission() -> None:
    s = Stream()
    s.send(s.isn, flags=SYN)  # the SYN again
    s.at(0, b"abc")
    assert s.sink.items == [("data", b"abc")]
    assert s.reports == []


# -- loss -------------------------------------------------------------------------------------------------------------


def test_lost_segment_is_a_gap_at_its_offset_never_zeros() -> None:
    s = Stream()
    pieces = chunks(DATA, [1000])
    for at, piece in pieces[:3] + pieces[4:]:
        s.at(at, piece)
    assert s.sink.items == [("data", DATA[:3000])]  # the rest waits for the hole
    s.r.flush(99)
    assert s.sink.items == [("data", DATA[:3000]), ("gap", 1000), ("data", DATA[4000:])]
    assert s.reports == [("tcp.gap", 3000, 0)]
    assert (s.r.gaps, s.r.gap_bytes, s.r.offset) == (1, 1000, len(DATA))


def test_ack_beyond_a_hole_declares_the_gap() -> None:
    s = Stream()
    s.at(0, b"a" * 100)
    s.at(200, b"c" * 100)
    assert s.reports == []
    s.ack(150)  # the peer has bytes up to 150; 150..200 may still come
    assert s.reports == []
    s.ack(250)  # now the whole hole is behind what the peer has
    assert s.reports == [("tcp.gap", 100, 5)]
    assert s.sink.items == [("data", b"a" * 100), ("gap", 100), ("data", b"c" * 100)]


def test_ack_before_the_segment_after_the_hole() -> None:
    s = Stream()
    s.at(0, b"a" * 100)
    s.ack(300)
    assert s.reports == []  # nothing to deliver yet
    s.at(200, b"c" * 100)
    assert s.reports == [("tcp.gap", 100, 4)]
    assert s.sink.items == [("data", b"a" * 100), ("gap", 100), ("data", b"c" * 100)]


def test_ack_covering_two_holes_declares_both() -> None:
    s = Stream()
    s.at(0, b"a" * 100)
    s.at(200, b"c" * 50)
    s.at(300, b"e" * 50)
    s.ack(400)
    assert [r[:2] for r in s.reports] == [("tcp.gap", 100), ("tcp.gap", 250)]
    assert s.sink.items == [("data", b"a" * 100), ("gap", 100), ("data", b"c" * 50), ("gap", 50), ("data", b"e" * 50)]
    assert s.r.pending == {}


def test_ack_of_held_data_only_is_no_gap() -> None:
    s = Stream()
    s.at(0, b"a" * 100)
    s.at(200, b"c" * 100)
    s.ack(100)
    s.ack(90)  # an old ack
    assert s.reports == []
    s.at(100, b"b" * 100)
    assert s.sink.items == [("data", b"a" * 100 + b"b" * 100 + b"c" * 100)]


def test_buffer_bound_turns_the_hole_into_a_gap() -> None:
    s = Stream(max_buffer=2500)
    s.at(0, b"a" * 100)
    for i in range(3):
        s.at(1100 + 1000 * i, bytes([65 + i]) * 1000)
    assert [r[:2] for r in s.reports] == [("tcp.gap", 100)]
    assert s.sink.items == [("data", b"a" * 100), ("gap", 1000), ("data", b"A" * 1000 + b"B" * 1000 + b"C" * 1000)]
    assert s.r.pending_bytes == 0


def test_buffer_bound_holds_with_many_holes() -> None:
    """Many small held segments behind many holes: every arrival must bring the buffer back under its bound."""
    bound = 10_000
    s = Stream(max_buffer=bound)
    s.at(0, b"x")
    for i in range(100):  # one byte held every 10 bytes: 100 holes
        s.at(10 + 10 * i, b"h")
    for i in range(20):  # then large segments beyond them
        s.at(5000 + 3000 * i, b"L" * 3000)
        assert s.r.pending_bytes <= bound
    s.r.flush(0)
    assert s.r.pending_bytes == 0


def test_reordering_off_makes_every_hole_a_gap_at_once() -> None:
    s = Stream(reorder=False)
    s.at(0, b"a" * 10)
    s.at(20, b"c" * 10)
    s.at(10, b"b" * 10)  # arrives late: already given up, offered to the sink, and told
    assert s.reports == [("tcp.gap", 10, 3), ("tcp.late-segment", 10, 4)]
    assert s.sink.items == [("data", b"a" * 10), ("gap", 10), ("data", b"c" * 10)]
    assert s.sink.filled == [(10, b"b" * 10)]
    assert s.r.retransmitted == 0 and s.r.gap_bytes == 10  # the sink could not use them
    s.at(10, b"b" * 10)  # a second copy is a retransmission again
    assert s.r.retransmitted == 10 and len(s.reports) == 2


def test_snaplen_cut_segment_held_out_of_order() -> None:
    s = Stream()
    s.at(0, b"a" * 10)
    s.at(20, b"c" * 5, missing=15)  # 20 bytes on the wire, 5 captured
    s.at(40, b"e" * 10)
    s.at(10, b"b" * 10)
    assert [r[:2] for r in s.reports] == [("tcp.gap", 25)]
    assert s.sink.delivered() == b"a" * 10 + b"b" * 10 + b"c" * 5 + b"?" * 15 + b"e" * 10


def test_snaplen_cut_retransmission_covers_only_new_bytes() -> None:
    s = Stream()
    s.at(0, b"a" * 10)
    s.at(5, b"a" * 5 + b"b" * 2, missing=8)  # 15 on the wire from offset 5: 5 old, 2 new, 8 cut
    assert s.sink.delivered() == b"a" * 10 + b"b" * 2 + b"?" * 8
    assert s.r.offset == 20


# -- start and end of a connection ----------------------------------------------------------------------------------


def test_capture_starting_mid_connection() -> None:
    s = Stream(isn=None)
    s.send(777_000, b"", flags=ACK)  # a pure ACK does not start the stream
    assert s.sink.started is None
    s.send(777_000 + 5, b"world")
    s.send(777_000, b"hello")  # bytes before the first one seen are history
    s.send(777_000 + 10, b"!")
    assert s.sink.started is True and s.r.mid_stream
    assert s.sink.items == [("data", b"world!")]
    assert s.r.retransmitted == 5


def test_fin_after_all_data() -> None:
    s = Stream()
    s.at(0, b"abc")
    assert not s.r.finished
    s.at(3, b"", flags=FIN | ACK)
    assert s.r.finished and s.r.fin_offset == 3


def test_fin_with_data_and_a_hole_before_it() -> None:
    s = Stream()
    s.at(0, b"abc")
    s.at(6, b"ghi", flags=FIN | ACK | PSH)
    assert not s.r.finished and s.r.fin_offset == 9
    s.at(3, b"def")
    assert s.r.finished
    assert s.sink.items == [("data", b"abcdefghi")]


def test_fin_whose_data_never_comes() -> None:
    s = Stream()
    s.at(0, b"abc")
    s.at(10, b"", flags=FIN | ACK)
    assert not s.r.finished
    s.r.flush(0)
    assert s.reports == [("tcp.gap", 3, 0)]
    assert s.r.finished and s.sink.delivered() == b"abc" + b"?" * 7


def test_rst_finishes_a_direction() -> None:
    s = Stream()
    s.at(0, b"abc")
    s.at(3, b"", flags=RST)
    assert s.r.finished and s.r.reset


def test_rst_on_a_direction_that_never_started() -> None:
    s = Stream(isn=None)
    s.send(5000, b"", flags=RST | ACK)
    assert s.r.reset and s.r.finished
    assert s.sink.started is None and not s.r.mid_stream


# -- through the dissector -------------------------------------------------------------------------------------------

REQUEST = craft.request(3, 1, 7, b"\0\0\0\0")
RESPONSE = craft.response(7, b"\0" * 8)


def run(packets, **options) -> list:
    return list(Dissector(**options).run(packets))


def ends(evs) -> list[ConnectionEnd]:
    return [e for e in evs if isinstance(e, ConnectionEnd)]


def oks(evs) -> list[tuple[int, int]]:
    return [(e.connection.id, e.correlation_id) for e in evs if isinstance(e, Exchange) and e.status == "ok"]


def test_fin_lifecycle_ends_the_connection_when_both_sides_are_done() -> None:
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, REQUEST) + conv.send(SERVER, RESPONSE)
    packets += [conv.fin(CLIENT), conv.ack(SERVER)]
    dissector = Dissector()
    evs = [e for p in packets for e in dissector.feed(p)]
    assert ends(evs) == []  # half closed: the broker may still answer
    evs = dissector.feed(conv.fin(SERVER))
    [end] = ends(evs)
    assert end.ended == "fin"
    assert (end.packets, end.bytes, end.requests, end.responses) == ((4, 4), (len(REQUEST), len(RESPONSE)), 1, 1)
    assert dissector.feed(conv.ack(CLIENT)) == []  # the last ACK of a closed connection is ignored
    assert [e for e in dissector.finish() if isinstance(e, ConnectionEnd)] == []
    assert dissector.counters.kafka_connections == 1


def test_rst_ends_the_connection() -> None:
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, REQUEST) + [conv.rst(SERVER)]
    evs = run(packets)
    assert [(e.status, e.correlation_id) for e in evs if isinstance(e, Exchange)] == [("unanswered", 7)]
    assert [e.ended for e in ends(evs)] == ["reset"]


def test_refused_connection_ends_at_the_reset() -> None:
    """It carried no data: counted at the reset, not told as a connection of its own."""
    conv = craft.Conversation()
    dissector = Dissector()
    assert dissector.feed(conv.segment(CLIENT, flags=SYN)) == []
    assert dissector.feed(conv.segment(SERVER, flags=RST | ACK, seq=0)) == []
    assert (dissector.counters.empty_connections, dissector.counters.kafka_connections) == (1, 0)


def test_four_tuple_reused_after_close() -> None:
    first = craft.Conversation(client_isn=1000, server_isn=5000)
    packets = first.handshake() + first.send(CLIENT, REQUEST) + first.send(SERVER, RESPONSE) + first.close()
    second = craft.Conversation(client_isn=90_000, server_isn=70_000, clock=first.clock)
    request2 = craft.request(3, 1, 8, b"\0\0\0\0")
    packets += second.handshake() + second.send(CLIENT, request2) + second.send(SERVER, craft.response(8, b"\0" * 8)) + second.close()
    evs = run(packets)
    assert oks(evs) == [(1, 7), (2, 8)]
    assert [e.ended for e in ends(evs)] == ["fin", "fin"]


def test_four_tuple_reused_without_a_close() -> None:
    first = craft.Conversation(client_isn=1000, server_isn=5000)
    packets = first.handshake() + first.send(CLIENT, REQUEST)
    second = craft.Conversation(client_isn=90_000, server_isn=70_000, clock=first.clock)
    request2 = craft.request(3, 1, 8, b"\0\0\0\0")
    packets += second.handshake() + second.send(CLIENT, request2) + second.send(SERVER, craft.response(8, b"\0" * 8))
    dissector = Dissector()
    evs = list(dissector.run(packets))
    assert [(e.connection.id, e.status, e.correlation_id) for e in evs if isinstance(e, Exchange)] == [
        (1, "unanswered", 7),
        (2, "ok", 8),
    ]
    assert [(e.connection.id, e.ended) for e in ends(evs)] == [(1, "reused"), (2, "capture-end")]
    assert dissector.counters.kafka_connections == 2


def test_four_tuple_reused_after_a_mid_stream_connection() -> None:
    """The first connection started before the capture (no SYN seen); a SYN on its 4-tuple opens a new one."""
    first = craft.Conversation(client_isn=1000, server_isn=5000)
    first.handshake()  # not captured
    packets = first.send(CLIENT, REQUEST) + first.send(SERVER, RESPONSE)
    second = craft.Conversation(client_isn=90_000, server_isn=70_000, clock=first.clock)
    request2 = craft.request(3, 1, 8, b"\0\0\0\0")
    packets += second.handshake() + second.send(CLIENT, request2) + second.send(SERVER, craft.response(8, b"\0" * 8))
    evs = run(packets)
    assert oks(evs) == [(1, 7), (2, 8)]
    assert [(e.connection.id, e.ended, e.mid_stream) for e in ends(evs)] == [(1, "reused", True), (2, "capture-end", False)]


def test_syn_retransmission_is_not_a_new_connection() -> None:
    conv = craft.Conversation()
    syn = conv.segment(CLIENT, flags=SYN)
    again = syn._replace(index=syn.index + 100)
    packets = (
        [syn, again, conv.segment(SERVER, flags=SYN | ACK), conv.ack(CLIENT)] + conv.send(CLIENT, REQUEST) + conv.send(SERVER, RESPONSE)
    )
    dissector = Dissector()
    evs = list(dissector.run(packets))
    assert oks(evs) == [(1, 7)]
    assert dissector.counters.connections == 1


def test_gap_notices_carry_the_connection_and_the_stream_offset() -> None:
    conv = craft.Conversation()
    big = craft.request(3, 1, 9, b"\0" * 5000)
    packets = conv.handshake() + conv.send(CLIENT, REQUEST)
    data = conv.send(CLIENT, big, sizes=1000)
    packets += data[:2] + data[3:] + conv.send(SERVER, craft.response(9, b"\0" * 8))
    evs = run(packets)
    gaps = [e for e in evs if isinstance(e, Notice) and e.diagnostic.code == "tcp.gap"]
    assert [(g.diagnostic.offset, g.connection.id, g.diagnostic.scope) for g in gaps] == [(len(REQUEST) + 2000, 1, "stream")]
    # the ACK on the response's packet is taken before its payload: the request, cut by the gap, is handed on
    # first, so the response still finds it
    exchange = next(e for e in evs if isinstance(e, Exchange) and e.correlation_id == 9)
    assert (exchange.status, exchange.request.frame.lost) == ("malformed", 1000)  # only the lost segment is missing
    assert exchange.request.frame.rest == ((2996, big[3000:]),)
    assert evs.index(gaps[0]) < evs.index(exchange)
    [end] = ends(evs)
    assert (end.gaps, end.gap_bytes, end.out_of_order) == (1, 1000, 3)


# -- patience: acknowledged holes held open for late segments ----------------------------------------------------


def test_an_acknowledged_hole_waits_for_its_late_segment() -> None:
    s = Stream(patience=Patience(5, 1 << 20, 1 << 40))
    s.at(0, b"a" * 10)
    s.at(20, b"c" * 10)
    s.ack(30)  # the peer got it all: the hole was sent
    s.at(30, b"d" * 10)
    s.ack(40)
    s.at(10, b"b" * 10)  # four packets late, within the window
    assert s.reports == [] and s.r.gaps == 0
    assert s.sink.items == [("data", b"a" * 10 + b"b" * 10 + b"c" * 10 + b"d" * 10)]


@pytest.mark.parametrize("bound", ["packets", "bytes", "time"])
def test_an_acknowledged_hole_is_declared_lost_past_each_bound(bound: str) -> None:
    patience = {"packets": Patience(3, 1 << 20, 1 << 40), "bytes": Patience(100, 25, 1 << 40), "time": Patience(100, 1 << 20, 2)}[bound]
    s = Stream(patience=patience)
    s.at(0, b"a" * 10)
    s.at(20, b"c" * 10)
    s.ack(30)  # packet 4: the window opens
    for i in range(3, 7):
        s.at(10 * i, bytes([i]) * 10)  # packets 5 to 8
    assert [code for code, _, _ in s.reports] == ["tcp.gap"]
    assert s.reports[0][1] == 10 and s.reports[0][2] == {"packets": 8, "bytes": 6, "time": 7}[bound]
    s.at(10, b"b" * 10)
    assert s.reports[-1][0] == "tcp.late-segment" and s.sink.filled == [(10, b"b" * 10)]
