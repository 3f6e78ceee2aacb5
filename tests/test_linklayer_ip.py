"""Link layers, IPv4/IPv6 (options, extension headers, fragments) and the TCP header: packets to segments.

Unit checks go through `SegmentDecoder`; end-to-end ones through the `Dissector`, to see that what the lower
layers hand up becomes the right byte stream.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.capture import Packet
from kdissect.capture.linktypes import (
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
)
from kdissect.dissector import Dissector
from kdissect.events import Exchange, Notice
from kdissect.net.malformed import Malformed
from kdissect.net.segments import SegmentDecoder
from kdissect.net.tcp import ACK, PSH
from kdissect.testing import craft
from kdissect.testing.craft import AH, CLIENT, DEST_OPTIONS, HOP_BY_HOP, ROUTING, SERVER

V4 = ("10.1.2.3", "10.9.8.7")
V6 = ("fd00::1", "fd00::2:3")
METADATA = craft.request(3, 1, 42, b"\x00\x00\x00\x00", "linktest")
REPLY = craft.response(42, b"\x00" * 12)


def decode(packet: Packet):
    return SegmentDecoder(1 << 20).decode(packet)


def events(packets: list[Packet], **options) -> list:
    return list(Dissector(**options).run(packets))


def exchanges(evs: list) -> list[Exchange]:
    return [e for e in evs if isinstance(e, Exchange)]


def notices(evs: list, code: str | None = None) -> list[Notice]:
    return [e for e in evs if isinstance(e, Notice) and (code is None or e.diagnostic.code == code)]


def kafka_session(conv: craft.Conversation) -> list[Packet]:
    return conv.handshake() + conv.send(CLIENT, METADATA) + conv.send(SERVER, REPLY) + conv.close()


def assert_one_ok_exchange(evs: list, client: str, server: str) -> None:
    ex = exchanges(evs)
    assert [(e.status, e.correlation_id, e.api_key) for e in ex] == [("ok", 42, 3)]
    assert ex[0].request.frame.data == METADATA[4:]
    assert ex[0].response.frame.data == REPLY[4:]
    assert (ex[0].connection.client.address, ex[0].connection.broker.address) == (client, server)
    assert notices(evs) == []


# -- link layers ----------------------------------------------------------------------------------------------------

LINK_CASES = [
    (LINKTYPE_ETHERNET, V4),
    (LINKTYPE_ETHERNET, V6),
    (LINKTYPE_LINUX_SLL, V4),
    (LINKTYPE_LINUX_SLL, V6),
    (LINKTYPE_LINUX_SLL2, V4),
    (LINKTYPE_LINUX_SLL2, V6),
    (LINKTYPE_NULL, V4),
    (LINKTYPE_NULL, V6),
    (LINKTYPE_LOOP, V4),
    (LINKTYPE_LOOP, V6),
    (LINKTYPE_RAW, V4),
    (LINKTYPE_RAW, V6),
    (LINKTYPE_IPV4, V4),
    (LINKTYPE_IPV6, V6),
    (12, V4),
    (14, V6),
]


@pytest.mark.parametrize("linktype,addresses", LINK_CASES)
def test_every_link_type_carries_a_kafka_exchange(linktype: int, addresses: tuple[str, str]) -> None:
    conv = craft.Conversation(*addresses, linktype=linktype)
    assert_one_ok_exchange(events(kafka_session(conv)), *addresses)


@pytest.mark.parametrize("vlans", [(10,), (100, 200), (1, 2, 3)])
@pytest.mark.parametrize("addresses", [V4, V6])
def test_vlan_and_qinq(vlans: tuple[int, ...], addresses: tuple[str, str]) -> None:
    conv = craft.Conversation(*addresses, vlans=vlans)
    packets = kafka_session(conv)
    assert packets[0].data[12:14] == (b"\x81\x00" if len(vlans) == 1 else b"\x88\xa8")
    assert_one_ok_exchange(events(packets), *addresses)


@pytest.mark.parametrize("family", [24, 28, 30])
@pytest.mark.parametrize("big_endian", [False, True])
def test_bsd_null_inet6_values_and_byte_orders(family: int, big_endian: bool) -> None:
    segment_bytes = craft.tcp(*V6, 1, 9092, 7, 0, ACK | PSH, b"abc")
    data = craft.bsd_null(craft.ipv6(*V6, segment_bytes), family, big_endian)
    segment = decode(Packet(0, LINKTYPE_NULL, data, len(data), 1))
    assert (segment.sport, segment.dport, segment.seq, segment.payload) == (1, 9092, 7, b"abc")


def test_bsd_null_ipv4_big_endian() -> None:
    data = craft.bsd_null(craft.ipv4(*V4, craft.tcp(*V4, 1, 2, 3, 0, ACK, b"x")), 2, big_endian=True)
    assert decode(Packet(0, LINKTYPE_NULL, data, len(data), 1)).payload == b"x"


def test_not_ip_not_tcp_and_unknown_link_types_carry_no_segment() -> None:
    decoder = SegmentDecoder(1 << 20)
    arp = craft.ethernet(b"\0" * 28, 0x0806)
    udp = craft.frame(LINKTYPE_ETHERNET, craft.ipv4(*V4, b"\0" * 8, proto=17))
    null_other = craft.bsd_null(b"\0" * 40, 7)
    assert decoder.decode(Packet(0, LINKTYPE_ETHERNET, arp, len(arp), 1)) is None
    assert decoder.decode(Packet(0, LINKTYPE_ETHERNET, udp, len(udp), 2)) is None
    assert decoder.decode(Packet(0, LINKTYPE_NULL, null_other, len(null_other), 3)) is None
    assert decoder.decode(Packet(0, 147, b"\0" * 60, 60, 4)) is None
    assert decoder.decode(Packet(0, 147, b"\0" * 60, 60, 5)) is None


def test_ethernet_padding_is_not_payload() -> None:
    """Frames under 60 bytes are padded on the wire; the IP total length says where the packet ends."""
    data = craft.frame(LINKTYPE_ETHERNET, craft.ipv4(*V4, craft.tcp(*V4, 1, 2, 3, 0, ACK, b"ab")))
    padded = data + b"\xee" * (60 - len(data))
    segment = decode(Packet(0, LINKTYPE_ETHERNET, padded, len(padded), 1))
    assert segment.payload == b"ab" and segment.missing == 0


# -- IPv4 -------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [b"\x01" * 4, b"\x07\x07\x04" + b"\0" * 5, b"\x01" * 40])
def test_ipv4_options(options: bytes) -> None:
    segment_bytes = craft.tcp(*V4, 1, 2, 100, 200, ACK | PSH, b"payload")
    data = craft.ipv4(*V4, segment_bytes, options=options)
    assert data[0] & 15 == 5 + len(options) // 4
    segment = decode(Packet(0, LINKTYPE_RAW, data, len(data), 1))
    assert (segment.seq, segment.ack, segment.payload, segment.missing) == (100, 200, b"payload", 0)
    assert segment.src == bytes([10, 1, 2, 3]) and segment.dst == bytes([10, 9, 8, 7])


def test_tcp_options_are_skipped() -> None:
    data = craft.ipv4(*V4, craft.tcp(*V4, 1, 2, 3, 0, ACK, b"after", options=b"\x02\x04\x05\xb4\x01\x01\x04\x02"))
    assert decode(Packet(0, LINKTYPE_RAW, data, len(data), 1)).payload == b"after"


def test_tso_total_length_zero_takes_the_captured_length() -> None:
    conv = craft.Conversation(linktype=LINKTYPE_ETHERNET)
    big = craft.request(3, 1, 1, b"r" * 20000)
    packets = conv.handshake()
    segment_bytes = conv.tcp(CLIENT, ACK | PSH, big)
    packets.append(craft.packet(LINKTYPE_ETHERNET, conv.wrap(CLIENT, segment_bytes, total_length=0), conv.clock))
    assert decode(packets[-1]).payload == big
    ex = exchanges(events(packets))
    assert len(ex) == 1 and ex[0].request.frame.data == big[4:]


def test_malformed_packets_become_notices() -> None:
    good = craft.ipv4(*V4, craft.tcp(*V4, 1, 9092, 3, 0, ACK, b"x"))
    bad_version = bytes([0x55]) + good[1:]
    short_total = good[:2] + b"\x00\x10" + good[4:]
    bad_offset = good[: 20 + 12] + bytes([0x30]) + good[20 + 13 :]
    packets = [
        Packet(0, LINKTYPE_ETHERNET, b"\0" * 10, 10, 1),
        Packet(0, LINKTYPE_RAW, bad_version, len(bad_version), 2),
        Packet(0, LINKTYPE_RAW, short_total, len(short_total), 3),
        Packet(0, LINKTYPE_RAW, bad_offset, len(bad_offset), 4),
        Packet(0, LINKTYPE_RAW, good[:30], len(good), 5),
    ]
    dissector = Dissector()
    evs = list(dissector.run(packets))
    assert [(n.packet, n.diagnostic.code) for n in notices(evs)] == [
        (1, "packet.truncated"),
        (3, "ip.bad-length"),
        (4, "tcp.bad-header"),
        (5, "tcp.truncated"),
    ]
    # packet 2, a raw-IP packet whose version nibble is neither 4 nor 6, is simply not IP: no notice


@pytest.mark.parametrize("linktype", [LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_RAW])
@pytest.mark.parametrize("data_offset", [0, 3, 4])
def test_tcp_data_offset_below_the_minimum_is_malformed_on_every_path(linktype: int, data_offset: int) -> None:
    segment_bytes = bytearray(craft.tcp(*V4, 1, 9092, 3, 0, ACK, b"payload bytes"))
    segment_bytes[12] = data_offset << 4
    data = craft.frame(linktype, craft.ipv4(*V4, bytes(segment_bytes)))
    with pytest.raises(Malformed) as exc:
        decode(Packet(0, linktype, data, len(data), 1))
    assert exc.value.code == "tcp.bad-header"


@pytest.mark.parametrize("linktype", [LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_RAW])
def test_tcp_header_longer_than_the_packet_is_malformed_on_every_path(linktype: int) -> None:
    segment_bytes = bytearray(craft.tcp(*V4, 1, 9092, 3, 0, ACK, b"abcd"))
    segment_bytes[12] = 15 << 4  # 60 bytes of header, 24 present
    data = craft.frame(linktype, craft.ipv4(*V4, bytes(segment_bytes)))
    with pytest.raises(Malformed):
        decode(Packet(0, linktype, data, len(data), 1))


def outcome(packet: Packet):
    try:
        return decode(packet)
    except Malformed as exc:
        return exc.code


@settings(max_examples=300, deadline=None)
@given(
    payload=st.binary(max_size=64),
    options=st.sampled_from([b"", b"\x01" * 4, b"\x02\x04\x05\xb4"]),
    ip_options=st.sampled_from([b"", b"\x01" * 8]),
    flips=st.lists(st.tuples(st.integers(0, 63), st.integers(0, 255)), max_size=3),
    cut=st.integers(0, 40),
)
def test_fast_path_agrees_with_the_general_one(payload, options, ip_options, flips, cut) -> None:
    """Plain Ethernet IPv4 takes the fast path, the same packet behind a VLAN tag the general one."""
    ip = bytearray(craft.ipv4(*V4, craft.tcp(*V4, 1, 9092, 3, 4, ACK | PSH, payload, options=options), options=ip_options))
    for at, value in flips:
        if at < len(ip):
            ip[at] = value
    ip = bytes(ip[: len(ip) - cut])
    fast = craft.ethernet(ip, 0x0800)
    general = craft.ethernet(ip, 0x0800, vlans=(5,))
    got_fast = outcome(Packet(0, LINKTYPE_ETHERNET, fast, len(fast) + cut, 1))
    got_general = outcome(Packet(0, LINKTYPE_ETHERNET, general, len(general) + cut, 1))
    assert got_fast == got_general


# -- IPv6 extension headers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extensions",
    [
        [HOP_BY_HOP],
        [(HOP_BY_HOP, 3)],
        [ROUTING],
        [(ROUTING, 2)],
        [DEST_OPTIONS],
        [AH],
        [(AH, 2)],
        [HOP_BY_HOP, DEST_OPTIONS, ROUTING, AH, DEST_OPTIONS],
        [135],  # mobility
    ],
)
def test_ipv6_extension_headers(extensions) -> None:
    segment_bytes = craft.tcp(*V6, 5, 9092, 77, 88, ACK | PSH, b"kafka bytes")
    data = craft.ipv6(*V6, segment_bytes, extensions=extensions)
    segment = decode(Packet(0, LINKTYPE_RAW, data, len(data), 1))
    assert (segment.sport, segment.seq, segment.ack, segment.payload) == (5, 77, 88, b"kafka bytes")


def test_ipv6_extension_header_running_past_the_packet_is_malformed() -> None:
    data = craft.ipv6(*V6, b"", proto=HOP_BY_HOP)  # claims a hop-by-hop header, holds nothing
    with pytest.raises(Malformed):
        decode(Packet(0, LINKTYPE_RAW, data, len(data), 1))


def test_ipv6_jumbo_payload_length_zero_takes_the_captured_length() -> None:
    data = craft.ipv6(*V6, craft.tcp(*V6, 1, 2, 3, 0, ACK, b"jumbo"), payload_length=0)
    assert decode(Packet(0, LINKTYPE_RAW, data, len(data), 1)).payload == b"jumbo"


# -- fragments --------------------------------------------------------------------------------------------------------


def fragment_case(addresses, order, count=4, before=(), after=()):
    conv = craft.Conversation(*addresses)
    handshake = conv.handshake()
    request = craft.request(3, 1, 42, bytes(range(256)) * 12)
    pieces = conv.fragmented(CLIENT, request, count, ident=0x1234, before=before, after=after)
    assert len(pieces) == count
    reply = conv.send(SERVER, REPLY)
    return handshake + [pieces[i] for i in order] + reply, request


@pytest.mark.parametrize("addresses", [V4, V6])
@pytest.mark.parametrize("order", [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]])
def test_fragments_reassembled_in_any_order(addresses, order) -> None:
    packets, request = fragment_case(addresses, order)
    dissector = Dissector()
    evs = list(dissector.run(packets))
    ex = exchanges(evs)
    assert [(e.status, e.correlation_id) for e in ex] == [("ok", 42)]
    assert ex[0].request.frame.data == request[4:]
    assert ex[0].request.frame.last_packet == packets[3 + len(order) - 1].index  # the fragment that completed it
    assert notices(evs) == []


def test_ipv6_fragments_after_other_extension_headers() -> None:
    packets, request = fragment_case(V6, [1, 0, 2], count=3, before=[HOP_BY_HOP, ROUTING])
    ex = exchanges(events(packets))
    assert [(e.status, e.request.frame.data == request[4:]) for e in ex] == [("ok", True)]


def test_ipv6_fragments_with_destination_options_in_the_fragmented_part() -> None:
    """RFC 8200 puts destination options after the fragment header; offsets count from there."""
    packets, request = fragment_case(V6, [0, 1, 2], count=3, before=[HOP_BY_HOP], after=[DEST_OPTIONS])
    evs = events(packets)
    ex = exchanges(evs)
    assert [(e.status, e.request.frame.data == request[4:]) for e in ex] == [("ok", True)]
    assert notices(evs) == []


@pytest.mark.parametrize("addresses", [V4, V6])
def test_overlapping_fragments_first_lower_copy_wins(addresses) -> None:
    src, dst = addresses
    payload = craft.tcp(src, dst, 1, 9092, 1000, 0, ACK | PSH, b"A" * 64 + b"B" * 64 + b"C" * 64)
    split = craft.ipv4_fragments if ":" not in src else craft.ipv6_fragments
    whole = split(src, dst, payload, 3, ident=9)
    # a rogue fragment overlapping the middle one, sent after it: the first copy stays
    rogue_payload = bytearray(payload)
    rogue_payload[20 + 64 : 20 + 128] = b"X" * 64
    rogue = split(src, dst, bytes(rogue_payload), 3, ident=9)[1]
    decoder = SegmentDecoder(1 << 20)
    linktype = LINKTYPE_RAW
    got = [decoder.decode(Packet(0, linktype, p, len(p), i)) for i, p in enumerate([whole[1], rogue, whole[0], whole[2]])]
    assert got[:3] == [None, None, None]
    assert got[3].payload == b"A" * 64 + b"B" * 64 + b"C" * 64


def test_duplicate_fragments_stay_bounded() -> None:
    payload = craft.tcp(*V4, 1, 2, 3, 0, ACK, b"z" * 1000)
    first, _last = craft.ipv4_fragments(*V4, payload, 2, ident=5)
    decoder = SegmentDecoder(4096)
    for i in range(100):
        assert decoder.decode(Packet(0, LINKTYPE_RAW, first, len(first), i)) is None
    assert decoder.fragments.dropped >= 1
    held = sum(len(piece) for entry in decoder.fragments._pending.values() for _, piece in entry[2])
    assert held <= 4096


@pytest.mark.parametrize("addresses", [V4, V6])
def test_incomplete_fragments_are_reported_at_finish(addresses) -> None:
    packets, _ = fragment_case(addresses, [0, 2, 3])  # fragment 1 never arrives
    evs = events(packets)
    incomplete = notices(evs, "ip.fragments-incomplete")
    assert len(incomplete) == 1 and incomplete[0].diagnostic.message.startswith("1 IP datagrams")
    assert evs[-1] is incomplete[0]


def test_fragment_cut_by_the_snapshot_length_counts_once() -> None:
    conv = craft.Conversation(*V4)
    handshake = conv.handshake()
    pieces = conv.fragmented(CLIENT, craft.request(3, 1, 42, b"q" * 3000), 3)
    pieces[0] = craft.truncated(pieces[0], 200)
    evs = events(handshake + pieces)
    incomplete = notices(evs, "ip.fragments-incomplete")
    assert [n.diagnostic.message.split(" ")[0] for n in incomplete] == ["1"]


def test_a_stale_incomplete_datagram_does_not_mix_with_a_new_one_reusing_its_id() -> None:
    old = craft.ipv4_fragments(*V4, craft.tcp(*V4, 1, 2, 10, 0, ACK, b"o" * 100), 2, ident=7)
    new = craft.ipv4_fragments(*V4, craft.tcp(*V4, 1, 2, 10, 0, ACK, b"n" * 100), 2, ident=7)
    decoder = SegmentDecoder(1 << 20)
    assert decoder.decode(Packet(0, LINKTYPE_RAW, old[0], len(old[0]), 1)) is None  # its second fragment is lost
    later = 31 * 10**9
    assert decoder.decode(Packet(later, LINKTYPE_RAW, new[0], len(new[0]), 2)) is None
    assert decoder.decode(Packet(later, LINKTYPE_RAW, new[1], len(new[1]), 3)).payload == b"n" * 100
    assert (decoder.fragments.dropped, decoder.fragments.incomplete()) == (1, 0)


def test_fragments_of_different_datagrams_do_not_mix() -> None:
    a = craft.ipv4_fragments(*V4, craft.tcp(*V4, 1, 2, 10, 0, ACK, b"a" * 100), 2, ident=1)
    b = craft.ipv4_fragments(*V4, craft.tcp(*V4, 1, 2, 10, 0, ACK, b"b" * 100), 2, ident=2)
    decoder = SegmentDecoder(1 << 20)
    out = [decoder.decode(Packet(0, LINKTYPE_RAW, p, len(p), 1)) for p in (a[0], b[0], b[1], a[1])]
    assert out[0] is None and out[1] is None
    assert out[2].payload == b"b" * 100 and out[3].payload == b"a" * 100


# -- the snapshot length --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("addresses", [V4, V6])
def test_snaplen_cut_payload_becomes_a_gap_at_the_right_offset(addresses) -> None:
    conv = craft.Conversation(*addresses)
    first = craft.request(3, 1, 1, b"\0" * 100)
    second = craft.request(3, 1, 2, b"\0" * 2000)
    third = craft.request(3, 1, 3, b"\0" * 50)
    packets = conv.handshake() + conv.send(CLIENT, first) + conv.send(CLIENT, second, sizes=1400) + conv.send(CLIENT, third)
    header_bytes = len(packets[3].data) - len(first)
    snaplen = header_bytes + 300
    cut = [craft.truncated(p, snaplen) for p in packets]
    segment = decode(cut[4])
    assert (len(segment.payload), segment.missing) == (300, 1100)
    evs = events(cut)
    gaps = notices(evs, "tcp.gap")
    assert [(g.diagnostic.offset, g.diagnostic.message.split(" ")[0]) for g in gaps] == [
        (len(first) + 300, "1100"),
        (len(first) + 1400 + 300, str(len(second) - 1400 - 300)),
    ]
    ex = exchanges(evs)
    assert [(e.correlation_id, e.status, e.request.frame.lost) for e in ex] == [
        (1, "unanswered", 0),
        (2, "unanswered", 1100 + len(second) - 1400 - 300),  # the bytes the second segment holds after the cut are kept
        (3, "unanswered", 0),
    ]
    assert ex[1].request.frame.rest == ((1400 - 4, second[1400:1700]),)


def test_snaplen_cut_inside_tcp_options_keeps_the_missing_count_right() -> None:
    data = craft.ipv4(*V4, craft.tcp(*V4, 1, 2, 3, 0, ACK, b"p" * 50, options=b"\x01" * 12))
    segment = decode(Packet(0, LINKTYPE_RAW, data[: 20 + 20 + 4], len(data), 1))
    assert (segment.payload, segment.missing) == (b"", 50)
