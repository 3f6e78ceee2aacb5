"""Which connection each packet belongs to, numbered as the core numbers them, and where its bytes lie in its stream.

A rewriting pass reads the capture again after the core has said which exchanges, connections and stream offsets
matter: it must find the same connections in the packets. `Conversations` follows the core's rules (dissector.py)
without reassembling anything: a connection opens at the first packet of a 4-tuple that carries data or a SYN, a
SYN whose sequence number is not its direction's own opens a new one on the same 4-tuple, every TCP connection is
numbered, Kafka or not, and past `Limits.max_connections` the least recently active eighth are forgotten. (The core
also forgets connections when what they hold passes `max_buffered_bytes`; a capture that made it do so is read
again with other numbers after that point.) A stream's offsets count from the byte after the SYN, or from the first byte captured
(`net/reassembly.py`), and run on past 4 GiB where sequence numbers wrap.
"""

from __future__ import annotations

from typing import NamedTuple

from kdissect.capture.packet import Packet
from kdissect.dissector import EVICT_FRACTION, flow_keys
from kdissect.events import Endpoint
from kdissect.limits import Limits
from kdissect.net.malformed import Malformed
from kdissect.net.segments import Segment, SegmentDecoder
from kdissect.net.tcp import ACK, FIN, RST, SYN

MOD = 1 << 32
HALF = 1 << 31


class Track:
    """One connection as the packets show it. Direction 0 is the sender of its first packet, as in the core."""

    __slots__ = ("id", "ends", "tap", "base", "high", "fins", "reset", "data", "last_ts", "released")

    def __init__(self, cid: int, a: tuple[bytes, int], b: tuple[bytes, int], tap: int = 0) -> None:
        self.id = cid
        self.ends = (a, b)
        self.tap = tap
        self.last_ts = 0
        self.released = False
        """A rewriting pass let go of what it kept for this connection (it was over): later packets are not written."""
        self.base: list[int | None] = [None, None]
        """The sequence number of each direction's stream offset 0: the byte after its SYN, or its first byte."""
        self.high = [0, 0]
        """The end of the furthest bytes placed each way: where the next sequence numbers are unwrapped near."""
        self.fins = [False, False]
        self.reset = False
        self.data = False
        """Some packet carried payload: later pure ACKs are no longer the handshake's."""

    @property
    def closed(self) -> bool:
        """Over as far as the packets tell (reset, or a FIN each way): a SYN then opens a new connection."""
        return self.reset or (self.fins[0] and self.fins[1])

    def direction_from(self, client: Endpoint) -> int:
        """The direction whose sender is `client`."""
        return 0 if Endpoint.from_packed(*self.ends[0]) == client else 1

    def place(self, direction: int, seq: int, flags: int, length: int) -> int:
        """The stream offset of a segment's first payload byte; the stream starts here if it had not."""
        base = self.base[direction]
        if base is None:
            base = self.base[direction] = (seq + 1) % MOD if flags & SYN else seq
        offset = self.offset_of(direction, seq + 1 if flags & SYN else seq)
        if offset + length > self.high[direction]:
            self.high[direction] = offset + length
        return offset

    def offset_of(self, direction: int, seq: int) -> int:
        """The stream offset of a sequence number (an acknowledgement's), unwrapped near the stream's furthest bytes."""
        base = self.base[direction]
        if base is None:
            return 0
        high = self.high[direction]
        offset = high - (high % MOD) + (seq - base) % MOD
        if offset - high >= HALF:
            offset -= MOD
        elif high - offset > HALF:
            offset += MOD
        return offset

    def seq_at(self, direction: int, offset: int) -> int:
        """The sequence number of a stream offset (the inverse of `place`); 0 before the stream started."""
        base = self.base[direction]
        return 0 if base is None else (base + offset) % MOD


class Placed(NamedTuple):
    """A packet and what it is to its connection."""

    packet: Packet
    segment: Segment
    track: Track
    direction: int
    offset: int
    """Stream offset of the payload's first byte (of the byte after a SYN)."""


class Conversations:
    """Places packets in connections, one packet at a time in capture order."""

    def __init__(self, limits: Limits) -> None:
        self._segments = SegmentDecoder(limits.max_fragment_bytes)
        self._flows: dict[tuple, tuple[Track, int]] = {}
        self._max = limits.max_connections
        self.count = 0
        self.forgotten: list[Track] = []
        """Connections forgotten as the core forgets them (too many at once): whoever keeps state per track lets go."""

    def place(self, packet: Packet) -> Placed | None:
        """Where the packet goes; None for one that is not a TCP segment (or only a fragment of one so far), or
        that the core ignores (a bare ACK of no connection it knows)."""
        try:
            segment = self._segments.decode(packet)
        except Malformed:
            return None
        if segment is None:
            return None
        ts, _index, src, sport, dst, dport, seq, _ack, flags, payload, missing = segment
        tap = packet.tap
        entry = self._flows.get(flow_keys((src, sport), (dst, dport), tap)[0])
        if entry is None:
            if not (payload or missing or flags & SYN):
                return None
            track, direction = self._open((src, sport), (dst, dport), tap), 0
        else:
            track, direction = entry
            base = track.base[direction]
            if flags & SYN and not flags & ACK and (track.closed or base is None or (base - 1) % MOD != seq):
                track, direction = self._open((src, sport), (dst, dport), tap), 0
        length = len(payload) + missing
        offset = track.place(direction, seq, flags, length)
        track.data = track.data or length > 0
        track.last_ts = ts
        if flags & FIN:
            track.fins[direction] = True
        if flags & RST:
            track.reset = True
        return Placed(packet, segment, track, direction, offset)

    def _open(self, a: tuple[bytes, int], b: tuple[bytes, int], tap: int) -> Track:
        if len(self._flows) >= 2 * self._max:
            self._evict()
        self.count += 1
        track = Track(self.count, a, b, tap)
        forward, backward = flow_keys(a, b, tap)
        self._flows[forward] = (track, 0)
        self._flows[backward] = (track, 1)
        return track

    def _evict(self) -> None:
        """The core's rule (`Dissector._evict`): the least recently active eighth of the connections go."""
        tracks = {id(t): t for t, _ in self._flows.values()}
        by_age = sorted(tracks.values(), key=lambda t: t.last_ts)
        for track in by_age[: max(1, len(by_age) // EVICT_FRACTION)]:
            for key in flow_keys(*track.ends, track.tap):
                self._flows.pop(key, None)
            self.forgotten.append(track)
