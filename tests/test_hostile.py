"""Hostile and broken input (issue 8): each named case ends in a named diagnostic at its location, decoding goes
on with what follows, and no bound can be talked past. The fuzz harnesses' regressions are replayed here too."""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
from pathlib import Path

import pytest
import zstandard

from kdissect.capture import Packet
from kdissect.capture.pcapng import EPB
from kdissect.capture.source import CaptureError, CaptureFile
from kdissect.capture.writer import PcapngWriter, pcap_bytes
from kdissect.dissector import Dissector, Options, make_dissector
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.kafka.phase import PROBING
from kdissect.limits import Limits
from kdissect.net.tcp import SYN
from kdissect.records import decode_records
from kdissect.records.codecs import GZIP
from kdissect.records.encode import Draft, compress, encode_batch, encode_message
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER
from kdissect.views.json_lines import exchange_json, time_text
from kdissect.wire import write_varint

ETHERNET = 1
FUZZ = Path(__file__).resolve().parent.parent / "fuzz"


def dissect(packets, **limits) -> list:
    return list(make_dissector(Options(limits=Limits(**limits))).run(packets))


def exchanges(events) -> list[Exchange]:
    return [e for e in events if isinstance(e, Exchange)]


def notices(events) -> list[tuple[str, str, int | None]]:
    return [(n.diagnostic.code, n.diagnostic.scope, n.diagnostic.offset) for n in events if isinstance(n, Notice)]


def codes(message) -> list[str]:
    return [d.code for d in message.diagnostics]


def read(data: bytes, name: str = "x.pcap") -> tuple[list[Packet], list]:
    capture = CaptureFile(io.BytesIO(data), name)
    packets = list(capture.packets())
    return packets, [(d.code, d.offset) for d in capture.diagnostics()]


def produce(correlation: int, records: bytes, acks: int = 1, topics: int = 1) -> bytes:
    """A Produce v3 request frame: one topic "t", one partition, this records field."""
    partition = struct.pack(">ii", 0, len(records)) + records
    topic = struct.pack(">h", 1) + b"t" + struct.pack(">i", 1) + partition
    body = struct.pack(">hhii", -1, acks, 1000, topics) + topic
    return craft.request(0, 3, correlation, body)


def small(correlation: int) -> bytes:
    """A Metadata v1 request. The responses below carry bodies too short for Metadata v1 (it needs 12 bytes),
    so their exchanges pair but are `malformed`."""
    return craft.request(3, 1, correlation, b"\0\0\0\0")


def conversation(*frames, **options) -> list[Packet]:
    """A whole connection: handshake, each (side, frame) in its own segments, the close."""
    conv = craft.Conversation(**options)
    packets = conv.handshake()
    for side, frame in frames:
        packets += conv.send(side, frame)
    return packets + conv.close()


def sample_capture() -> tuple[list[Packet], bytes]:
    packets = conversation(
        (CLIENT, small(1)), (SERVER, craft.response(1, b"\0" * 8)), (CLIENT, small(2)), (SERVER, craft.response(2, b"\0" * 8))
    )
    return packets, pcap_bytes(packets, ETHERNET)


# -- capture files ------------------------------------------------------------------------------------------------


def record_offsets(data: bytes) -> list[int]:
    """File offset of every pcap record."""
    offsets, pos = [], 24
    while pos < len(data):
        offsets.append(pos)
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    return offsets


def test_pcap_truncated_at_every_byte() -> None:
    """Cut anywhere: a CaptureError inside the file header; after it, every whole record read, and a cut record
    named `pcap.truncated` at the file offset where the cut left it."""
    packets, data = sample_capture()
    starts = record_offsets(data)
    for cut in range(len(data)):
        if cut < 24:
            with pytest.raises(CaptureError):
                read(data[:cut])
            continue
        got, diagnostics = read(data[:cut])
        whole = sum(1 for s in starts if s + 16 + len(packets[starts.index(s)].data) <= cut)
        assert [p.data for p in got] == [p.data for p in packets[:whole]]
        if cut in starts or cut == 24:
            assert diagnostics == []
        else:
            assert diagnostics == [("pcap.truncated", starts[whole])]


def test_pcap_cut_inside_a_record_keeps_the_exchanges_before_it() -> None:
    packets, data = sample_capture()
    starts = record_offsets(data)
    response_2 = max(i for i, p in enumerate(packets) if p.data.endswith(craft.response(2, b"\0" * 8)))
    cut = starts[response_2] + 30
    capture = CaptureFile(io.BytesIO(data[:cut]), "x.pcap")
    events = dissect(capture.packets())
    assert [(e.status, e.correlation_id) for e in exchanges(events)] == [("malformed", 1), ("unanswered", 2)]
    assert [(d.code, d.offset) for d in capture.diagnostics()] == [("pcap.truncated", starts[response_2])]
    [end] = [e for e in events if isinstance(e, ConnectionEnd)]
    assert end.ended == "capture-end"


def test_pcapng_unknown_blocks_are_skipped_and_told_once() -> None:
    packets, _ = sample_capture()
    out = io.BytesIO()
    writer = PcapngWriter(out)
    writer.interface(ETHERNET)
    writer.packet(packets[0], 0, EPB)
    first_unknown = out.tell()
    for block_type in (0x0BAD1DEA, 0x7FFFFFFF, 0x1234):
        writer.block(block_type, b"\xff" * 12)
    for p in packets[1:]:
        writer.packet(p, 0, EPB)
    got, diagnostics = read(out.getvalue(), "x.pcapng")
    assert [p.data for p in got] == [p.data for p in packets]
    assert diagnostics == [("pcapng.unknown-block", first_unknown)]


def test_pcapng_interface_option_past_its_block() -> None:
    """Regression (fuzz): an if_tsresol option claiming bytes past its block raised IndexError; now the option is
    ignored and the packets are read."""
    packets, _ = sample_capture()
    out = io.BytesIO()
    writer = PcapngWriter(out)
    writer.interface(ETHERNET)
    writer.block(1, struct.pack("<HHI", ETHERNET, 0, 0) + struct.pack("<HH", 9, 1))  # the option's byte is missing
    for p in packets:
        writer.packet(p, 0, EPB)
    got, diagnostics = read(out.getvalue(), "x.pcapng")
    assert [p.data for p in got] == [p.data for p in packets] and diagnostics == []


def test_zero_length_records() -> None:
    """An empty record is a packet with nothing in it: a `packet.truncated` notice naming it, and the rest decodes."""
    packets, _ = sample_capture()
    packets.insert(3, Packet(packets[2].ts, ETHERNET, b"", 0, 0))
    data = pcap_bytes(packets, ETHERNET)
    got, diagnostics = read(data)
    assert len(got) == len(packets) and diagnostics == []
    events = dissect(got)
    assert notices(events) == [("packet.truncated", "packet", None)]
    assert [n.packet for n in events if isinstance(n, Notice)] == [4]
    assert [e.status for e in exchanges(events)] == ["malformed", "malformed"]


def test_enormous_records() -> None:
    """A pcap record claiming 4 GiB costs that record (the reader finds the next one); a pcapng block claiming 2 GiB
    stops the read there; nothing is allocated."""
    packets, data = sample_capture()
    starts = record_offsets(data)
    lying = bytearray(data)
    struct.pack_into("<I", lying, starts[4] + 8, 0xFFFFFFF0)
    got, diagnostics = read(bytes(lying))
    assert len(got) == len(packets) - 1 and diagnostics == [("pcap.resync", starts[4])]  # that record alone is lost

    out = io.BytesIO()
    writer = PcapngWriter(out)
    writer.interface(ETHERNET)
    writer.packet(packets[0], 0, EPB)
    at = out.tell()
    out.write(struct.pack("<II", EPB, 0x80000000) + b"\0" * 64)
    got, diagnostics = read(out.getvalue(), "x.pcapng")
    assert len(got) == 1 and diagnostics == [("pcapng.corrupt-block", at)]


def test_huge_original_length_is_only_a_number() -> None:
    packets, _ = sample_capture()
    packets[3] = packets[3]._replace(orig_len=0xFFFFFFFF)
    got, diagnostics = read(pcap_bytes(packets, ETHERNET))
    assert got[3].orig_len == 0xFFFFFFFF and diagnostics == []
    events = dissect(got)
    assert [e.status for e in exchanges(events)] == ["malformed", "malformed"]


def test_timestamps_going_backwards() -> None:
    """Told once with the first offset; latency is then negative, never an error."""
    packets, _ = sample_capture()
    response = next(i for i, p in enumerate(packets) if p.data.endswith(craft.response(1, b"\0" * 8)))
    packets[response] = packets[response]._replace(ts=packets[0].ts - 10**9)
    data = pcap_bytes(packets, ETHERNET)
    got, diagnostics = read(data)
    assert diagnostics == [("capture.time-backwards", record_offsets(data)[response])]
    first = exchanges(dissect(got))[0]
    assert first.status == "malformed" and first.latency < 0


def test_pcapng_timestamps_past_any_calendar_render() -> None:
    """pcapng can state 2**64 units of 10**-9 s plus an offset: the views say "out of range" instead of failing."""
    packets, _ = sample_capture()
    out = io.BytesIO()
    writer = PcapngWriter(out)
    writer.interface(ETHERNET, tsresol=0, tsoffset=2**62)
    for p in packets:
        writer.packet(p._replace(ts=p.ts + 2**62 * 10**9), 0, EPB)
    got, _ = read(out.getvalue(), "x.pcapng")
    [first, _] = exchanges(dissect(got))
    assert exchange_json(first)["time"].endswith("ns (out of range)")
    assert time_text(-(2**80)).endswith("(out of range)")


@pytest.mark.parametrize("container", ["gzip", "lz4"])
def test_corrupt_compressed_container(container: str) -> None:
    """A compressed capture whose data is corrupt: a CaptureError at open, or `capture.truncated-stream` later."""
    import gzip

    import lz4.frame

    _, data = sample_capture()
    packed = gzip.compress(data) if container == "gzip" else lz4.frame.compress(data, content_checksum=True)
    for at in (12, len(packed) // 2, len(packed) - 6):
        bad = bytearray(packed)
        bad[at] ^= 0x55
        try:
            capture = CaptureFile(io.BytesIO(bytes(bad)), "x.pcap")
        except CaptureError:
            continue
        list(capture.packets())
        assert "capture.truncated-stream" in [d.code for d in capture.diagnostics()]


def test_zstd_cut_on_a_block_boundary_is_reported() -> None:
    """zstandard's reader ends quietly wherever its input does; every cut must still be told."""
    packets = conversation(*((CLIENT, small(i)) for i in range(1, 3000)))
    data = pcap_bytes(packets, ETHERNET)
    packed = zstandard.ZstdCompressor(level=1).compress(data)
    flags = packed[4]
    single = flags >> 5 & 1
    pos = 5 + (not single) + (0, 1, 2, 4)[flags & 3] + (single, 2, 4, 8)[flags >> 6]
    boundaries = []
    while pos < len(packed):  # block headers: 3 bytes, little-endian: last flag, type, size
        block = int.from_bytes(packed[pos : pos + 3], "little")
        pos += 3 + (1 if block >> 1 & 3 == 1 else block >> 3)
        if block & 1:
            break
        boundaries.append(pos)
    assert boundaries
    for cut in boundaries:
        got, diagnostics = read(packed[:cut])
        assert [p.data for p in got] == [p.data for p in packets[: len(got)]] and got
        assert "capture.truncated-stream" in [code for code, _ in diagnostics]


# -- TCP ----------------------------------------------------------------------------------------------------------


def test_tcp_sequence_jump() -> None:
    """A million-byte jump: a gap at the stream offset where it happened, told once the peer acknowledges past it;
    the exchanges on both sides of it decode."""
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, small(1))
    jump_at = len(small(1))
    conv.next[CLIENT] += 1_000_000
    packets += conv.send(CLIENT, small(2)) + conv.send(SERVER, craft.response(1, b"\0" * 8) + craft.response(2, b"\0" * 8))
    events = dissect(packets)
    assert notices(events) == [("tcp.gap", "stream", jump_at)]
    assert [(e.status, e.correlation_id) for e in exchanges(events)] == [("malformed", 1), ("malformed", 2)]


def test_stream_buffer_bound() -> None:
    """Bytes after a hole that is never filled nor acknowledged: held up to `max_stream_buffer`, then a gap."""
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, small(1))
    hole_at = len(small(1))
    conv.send(CLIENT, b"\0" * 100)  # lost
    held = conv.send(CLIENT, b"".join(small(c) for c in range(2, 200)), sizes=300)
    dissector = make_dissector(Options(limits=Limits(max_stream_buffer=4096)))
    events = []
    for p in packets + held:  # the peer acknowledges nothing: only the bound can end the wait
        events += dissector.feed(p)
        assert all(c.streams[0].pending_bytes <= 4096 for c, d in dissector._flows.values() if d == 0)
    events += dissector.finish()
    assert notices(events)[0] == ("tcp.gap", "stream", hole_at)
    assert "buffer limit" in next(n.diagnostic.message for n in events if isinstance(n, Notice))
    assert [e.correlation_id for e in exchanges(events)][0] == 1
    assert len(exchanges(events)) > 150


def test_syn_flood_is_counted_not_told() -> None:
    clock = craft.Clock()
    dissector = Dissector(limits=Limits(max_connections=100))
    events = []
    for i in range(2000):
        conv = craft.Conversation(f"10.9.{i // 250}.{i % 250 + 1}", client_port=2000 + i, clock=clock)
        events += dissector.feed(conv.segment(CLIENT, flags=SYN))
        assert len(dissector._flows) <= 2 * 100
    for p in conversation((CLIENT, small(1)), (SERVER, craft.response(1, b"\0")), clock=clock):
        events += dissector.feed(p)
    events += dissector.finish()
    assert [type(e).__name__ for e in events] == ["Exchange", "ConnectionEnd"]
    counters = dissector.counters
    assert (counters.empty_connections, counters.kafka_connections) == (2000, 1)
    assert counters.evicted_connections > 1800


def test_connection_bound_evicts_the_oldest_idle_and_counts_it() -> None:
    clock = craft.Clock()
    convs = [craft.Conversation(client_port=41000 + i, clock=clock) for i in range(6)]
    packets = []
    for conv in convs:
        packets += conv.handshake() + conv.send(CLIENT, small(1))
    for conv in convs[-2:]:
        packets += conv.send(SERVER, craft.response(1, b"\0"))
    dissector = Dissector(limits=Limits(max_connections=4))
    events = list(dissector.run(packets))
    ends = {e.connection.id: e.ended for e in events if isinstance(e, ConnectionEnd)}
    assert [i for i, how in ends.items() if how == "evicted"] == [1, 2]
    assert dissector.counters.evicted_connections == 2
    statuses = {(e.connection.id, e.status) for e in exchanges(events)}
    assert {(1, "unanswered"), (2, "unanswered"), (5, "ok"), (6, "ok")} <= statuses  # headers only: whole frames pair ok


def test_bytes_held_across_all_connections_are_bounded() -> None:
    """Each connection holds 64 KB of a frame claiming 100 MB: within every per-stream bound, but 300 of them
    would hold 19 MB. Past `max_buffered_bytes` the least recently active are evicted, each round told by one
    notice that counts them, each frame handed on incomplete, and counted."""
    clock = craft.Clock()
    dissector = make_dissector(Options(limits=Limits(max_buffered_bytes=4 << 20)))
    events = []
    for i in range(300):
        conv = craft.Conversation(f"10.3.{i // 250}.{i % 250 + 1}", client_port=1024 + i, clock=clock)
        for p in conv.handshake() + conv.send(CLIENT, struct.pack(">i", 100 << 20) + b"\0" * (64 << 10)):
            events += dissector.feed(p)
            live = [c for c, d in dissector._flows.values() if d == 0 and not c.phase.over]
            assert sum(c.priced() for c in live) <= (4 << 20) + (256 << 10) + (64 << 10)  # checked each 16th, plus a packet
    events += dissector.finish()
    evicted = [e for e in events if isinstance(e, ConnectionEnd) and e.ended == "evicted"]
    told = [n.diagnostic.message for n in events if isinstance(n, Notice) and n.diagnostic.code == "limits.buffered-bytes"]
    assert len(evicted) == dissector.counters.evicted_connections > 200
    assert sum(int(message.split("the ")[1].split(" least")[0]) for message in told) == len(evicted)
    first = [e.connection.id for e in evicted][:10]
    assert first == sorted(first)  # the least recently active first
    assert all("frame.incomplete" in codes(e.request) for e in exchanges(events))


# -- frames and pairing ---------------------------------------------------------------------------------------------


def test_two_gib_size_prefix() -> None:
    """A size prefix of 2**31 - 1 is a diagnostic at its stream offset, never an allocation; the next request is
    found again and the neighbours on the same connection decode."""
    garbage = struct.pack(">i", 2**31 - 1) + b"\xee" * 64
    packets = conversation(
        (CLIENT, small(1)),
        (CLIENT, garbage),
        (CLIENT, small(2)),
        (SERVER, craft.response(1, b"\0" * 8) + craft.response(2, b"\0" * 8)),
    )
    tracemalloc.start()
    events = dissect(packets)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20
    at = len(small(1))
    assert notices(events) == [("frame.bad-size", "stream", at), ("frame.skipped", "stream", at)]
    assert [(e.status, e.correlation_id) for e in exchanges(events)] == [("malformed", 1), ("malformed", 2)]


def test_two_gib_size_prefix_on_a_response() -> None:
    packets = conversation(
        (CLIENT, small(1) + small(2)),
        (SERVER, craft.response(1, b"\0" * 8)),
        (SERVER, struct.pack(">i", -(2**31)) + b"\0" * 40),
        (SERVER, craft.response(2, b"\0" * 8)),
    )
    events = dissect(packets)
    assert notices(events)[0] == ("frame.bad-size", "stream", 16)
    assert [(e.status, e.correlation_id) for e in exchanges(events)] == [("malformed", 1), ("malformed", 2)]


def test_array_count_of_two_to_the_31() -> None:
    """Produce's topic count claims 2**31 - 1: `body.malformed` at the count's frame offset, with the field path,
    in microseconds and without allocating; the exchange still pairs."""
    frame = produce(1, encode_batch([Draft(b"k", b"v")]), topics=2**31 - 1)
    packets = conversation((CLIENT, frame), (SERVER, craft.response(1, b"\0" * 12)))
    started = time.perf_counter()
    [exchange] = exchanges(dissect(packets))
    assert time.perf_counter() - started < 1
    [malformed] = [d for d in exchange.request.diagnostics if d.code == "body.malformed"]
    header_length = exchange.request.header.length
    assert (malformed.scope, malformed.offset, malformed.path) == ("frame", header_length + 8 + 4, "TopicData")
    assert "2147483647" in malformed.message
    assert exchange.status == "malformed"


def test_garbage_frame_between_exchanges_costs_only_itself() -> None:
    """A well-sized frame of 0xff bytes reads as API key -1: kept raw as its own exchange, the neighbours intact."""
    garbage = struct.pack(">i", 30) + b"\xff" * 30
    packets = conversation(
        (CLIENT, small(1)),
        (CLIENT, garbage),
        (CLIENT, small(2)),
        (SERVER, craft.response(1, b"\0" * 8) + craft.response(2, b"\0" * 8)),
    )
    found = exchanges(dissect(packets))
    assert [(e.status, e.correlation_id) for e in found] == [("malformed", 1), ("unanswered", -1), ("malformed", 2)]
    assert found[1].request.frame.offset == len(small(1))
    assert codes(found[1].request) == ["body.unknown-api"]


def test_response_resync_is_not_fooled_by_ids_inside_zero_heavy_data() -> None:
    """After a gap across a frame boundary, `00 00 00 10 00 00 00 03` inside a response's zeros looks like a
    response to request 3; the frame after it must look like one too."""
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, b"".join(small(c) for c in (1, 2, 3)))
    r2 = craft.response(2, b"\0" * 1500 + b"\x00\x00\x00\x10\x00\x00\x00\x03" + b"\0" * 1500)
    segments = conv.send(SERVER, craft.response(1, b"\0" * 900) + r2 + craft.response(3, b"\x05" * 8), sizes=1000)
    events = dissect(packets + segments[1:] + conv.close())
    [three] = [e for e in exchanges(events) if e.correlation_id == 3]
    assert three.status == "malformed" and three.response.frame.data[-8:] == b"\x05" * 8
    assert notices(events)[:2] == [("tcp.gap", "stream", 0), ("frame.skipped", "stream", 1000)]


def test_response_resync_with_thousands_of_outstanding_ids_stays_linear() -> None:
    """Regression: while out of sync, every segment rebuilt and ran a regex of every outstanding id; with 4000 of
    them, 2 MiB of unrecognisable response bytes took 16 s of CPU. Now a set check at each plausible position."""
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, b"".join(small(c * 7919) for c in range(4000)), sizes=60000)
    conv.next[SERVER] += 10  # the broker's first bytes are lost: its stream is out of sync from the start
    packets += conv.send(SERVER, bytes(range(1, 256)) * (2 << 12), sizes=1448)
    started = time.process_time()
    events = list(Dissector(decoder=None).run(packets))
    assert time.process_time() - started < 6
    assert sum(e.status == "unanswered" for e in exchanges(events)) == 4000


def test_outstanding_request_bound() -> None:
    packets = conversation(*((CLIENT, small(c)) for c in range(1, 11)), (SERVER, craft.response(10, b"\0")))
    events = dissect(packets, max_outstanding_requests=4)
    assert [(e.status, e.correlation_id) for e in exchanges(events)] == [("unanswered", c) for c in range(1, 10)] + [("malformed", 10)]
    [end] = [e for e in events if isinstance(e, ConnectionEnd)]
    assert end.unanswered == 9


def test_acks_zero_requests_wait_only_within_their_own_bound() -> None:
    """A producer with acks=0 against a broker that never answers: each request is settled once `max_outstanding_
    acks_zero` newer ones wait, not after thousands."""
    records = encode_batch([Draft(b"k", b"v" * 100)])
    frames = [(CLIENT, produce(c, records, acks=0)) for c in range(1, 21)]
    conv = craft.Conversation()
    dissector = make_dissector(Options(limits=Limits(max_outstanding_acks_zero=3)))
    settled = []
    for p in conv.handshake() + [p for _, f in frames for p in conv.send(CLIENT, f)]:
        settled += [(e.status, e.correlation_id) for e in exchanges(dissector.feed(p))]
        assert all(len(c.pairing.outstanding or ()) <= 3 for c, _ in dissector._flows.values() if c.phase is not PROBING)
    assert settled == [("no-response-expected", c) for c in range(1, 18)]
    assert [e.correlation_id for e in exchanges(dissector.finish())] == [18, 19, 20]


def test_acks_zero_bound_leaves_requests_that_expect_answers_in_place() -> None:
    conv = craft.Conversation()
    frames = [small(1)] + [produce(c, b"", acks=0) for c in (2, 3, 4)] + [small(5)]
    packets = (
        conv.handshake() + conv.send(CLIENT, b"".join(frames)) + conv.send(SERVER, craft.response(1, b"\0") + craft.response(5, b"\0"))
    )
    events = dissect(packets + conv.close(), max_outstanding_acks_zero=2)
    assert [(e.status, e.correlation_id) for e in exchanges(events)] == [
        ("no-response-expected", 2),
        ("malformed", 1),
        ("no-response-expected", 3),
        ("no-response-expected", 4),
        ("malformed", 5),
    ]


# -- records --------------------------------------------------------------------------------------------------------


def produce_exchange(records: bytes, **limits) -> Exchange:
    packets = conversation((CLIENT, produce(1, records)), (SERVER, craft.response(1, b"\0" * 12)))
    [exchange] = exchanges(dissect(packets, **limits))
    return exchange


def records_offset(exchange: Exchange) -> int:
    """Frame offset of the records field's bytes in `produce`'s request."""
    return exchange.request.header.length + 8 + 4 + 3 + 4 + 4 + 4


def nested(depth: int) -> bytes:
    entry = encode_message(0, magic=1, value=b"innermost")
    for _ in range(depth):
        entry = encode_message(0, magic=1, value=compress(GZIP, entry), attributes=GZIP)
    return entry


def test_nested_message_sets_past_max_nesting() -> None:
    exchange = produce_exchange(nested(5), max_nesting=3)
    [deep] = [d for d in exchange.request.diagnostics if d.code == "messageset.too-deep"]
    assert (deep.scope, deep.offset, deep.path) == ("record", 0, "batch[0].message[0].message[0].message[0]")
    assert exchange.status == "ok"
    fine = produce_exchange(nested(5), max_nesting=5)
    assert "messageset.too-deep" not in codes(fine.request)


def test_decompression_bomb_per_batch() -> None:
    bomb = encode_batch([Draft(None, b"\0" * (8 << 20))], codec="zstd")
    assert len(bomb) < 2000
    exchange = produce_exchange(bomb, max_decompressed_batch=1 << 20)
    [d] = [d for d in exchange.request.diagnostics if d.code == "codec.bomb"]
    assert (d.scope, d.offset, d.path) == ("frame", records_offset(exchange) + 61, "batch[0]")
    assert "per-batch cap" in d.message
    [batch] = exchange.request.body.records[0].records.batches
    assert batch.uncompressed_size == 1 << 20


def test_decompression_bomb_per_exchange() -> None:
    """Three batches of 600 KiB against an exchange budget of 1 MiB: the second is cut, the third gets nothing."""
    batch = encode_batch([Draft(None, b"\0" * (600 << 10))], codec="gzip")
    exchange = produce_exchange(batch * 3, max_decompressed_exchange=1 << 20)
    bombs = [d for d in exchange.request.diagnostics if d.code == "codec.bomb"]
    assert [d.path for d in bombs] == ["batch[1]", "batch[2]"]
    assert all("exchange's budget" in d.message for d in bombs)
    assert bombs[0].offset == records_offset(exchange) + len(batch) + 61
    sizes = [b.uncompressed_size for b in exchange.request.body.records[0].records.batches]
    assert sizes[0] > 600 << 10 and sizes[1:] == [(1 << 20) - sizes[0], 0]


def test_a_frame_earns_its_decompression() -> None:
    """Gzip inside gzip inside many wrappers (issue 36): 40 wrappers of 10 wrappers of 4 values of 256 KiB of zeros,
    400 MiB from a frame of about 30 KB, all of it held as values while the exchange is written. The frame earns one
    batch's worth (here 1 MiB) and 8 bytes per byte of itself: the values stop there, cut as a bomb. Two such
    wrappers within what the default ratio earns decode whole."""
    leaf = encode_message(0, magic=1, value=bytes(256 << 10))
    inner = encode_message(0, magic=1, value=compress(GZIP, leaf * 4), attributes=GZIP)
    outer = encode_message(0, magic=1, value=compress(GZIP, inner * 10), attributes=GZIP)
    exchange = produce_exchange(outer * 40, max_decompressed_batch=1 << 20, max_decompressed_ratio=8)
    earned = (1 << 20) + 8 * exchange.request.size
    values = sum(len(r.value) for r in exchange.request.body.records[0].records.records() if r.value)
    assert exchange.request.size < 40_000 and 0 < values <= earned < 2 << 20
    assert "codec.bomb" in codes(exchange.request)
    whole = produce_exchange(outer * 2, max_decompressed_batch=32 << 20)
    assert sum(len(r.value) for r in whole.request.body.records[0].records.records() if r.value) == 20 << 20
    assert codes(whole.request) == []


def test_bad_crc_and_failed_decompression_stay_in_their_exchange() -> None:
    good = encode_batch([Draft(b"k", b"v")])
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    broken = bytearray(encode_batch([Draft(b"k", b"v" * 500)], codec="lz4"))
    broken[70:90] = b"\xaa" * 20
    frames = [
        (CLIENT, produce(1, good)),
        (CLIENT, produce(2, bytes(bad_crc))),
        (CLIENT, produce(3, bytes(broken))),
        (CLIENT, produce(4, good)),
    ]
    frames += [(SERVER, craft.response(c, b"\0" * 12)) for c in (1, 2, 3, 4)]
    found = {e.correlation_id: codes(e.request) for e in exchanges(dissect(conversation(*frames)))}
    assert found[1] == [] and found[4] == []
    assert "batch.crc-mismatch" in found[2]
    assert "codec.error" in found[3]


def test_record_lengths_past_their_record_copy_nothing_more() -> None:
    """Regression: a record whose key length points far past its own end used to copy the rest of the batch into
    its key, for every record: 270 KB of records made 2 GB of keys. Now each record holds at most its own bytes."""
    n = 16000
    inner = b"\0" + write_varint(0) + write_varint(0) + write_varint(n * 8) + b"\0\0"
    body = (write_varint(len(inner)) + inner) * n + b"\0" * (n * 8 + 16)
    batch = bytearray(encode_batch([]))
    batch[57:61] = struct.pack(">i", n)
    blob = bytes(batch) + body
    struct.pack_into(">i", blob := bytearray(blob), 8, len(blob) - 12)
    tracemalloc.start()
    records = decode_records(bytes(blob))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 << 20
    kept = sum(len(r.key or b"") + len(r.value or b"") for r in records.records())
    assert kept <= len(blob)
    assert {d.code for d in records.diagnostics} <= {
        "batch.crc-mismatch",
        "record.bad-length",
        "record.bad-header-count",
        "varint.truncated",
    }


# -- the fuzzers' findings ------------------------------------------------------------------------------------------


def regressions() -> list[tuple[str, Path]]:
    return sorted((folder.name, path) for folder in (FUZZ / "regressions").iterdir() for path in folder.iterdir())


@pytest.mark.parametrize(("harness", "path"), regressions(), ids=lambda v: v.name if isinstance(v, Path) else v)
def test_fuzz_regressions(harness: str, path: Path) -> None:
    """Every input a fuzzer once broke kdissect with goes through its harness, checks and all."""
    import importlib

    importlib.import_module(f"fuzz.{harness}").one_input(path.read_bytes())
