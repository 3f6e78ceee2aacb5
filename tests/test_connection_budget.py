"""Per-connection state priced in bytes: connections, segments and waiting requests count against
`max_buffered_bytes` with their overhead, and past it the least recently active connections are evicted, said once
per round. Memory stays flat however many connections a capture opens."""

from __future__ import annotations

import struct
import sys
import tracemalloc

import pytest

from kdissect.dissector import Options, make_dissector
from kdissect.events import ConnectionEnd, Notice
from kdissect.limits import Limits
from kdissect.net.tcp import SYN
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response

MiB = 1 << 20
BUDGET = 2 * MiB
SCALES = (1, 2, 4, 8)
METADATA = encode_body(3, 1, "request", {"Topics": [{"Name": "orders"}]})


def _conversation(i: int, clock: Clock) -> Conversation:
    return Conversation(client=f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255 or 1}", client_port=1024 + i % 60000, clock=clock)


def family(kind: str, connections: int) -> list:
    """SYNs alone; connections each holding half a frame; connections each with 10 requests waiting."""
    clock, packets = Clock(), []
    for i in range(connections):
        conv = _conversation(i, clock)
        if kind == "syn":
            packets.append(conv.segment(CLIENT, flags=SYN))
        elif kind == "half-frame":
            packets += conv.handshake() + conv.send(CLIENT, struct.pack(">i", 1000) + b"\0" * 500)
        else:
            packets += conv.handshake()
            for correlation in range(10):
                packets += conv.send(CLIENT, request(3, 1, correlation, METADATA))
    return packets


def run(packets: list, limits: Limits) -> tuple[int, list, int]:
    """(peak traced bytes, the notices and the ids of evicted connections, connections evicted). Other events
    are dropped as they come, as a writer would."""
    dissector = make_dissector(Options(limits=limits))
    kept = []

    def keep(events: list) -> None:
        for e in events:
            if isinstance(e, Notice):
                kept.append(e)
            elif isinstance(e, ConnectionEnd) and e.ended == "evicted":
                kept.append(e.connection.id)

    tracemalloc.start()
    try:
        for packet in packets:
            keep(dissector.feed(packet))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    keep(dissector.finish())
    return peak, kept, dissector.counters.evicted_connections


@pytest.mark.parametrize("kind,per_scale", [("syn", 1500), ("half-frame", 600), ("waiting-requests", 300)])
def test_memory_stays_within_the_budget_at_any_number_of_connections(kind, per_scale):
    limits = Limits(max_buffered_bytes=BUDGET)
    peaks = []
    for scale in SCALES:
        peak, events, evicted = run(family(kind, per_scale * scale), limits)
        peaks.append(peak)
        told = [e.diagnostic.message for e in events if isinstance(e, Notice) and e.diagnostic.code == "limits.buffered-bytes"]
        assert sum(int(m.split("the ")[1].split(" least")[0]) for m in told) == evicted
    assert evicted > per_scale * 4, evicted  # at 8x most connections went, and each round said so
    assert max(peaks) < 2.5 * BUDGET, peaks
    unbounded, _, _ = run(family(kind, per_scale * 8), Limits())
    assert unbounded > 2 * max(peaks), (unbounded, peaks)  # the budget is what held it


def test_evicted_connections_are_the_least_recently_active():
    clock, packets = Clock(), []
    convs = [_conversation(i, clock) for i in range(400)]
    for i, conv in enumerate(convs):
        packets += conv.handshake() + conv.send(CLIENT, struct.pack(">i", 1000) + b"\0" * 500)
        if i % 20 == 0:
            packets += convs[0].send(CLIENT, b"\0")  # the first connection keeps speaking: never the least recently active
    _, events, evicted = run(packets, Limits(max_buffered_bytes=BUDGET // 2))
    gone = [e for e in events if isinstance(e, int)]
    assert evicted == len(gone) > 100 and gone == sorted(gone) and 1 not in gone


def test_a_syn_costs_little():
    """A SYN alone opens a connection priced at `CONNECTION_COST` and taking less; its framers, TLS gate, pairing,
    decoder session and addresses come with its first byte, so it costs under half of one carrying data."""
    from kdissect.kafka.connection import CONNECTION_COST

    syn, _, _ = run(family("syn", 2000), Limits())
    data, _, _ = run(family("half-frame", 2000), Limits())
    assert syn / 2000 < CONNECTION_COST and syn < 0.5 * data, (syn / 2000, data / 2000)


def work(packets: list, limits: Limits) -> tuple[int, int]:
    """(Python function calls made feeding the packets, pricings of a connection among them): work counted, not
    timed, so the figures hold on a busy machine."""
    from kdissect.kafka.connection import Connection

    dissector = make_dissector(Options(limits=limits))
    calls = priced = 0
    code = Connection.priced.__code__

    def count(frame, event, arg):
        nonlocal calls, priced
        if event == "call":
            calls += 1
            priced += frame.f_code is code

    sys.setprofile(count)
    try:
        for packet in packets:
            dissector.feed(packet)
        dissector.finish()
    finally:
        sys.setprofile(None)
    return calls, priced


@pytest.mark.parametrize("kind,per_scale", [("syn", 1000), ("half-frame", 400), ("waiting-requests", 200)])
def test_work_grows_linearly_with_connections(kind, per_scale):
    """At 1x, 2x and 4x as many connections, under a budget they all overflow, the work grows 2x and 4x, and each
    connection is priced about 2 to 4 times in all: the bound prices the live connections once per half of the budget
    they fill, not once per sixteenth (which priced each one about 16 times)."""
    limits = Limits(max_buffered_bytes=BUDGET)
    figures = [work(family(kind, per_scale * scale), limits) for scale in (1, 2, 4)]
    calls = [c for c, _ in figures]
    assert calls[1] / calls[0] < 2.3 and calls[2] / calls[0] < 4.6, calls
    for scale, (_, priced) in zip((1, 2, 4), figures):
        assert priced <= 5 * per_scale * scale, (kind, scale, priced)


def test_responses_waiting_for_their_request_are_priced():
    """A response whose packets acknowledge request bytes the capture has not shown yet waits for them
    (`Connection.deferred`): its bytes count against the budget like any other held, so a capture of such
    connections is evicted within it."""
    from kdissect.kafka.connection import CONNECTION_COST, KAFKA_COST

    clock, connections = Clock(), []
    for i in range(60):
        conv = _conversation(i, clock)
        opened = conv.handshake()
        head = conv.send(CLIENT, request(3, 1, 1, METADATA), sizes=10)[0]  # the rest of the request is never captured
        connections.append(opened + [head] + conv.send(SERVER, response(1, b"\0" * 60_000)))
    dissector = make_dissector(Options(limits=Limits(max_buffered_bytes=BUDGET)))
    for packet in connections[0]:
        dissector.feed(packet)
    [connection] = dissector._live
    assert connection.deferred_bytes > 60_000
    assert connection.priced() >= CONNECTION_COST + KAFKA_COST + connection.deferred_bytes
    for packet in [p for packets in connections[1:] for p in packets]:
        dissector.feed(packet)
    held = sum(c.deferred_bytes for c in dissector._live)
    assert dissector.counters.evicted_connections > 20 and held < BUDGET, (dissector.counters.evicted_connections, held)


def test_the_end_of_a_capture_settles_one_connection_at_a_time():
    """`settle` closes the connections still open one by one, handing on each one's events and letting its memory
    go before the next: a capture ending with thousands open costs at its end no more than in its middle."""
    packets = family("half-frame", 100)
    dissector = make_dissector(Options())
    for packet in packets:
        dissector.feed(packet)
    first = next(iter(dissector._live))
    settling = dissector.settle()
    event = next(settling)
    assert event.request.frame.lost and len(dissector._live) == 99 and first.streams == () and len(dissector._flows) == 198
    rest = list(settling)
    assert len(rest) == 199 and dissector._live == {} and dissector._flows == {}  # an exchange and an end each
