"""Isolation (issue 8): damage to one part of a capture never changes how the untouched exchanges decode.

The captures: consumer-group-confluent (14 connections, a consumer group), legacy-magic1-kafka-python (22
connections) and large-values-mtu1500 (frames of 300 KB over hundreds of 1500-byte segments).

The property, for a mutation of the packet list, is: every exchange of the unchanged capture that the mutation
does not touch comes out of the changed capture identically. "Identically" compares the exchange's status, both
headers, both frames' bytes, offsets and times, the decoded bodies and records, and every diagnostic. It leaves
out what is numbered across the capture (exchange ids, connection ids, packet numbers) and the meaning learnt
from other exchanges (topic names found through ids, consumer-protocol readings keyed by a JoinGroup), which
by design depends on what else was captured. Exchanges are matched by client, broker and frame offsets.

What each mutation touches:

- **cut the file at any byte**: the exchanges with a frame in the cut packet or after it. Every other exchange
  (every exchange completed before the cut) is identical.
- **duplicate any packet** (the copy anywhere later): nothing. A copy is a retransmission whose first copy wins.
- **drop any packet**, or **move it anywhere** (which either changes nothing, or, once the peer has acknowledged
  past it, loses it): the exchanges with a frame overlapping its bytes; and when those bytes include a byte of
  a frame's size prefix, the framer loses sync and every frame of that direction from the lost bytes up to the
  first frame that starts after them is lost too. That next frame is found again: a request by its header, a response by an
  outstanding correlation id followed by a plausible frame boundary.
- **flip bytes inside one exchange's bodies**: that exchange.
- **flip bytes in a size prefix**: a plausible wrong size cannot be told from a right one, so the rest of that
  direction may be cut wrongly. Exchanges of every other connection, and those of the same connection completed
  before the packet carrying the damaged prefix, are identical.
"""

from __future__ import annotations

import io
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.capture import Packet, open_capture
from kdissect.capture.source import CaptureFile
from kdissect.capture.writer import pcap_bytes
from kdissect.dissector import Options, make_dissector
from kdissect.events import Endpoint, Exchange
from kdissect.net.segments import SegmentDecoder
from kdissect.net.tcp import SYN
from kdissect.testing import damage
from kdissect.views.json_lines import exchange_json

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
NAMES = ("consumer-group-confluent", "legacy-magic1-kafka-python", "large-values-mtu1500")
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

LEFT_OUT = ("_kdissect", "packets", "id", "connection", "topics", "queue_ms", "service_ms", "queued_behind")


def _strip(value: Any) -> Any:
    """Drop what the comparison leaves out, at any depth: numbers that count other exchanges or packets, and the time
    in line (queue_ms, service_ms, queued_behind), which is the neighbour's ahead of it on the connection."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in LEFT_OUT}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def decode(packets: list[Packet]) -> dict[damage.Key, Any]:
    out = {}
    for event in make_dissector(Options()).run(packets):
        if isinstance(event, Exchange):
            out[damage.exchange_key(event)] = _strip(exchange_json(event))
    return out


class Baseline:
    """One capture decoded whole, with where every packet's bytes and every exchange's frames lie."""

    def __init__(self, name: str) -> None:
        with open_capture(CAPTURES / f"{name}.pcap") as capture:
            self.packets = list(capture.packets())
            self.linktype = capture.linktypes()[0]
        self.exchanges: dict[damage.Key, Any] = {}
        self.frames: dict[damage.Key, list[tuple[int, int, int, int]]] = {}
        """Exchange -> its frames as (direction 0 request / 1 response, start, end, last packet index)."""
        events = list(make_dissector(Options()).run(self.packets))
        for event in events:
            if not isinstance(event, Exchange):
                continue
            key = damage.exchange_key(event)
            assert key not in self.exchanges
            self.exchanges[key] = _strip(exchange_json(event))
            self.frames[key] = [
                (d, m.frame.offset, m.frame.offset + 4 + m.frame.size, m.frame.last_packet)
                for d, m in ((0, event.request), (1, event.response))
                if m is not None
            ]
        self.starts: dict[tuple[str, str, int], list[int]] = {}
        """(client, broker, direction) -> every frame start, in order."""
        for key, frames in self.frames.items():
            for d, start, _, _ in frames:
                self.starts.setdefault((key[0], key[1], d), []).append(start)
        for starts in self.starts.values():
            starts.sort()
        self.ranges = self._ranges({str(key[1]) for key in self.exchanges})

    def _ranges(self, brokers: set[str]) -> list[tuple[str, str, int, int, int] | None]:
        """Per packet: (client, broker, direction, first stream byte, end) of the data it carries, or None."""
        decoder = SegmentDecoder(1 << 20)
        isns: dict[tuple, int] = {}
        out: list[tuple[str, str, int, int, int] | None] = []
        for packet in self.packets:
            segment = decoder.decode(packet)
            if segment is None:
                out.append(None)
                continue
            src = str(Endpoint.from_packed(segment.src, segment.sport))
            dst = str(Endpoint.from_packed(segment.dst, segment.dport))
            if segment.flags & SYN:
                isns[(src, dst)] = segment.seq
            if not segment.payload or (src, dst) not in isns:
                out.append(None)
                continue
            start = (segment.seq - isns[(src, dst)] - 1) & 0xFFFFFFFF
            if dst in brokers:
                out.append((src, dst, 0, start, start + len(segment.payload)))
            else:
                out.append((dst, src, 1, start, start + len(segment.payload)))
        return out

    def touched_by_loss(self, index: int) -> set[damage.Key]:
        """Exchanges a lost packet may cost: its frames, and the frames up to the resync point after it."""
        carried = self.ranges[index]
        if carried is None:
            return set()
        client, broker, direction, lo, hi = carried
        starts = self.starts.get((client, broker, direction), [])
        resync = next((s for s in starts if s >= hi), None) if any(lo <= s + 3 and s < hi for s in starts) else None
        touched = set()
        for key, frames in self.frames.items():
            if key[:2] != (client, broker):
                continue
            for d, start, end, _ in frames:
                if d == direction and (start < hi and lo < end or resync is not None and lo <= start < resync):
                    touched.add(key)
        return touched


@cache
def baseline(name: str) -> Baseline:
    return Baseline(name)


def assert_untouched_identical(base: Baseline, got: dict[damage.Key, Any], touched: set[damage.Key]) -> None:
    for key, expected in base.exchanges.items():
        if key in touched:
            continue
        assert key in got, f"exchange {key} is gone"
        assert got[key] == expected, f"exchange {key} changed"


def test_baselines_decode_cleanly() -> None:
    for name in NAMES:
        base = baseline(name)
        assert len(base.exchanges) > 20
        assert decode(base.packets) == base.exchanges


@SETTINGS
@given(name=st.sampled_from(NAMES), where=st.floats(0, 1))
def test_cut_at_any_byte(name: str, where: float) -> None:
    base = baseline(name)
    data = pcap_bytes(base.packets, base.linktype)
    cut = 24 + int(where * (len(data) - 24))
    capture = CaptureFile(io.BytesIO(data[:cut]), "cut.pcap")
    packets = list(capture.packets())
    kept = len(packets)
    whole = {key for key, frames in base.frames.items() if all(last <= kept for *_, last in frames)}
    got = decode(packets)
    complete = {key for key in whole if base.exchanges[key]["status"] in ("ok", "orphan-response")}
    assert_untouched_identical(base, got, set(base.exchanges) - complete)
    boundary = packets[-1].offset + 16 + len(packets[-1].data) if packets else 24
    assert [d.code for d in capture.diagnostics()] == ([] if cut == boundary else ["pcap.truncated"])


@SETTINGS
@given(name=st.sampled_from(NAMES), data=st.data())
def test_duplicate_any_packet(name: str, data: st.DataObject) -> None:
    base = baseline(name)
    i = data.draw(st.integers(0, len(base.packets) - 1))
    j = data.draw(st.integers(i + 1, len(base.packets)))
    packets = base.packets[:j] + [base.packets[i]] + base.packets[j:]
    assert_untouched_identical(base, decode(packets), set())


@SETTINGS
@given(name=st.sampled_from(NAMES), data=st.data())
def test_drop_any_packet(name: str, data: st.DataObject) -> None:
    base = baseline(name)
    i = data.draw(st.integers(0, len(base.packets) - 1))
    packets = base.packets[:i] + base.packets[i + 1 :]
    assert_untouched_identical(base, decode(packets), base.touched_by_loss(i))


@SETTINGS
@given(name=st.sampled_from(NAMES), data=st.data())
def test_move_any_packet(name: str, data: st.DataObject) -> None:
    base = baseline(name)
    i = data.draw(st.integers(0, len(base.packets) - 1))
    j = data.draw(st.integers(0, len(base.packets) - 1))
    packets = base.packets[:i] + base.packets[i + 1 :]
    packets.insert(j, base.packets[i])
    assert_untouched_identical(base, decode(packets), base.touched_by_loss(i))


def _flip(base: Baseline, direction: int, client: str, broker: str, lo: int, hi: int, mask: int) -> list[Packet]:
    """The packets with every byte of stream range [lo, hi) of one direction XORed with `mask`."""
    out = []
    for packet, carried in zip(base.packets, base.ranges):
        if carried is None or carried[:3] != (client, broker, direction) or carried[4] <= lo or hi <= carried[3]:
            out.append(packet)
            continue
        start, end = carried[3], carried[4]
        payload_at = len(packet.data) - (end - start)
        data = bytearray(packet.data)
        for at in range(max(lo, start), min(hi, end)):
            data[payload_at + at - start] ^= mask
        out.append(packet._replace(data=bytes(data)))
    return out


@SETTINGS
@given(name=st.sampled_from(NAMES), data=st.data())
def test_flip_bytes_inside_one_exchange(name: str, data: st.DataObject) -> None:
    base = baseline(name)
    key = data.draw(st.sampled_from(sorted(base.exchanges, key=str)))
    exchange = base.exchanges[key]
    frames = [(d, s, e) for d, s, e, _ in base.frames[key]]
    direction, start, end = data.draw(st.sampled_from(frames))
    message = exchange["request" if direction == 0 else "response"]
    header = 4 + (_header_length(message) or 0)
    if start + header >= end:
        return
    lo = data.draw(st.integers(start + header, end - 1))
    hi = data.draw(st.integers(lo + 1, min(end, lo + 64)))
    packets = _flip(base, direction, key[0], key[1], lo, hi, data.draw(st.integers(1, 255)))
    assert_untouched_identical(base, decode(packets), {key})


def _header_length(message: dict) -> int | None:
    """Bytes of the header in the frame: what `flip` leaves alone, so that pairing keys stay as they were."""
    header = message["header"]
    if header is None:
        return None
    if "api_key" in header:
        client = header["client_id"]
        length = 8 + (2 + len(client.encode()) if client is not None else 2 if header["version"] >= 1 else 0)
        return length + (1 + sum(2 + len(t["data"]) for t in header["tagged_fields"]) if header["version"] >= 2 else 0)
    return 4 + (1 + sum(2 + len(t["data"]) for t in header["tagged_fields"]) if header["version"] >= 1 else 0)


@SETTINGS
@given(name=st.sampled_from(NAMES), data=st.data())
def test_flip_a_size_prefix(name: str, data: st.DataObject) -> None:
    base = baseline(name)
    key = data.draw(st.sampled_from(sorted(base.exchanges, key=str)))
    direction, start, _, _ = data.draw(st.sampled_from(base.frames[key]))
    at = start + data.draw(st.integers(0, 3))
    packets = _flip(base, direction, key[0], key[1], at, at + 1, data.draw(st.integers(1, 255)))
    flipped = next(
        i + 1
        for i, carried in enumerate(base.ranges)
        if carried and carried[:3] == (key[0], key[1], direction) and carried[3] <= at < carried[4]
    )
    touched = {other for other, frames in base.frames.items() if other[:2] == key[:2] and max(last for *_, last in frames) >= flipped}
    assert_untouched_identical(base, decode(packets), touched)
