"""The sans-IO core as its drivers see it: events in completion order, `run` equal to `feed`, bounded state."""

from __future__ import annotations

import random

from kdissect.capture import Packet
from kdissect.dissector import Dissector
from kdissect.events import ConnectionEnd, Exchange, Message, Notice
from kdissect.limits import Limits
from kdissect.net.tcp import SYN
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER


def req(correlation: int, size: int = 4) -> bytes:
    return craft.request(3, 1, correlation, b"\0" * size)


def resp(correlation: int, size: int = 8) -> bytes:
    return craft.response(correlation, b"\0" * size)


def kinds(evs) -> list[str]:
    out = []
    for e in evs:
        if isinstance(e, Exchange):
            out.append(f"{e.status}:{e.connection.id}:{e.correlation_id}")
        elif isinstance(e, Notice):
            out.append(f"notice:{e.diagnostic.code}")
        else:
            out.append(f"end:{e.connection.id}:{e.ended}")
    return out


def busy_capture() -> list[Packet]:
    """Three interleaved connections with loss, reordering, fragments and a malformed packet."""
    clock = craft.Clock()
    a = craft.Conversation(client_port=40001, clock=clock)
    b = craft.Conversation("fd00::1", "fd00::2", client_port=40002, clock=clock, linktype=113)
    c = craft.Conversation(client_port=40003, server_port=19092, clock=clock)
    packets = a.handshake() + b.handshake() + c.handshake()
    big = req(2, 6000)
    a_data = a.send(CLIENT, req(1) + big, sizes=1000)
    packets += a_data[:3] + b.send(CLIENT, req(10)) + a_data[4:] + a_data[3:4]  # reordered
    packets += b.fragmented(CLIENT, req(11, 3000), 3) + c.send(CLIENT, req(20))
    packets += a.send(SERVER, resp(1) + resp(2)) + b.send(SERVER, resp(11)) + c.send(SERVER, resp(20))
    packets.append(Packet(clock.tick()[0], 1, b"\x01\x02", 2, clock.index))
    lost = c.send(CLIENT, req(21, 3000), sizes=1000)
    packets += lost[:1] + lost[2:] + c.send(SERVER, resp(21)) + a.close()
    return packets


def test_run_equals_feeding_packet_by_packet() -> None:
    packets = busy_capture()
    fed = Dissector()
    by_feed = [e for p in packets for e in fed.feed(p)] + fed.finish()
    ran = Dissector()
    by_run = list(ran.run(packets))
    assert by_run == by_feed
    assert ran.counters == fed.counters
    assert kinds(by_run) == [
        "ok:1:1",
        "ok:1:2",
        "unanswered:2:10",
        "ok:2:11",
        "ok:3:20",
        "notice:packet.truncated",
        "end:1:fin",
        "end:2:capture-end",
        # the lost segment of request 21 could still come late until the capture ends: its response waits for it
        "notice:tcp.gap",
        "malformed:3:21",  # its request lost a segment
        "end:3:capture-end",
    ]


def test_events_come_out_with_the_packet_that_completes_them() -> None:
    conv = craft.Conversation()
    dissector = Dissector()
    for p in conv.handshake():
        assert dissector.feed(p) == []
    parts = conv.send(CLIENT, req(1, 3000), sizes=1000)
    for p in parts:
        assert dissector.feed(p) == []  # a request alone completes nothing
    response = conv.send(SERVER, resp(1, 2500), sizes=1000)
    assert dissector.feed(response[0]) == [] and dissector.feed(response[1]) == []
    [exchange] = dissector.feed(response[2])
    assert exchange.status == "ok" and exchange.id == 1
    assert (exchange.request.frame.first_packet, exchange.request.frame.last_packet) == (parts[0].index, parts[-1].index)
    assert exchange.request.ts == parts[-1].ts
    assert exchange.response.ts == response[2].ts
    assert exchange.latency == response[2].ts - parts[-1].ts
    assert dissector.feed(conv.fin(CLIENT)) == []
    [end] = dissector.feed(conv.fin(SERVER))
    assert isinstance(end, ConnectionEnd) and end.ended == "fin"
    assert dissector.finish() == []


def test_counters() -> None:
    packets = busy_capture()
    dissector = Dissector(ports=[9092, 19092])
    events = list(dissector.run(packets))
    c = dissector.counters
    assert c.packets == len(packets)
    assert c.bytes == sum(p.orig_len for p in packets)
    assert (c.first_ts, c.last_ts) == (packets[0].ts, packets[-1].ts)
    malformed = [e.diagnostic.code for e in events if isinstance(e, Notice) and e.connection is None]
    assert malformed == ["packet.truncated"]
    assert (c.connections, c.kafka_connections, c.ignored_connections, c.evicted_connections) == (3, 3, 0, 0)
    assert c.exchanges == 6


def test_other_ports_only_when_asked() -> None:
    conv = craft.Conversation(client_port=1111, server_port=2222)
    packets = conv.handshake() + conv.send(CLIENT, req(1)) + conv.send(SERVER, resp(1))
    evs = list(Dissector(ports=[2222]).run(packets))
    [ex] = [e for e in evs if isinstance(e, Exchange)]
    assert ex.connection.broker.port == 2222


def test_connection_eviction_is_bounded_and_counted() -> None:
    clock = craft.Clock()
    dissector = Dissector(limits=Limits(max_connections=4))
    evs = []
    for i in range(12):
        conv = craft.Conversation(client_port=30000 + i, clock=clock)
        for p in conv.handshake() + conv.send(CLIENT, req(i)):
            evs += dissector.feed(p)
        assert len(dissector._flows) <= 2 * 4
    evs += dissector.finish()
    evicted = [e for e in evs if isinstance(e, ConnectionEnd) and e.ended == "evicted"]
    assert dissector.counters.evicted_connections == len(evicted) == 8
    # the oldest go first, each with its request settled as unanswered before the connection's end
    assert [e.connection.client.port for e in evicted] == [30000 + i for i in range(8)]
    assert kinds(evs)[:2] == ["unanswered:1:0", "end:1:evicted"]
    assert sorted(e.correlation_id for e in evs if isinstance(e, Exchange)) == list(range(12))
    assert dissector.counters.kafka_connections == 12


def test_closed_connections_are_evicted_first_and_not_counted() -> None:
    clock = craft.Clock()
    dissector = Dissector(limits=Limits(max_connections=2))
    done = craft.Conversation(client_port=30000, clock=clock)
    for p in done.handshake() + done.send(CLIENT, req(1)) + done.send(SERVER, resp(1)) + done.close():
        dissector.feed(p)
    for i in range(1, 3):
        conv = craft.Conversation(client_port=30000 + i, clock=clock)
        for p in conv.handshake():
            dissector.feed(p)
    assert dissector.counters.evicted_connections == 0
    assert len(dissector._flows) == 4


def test_syn_flood_has_bounded_state_and_no_exchanges() -> None:
    rng = random.Random(7)
    clock = craft.Clock()
    dissector = Dissector(limits=Limits(max_connections=64))
    evs = []
    for i in range(3000):
        conv = craft.Conversation(f"10.{rng.randrange(256)}.{rng.randrange(256)}.1", client_port=1024 + i % 60000, clock=clock)
        evs += dissector.feed(conv.segment(CLIENT, flags=SYN))
        assert len(dissector._flows) <= 2 * 64
    evs += dissector.finish()
    assert evs == []  # connections without data are counted, not told one by one
    assert dissector.counters.exchanges == 0
    assert dissector.counters.empty_connections == 3000
    assert dissector.counters.evicted_connections == 3000 - 64
    assert dissector._flows == {}


def test_syn_flood_on_another_port_is_ignored() -> None:
    clock = craft.Clock()
    dissector = Dissector(limits=Limits(max_connections=16))
    evs = []
    for i in range(500):
        conv = craft.Conversation(client_port=1024 + i, server_port=80, clock=clock)
        evs += dissector.feed(conv.segment(CLIENT, flags=SYN))
        assert len(dissector._flows) <= 2 * 16
    evs += dissector.finish()
    assert evs == []
    assert dissector.counters.ignored_connections == 500


class Exploding:
    """A body decoder with a bug: the core must keep pairing and report it on the message."""

    def new_session(self) -> None:
        return None

    def request(self, message: Message, *session) -> Message:
        raise RuntimeError("boom")

    def response(self, message: Message, request: Message, *session) -> Message:
        return Message(message.frame, message.header, {"decoded": True}, message.diagnostics)


def test_a_decoder_failure_costs_one_body() -> None:
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, req(1)) + conv.send(SERVER, resp(1))
    [ex] = [e for e in Dissector(decoder=Exploding()).run(packets) if isinstance(e, Exchange)]
    assert ex.status == "malformed"  # its request body could not be read
    assert [d.code for d in ex.request.diagnostics] == ["decode.internal-error"]
    assert ex.response.body == {"decoded": True}


def test_exchange_ids_count_across_connections_in_completion_order() -> None:
    clock = craft.Clock()
    a = craft.Conversation(client_port=1, clock=clock)
    b = craft.Conversation(client_port=2, clock=clock)
    packets = a.handshake() + b.handshake() + a.send(CLIENT, req(1)) + b.send(CLIENT, req(1))
    packets += b.send(SERVER, resp(1)) + a.send(SERVER, resp(1))
    evs = [e for e in Dissector().run(packets) if isinstance(e, Exchange)]
    assert [(e.id, e.connection.id) for e in evs] == [(1, 2), (2, 1)]
