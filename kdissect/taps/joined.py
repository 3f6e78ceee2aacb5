"""Which packets of several captures are one connection's, and which only repeat what another capture showed first.

Two taps of one connection (the client's host and the broker's, or a SPAN port and a host) see the same 4-tuple and
the same sequence numbers: a packet joins the connection another tap opened when its sequence number falls within
that connection's stream (or its SYN is that connection's own), and the core is told it belongs to the first tap's
connection (`Packet.tap`). Its bytes are a copy when another tap showed them first while this tap had not: the copy
is left out, so each byte is taken once and the core counts no retransmission that never happened; a tap's own
retransmission still goes through. The same addresses and ports in two taps with unrelated sequence numbers are two
connections, kept apart by their taps.

Every data packet's end is remembered per tap (`sightings`), with its time on that tap's clock: what splits an
exchange's time between the broker and the network.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any, NamedTuple

from kdissect.capture.packet import Packet
from kdissect.events import Endpoint
from kdissect.limits import Limits
from kdissect.net.malformed import Malformed
from kdissect.net.segments import SegmentDecoder
from kdissect.net.tcp import ACK, FIN, RST, SYN

MOD = 1 << 32
HALF = 1 << 31
WINDOW = 1 << 23
"""How far outside a connection's known stream another tap's packet may start and still be that connection (8 MiB:
what a connection carries while two taps' clocks disagree; unrelated sequence numbers fall this near one in 250)."""
SIGHTINGS = 4096
"""Data packets remembered per direction and tap: the ends of the frames still waiting to be timed."""
RESENT = 64
"""Retransmissions remembered per connection."""
PRUNE_EVERY = 4096
"""Packets between two looks for connections to forget."""
OVER_NS = 10_000_000_000
"""How long a closed connection is remembered: the other taps' copies of its last packets come within it."""


class Sighting(NamedTuple):
    start: int
    end: int
    ts: int


class Shared:
    """One connection as several taps see it. Direction 0 is the sender of its first packet, as in the core."""

    __slots__ = ("owner", "taps", "ends", "base", "high", "flags", "acked", "own", "resent", "sightings", "last_ts", "closed")

    def __init__(self, owner: int, a: tuple[bytes, int], b: tuple[bytes, int]) -> None:
        self.owner = owner
        """The tap whose connection the core keys it by: the first that showed it."""
        self.taps: dict[int, None] = {owner: None}
        self.ends = (a, b)
        self.base: list[int | None] = [None, None]
        self.high = [0, 0]
        """The furthest byte each way that some tap showed: what the core has been given."""
        self.flags = [0, 0]
        """SYN, FIN and RST each way, once some tap showed them."""
        self.acked = [-1, -1]
        self.own: dict[tuple[int, int], int] = {}
        """(direction, tap) -> the furthest byte that tap showed that way."""
        self.resent: deque[tuple[int, int, int]] = deque(maxlen=RESENT)
        """(direction, start, end) of the latest retransmissions the core was given: the other taps' are copies."""
        self.sightings: dict[tuple[int, int], deque[Sighting]] = {}
        self.last_ts = 0
        self.closed = False

    def offset(self, direction: int, seq: int) -> int | None:
        base = self.base[direction]
        if base is None:
            return None
        high = self.high[direction]
        offset = high - high % MOD + (seq - base) % MOD
        if offset - high >= HALF:
            offset -= MOD
        elif high - offset > HALF:
            offset += MOD
        return offset

    def fits(self, direction: int, seq: int, flags: int) -> bool:
        """Whether a packet of another tap is this connection's: its SYN, or bytes within reach of its stream."""
        base = self.base[direction]
        if base is None:
            return not flags & SYN and self.base[direction ^ 1] is not None
        if flags & SYN:
            return (seq + 1) % MOD == base
        offset = self.offset(direction, seq)
        return offset is not None and -WINDOW <= offset <= self.high[direction] + WINDOW

    def direction_from(self, client: Endpoint) -> int:
        return 0 if Endpoint.from_packed(*self.ends[0]) == client else 1

    def seen(self, direction: int, tap: int, end: int) -> Sighting | None:
        """The first packet of `tap` in `direction` that carried the byte before stream offset `end` (searched from
        the newest: the frames being timed are recent)."""
        found = None
        for sighting in reversed(self.sightings.get((direction, tap), ())):
            if sighting.start < end <= sighting.end:
                found = sighting
            elif sighting.end < end and found is not None:
                break
        return found


class Joiner:
    """Packets of every tap in, in the merged order; each comes out as the core is to see it, or not at all."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._segments: dict[int, SegmentDecoder] = {}
        self._shared: dict[tuple[bytes, int, bytes, int], list[Shared]] = {}
        self._count = 0
        self.last: Shared | None = None
        """The connection of the packet admitted last (the one the core may have just opened)."""

    def admit(self, packet: Packet) -> Packet | None:
        """The packet as the core is to see it (its tap the one its connection is keyed by), or None: it repeats what
        another tap showed first."""
        self._count += 1
        if not self._count % PRUNE_EVERY:
            self._prune(packet.ts)
        return self._admitted(packet)

    def _prune(self, now: int) -> None:
        """Forget connections over for a while, and past `max_connections` the least recently active eighth."""
        for key, known in list(self._shared.items()):
            known[:] = [s for s in known if not (s.closed and now - s.last_ts > OVER_NS)]
            if not known:
                del self._shared[key]
        every = [s for known in self._shared.values() for s in known]
        if len(every) > self._limits.max_connections:
            gone = {id(s) for s in sorted(every, key=lambda s: s.last_ts)[: len(every) // 8]}
            for key, known in list(self._shared.items()):
                known[:] = [s for s in known if id(s) not in gone]
                if not known:
                    del self._shared[key]

    def _admitted(self, packet: Packet) -> Packet | None:
        decoder = self._segments.get(packet.tap)
        if decoder is None:
            decoder = self._segments[packet.tap] = SegmentDecoder(self._limits.max_fragment_bytes)
        try:
            segment = decoder.decode(packet)
        except Malformed:
            return packet  # the core tells it
        self.last = None
        if segment is None:
            return packet
        ts, _index, src, sport, dst, dport, seq, ack, flags, payload, missing = segment
        shared, direction = self._find(packet.tap, (src, sport), (dst, dport), seq, flags, bool(payload or missing))
        if shared is None:
            return packet
        self.last = shared
        shared.last_ts = ts
        if not self._new(shared, packet.tap, direction, seq, ack, flags, len(payload) + missing, ts):
            return None
        return packet if packet.tap == shared.owner else packet._replace(tap=shared.owner)

    def _find(self, tap: int, a: tuple[bytes, int], b: tuple[bytes, int], seq: int, flags: int, data: bool) -> tuple[Shared | None, int]:
        """The connection the packet belongs to (made or joined here), and its direction in it."""
        key = (a[0], a[1], b[0], b[1]) if (a, b) < (b, a) else (b[0], b[1], a[0], a[1])
        known = self._shared.setdefault(key, [])
        own = next((shared for shared in reversed(known) if tap in shared.taps), None)
        if own is not None:
            direction = 0 if own.ends[0] == a else 1
            if not (flags & SYN and not flags & ACK and own.base[direction] not in (None, (seq + 1) % MOD)):
                return own, direction  # this tap's connection on the 4-tuple (a SYN of its own would start another)
        for shared in reversed(known):
            direction = 0 if shared.ends[0] == a else 1
            if tap not in shared.taps and shared.fits(direction, seq, flags):  # a closed one too: clocks may disagree
                shared.taps[tap] = None
                return shared, direction
        if not (data or flags & SYN):
            return None, 0  # a bare ACK of nothing known: the core ignores it too
        shared = Shared(tap, a, b)
        known[:] = [s for s in known if tap not in s.taps] + [shared]
        return shared, 0

    def _new(self, shared: Shared, tap: int, direction: int, seq: int, ack: int, flags: int, length: int, ts: int) -> bool:
        """Record what the packet shows; whether any of it is new (else it repeats another tap's copy)."""
        if shared.base[direction] is None and (length or flags & (SYN | FIN)):
            shared.base[direction] = (seq + 1) % MOD if flags & SYN else seq
        offset = shared.offset(direction, seq + 1 if flags & SYN else seq)
        new = len(shared.taps) == 1
        if offset is not None and length:
            end = offset + length
            own = shared.own.get((direction, tap))
            copy = end <= shared.high[direction] and (own is None or offset >= own or (direction, offset, end) in shared.resent)
            if end <= shared.high[direction] and not copy:
                shared.resent.append((direction, offset, end))  # a retransmission: each tap shows it, the core counts it once
            shared.own[(direction, tap)] = end if own is None else max(own, end)
            sightings = shared.sightings.get((direction, tap))
            if sightings is None:
                sightings = shared.sightings[(direction, tap)] = deque(maxlen=SIGHTINGS)
            sightings.append(Sighting(offset, end, ts))
            shared.high[direction] = max(shared.high[direction], end)
            new = new or not copy
        marks = flags & (SYN | FIN | RST)
        if marks & ~shared.flags[direction]:
            shared.flags[direction] |= marks
            new = True
        if flags & ACK:
            acked = shared.offset(direction ^ 1, ack)
            if acked is not None and acked > shared.acked[direction]:
                shared.acked[direction] = acked
                new = True
        if flags & RST or (shared.flags[0] & FIN and shared.flags[1] & FIN):
            shared.closed = True
        return new or not (length or flags & (SYN | FIN | RST | ACK))


def joined(source: Any, limits: Limits) -> Iterator[Packet]:
    """A capture's packets as the core is given them: several captures' joined (a rewriting pass must find the
    connections the core found), one capture's as they are."""
    if len(getattr(source, "taps", ())) <= 1:
        yield from source.packets()
        return
    joiner = Joiner(limits)
    for packet in source.packets():
        admitted = joiner.admit(packet)
        if admitted is not None:
            yield admitted
