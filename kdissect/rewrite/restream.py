"""One direction of a connection written as a new stream: its bytes reassembled in order and handed to a
`Transform`, which says, as each unit of them (a TLS record, a Kafka frame) completes, what the new stream holds in
its place. What a packet's arrival completes goes out in that packet, so every frame keeps the time its last byte
was captured (latencies do not change) and the new stream is in order, whatever retransmissions and reordering the
old one had. Acknowledgements of the old stream are moved to the new one's offsets through the marks kept of where
each output began.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Protocol

from kdissect.capture.packet import Packet
from kdissect.diagnostic import Diagnostic
from kdissect.limits import Limits
from kdissect.net.reassembly import Patience, Reassembler
from kdissect.net.rebuild import rebuilt, tcp_layout
from kdissect.net.segments import Segment
from kdissect.net.tcp import ACK, FIN, RST, SYN
from kdissect.rewrite.placement import Conversations, Placed, Track

MARKS = 8192
"""Marks kept per direction: an acknowledgement names recent bytes; past this the oldest half goes."""
GRACE = 1024
"""Packets after a connection closed during which its last acknowledgements are still written; then its state goes."""
MAX_PAYLOAD = 65000
"""The most a rewritten packet carries: an IP packet holds 65535 bytes, headers included. A unit that grew past it
(a rewritten frame going out whole with its last byte) takes several packets at the same time."""


class Transform(Protocol):
    """What the new stream holds for the old one's bytes, given in order."""

    def data(self, chunk: bytes) -> bytes: ...

    def gap(self, length: int) -> None: ...


def _ignore(_diagnostic: Diagnostic, _ts: int, _index: int) -> None:
    """The core has told what this stream lost; a rewrite does not tell it again."""


class Restream:
    """The old stream in, the new one out, packet by packet (it is the reassembler's sink)."""

    def __init__(self, transform: Transform, limits: Limits) -> None:
        self.transform = transform
        patience = Patience(limits.max_late_packets, limits.max_late_bytes, limits.max_late_ms * 1_000_000)
        self.reassembler = Reassembler(self, _ignore, limits.max_stream_buffer, True, patience)
        self._out = bytearray()
        self.total = 0
        """Bytes of the new stream so far."""
        self._in = 0
        self._ins: list[int] = []
        self._outs: list[int] = []
        self._fin: tuple[int, int] | None = None

    def segment(self, segment: Segment) -> tuple[int, bytes]:
        """Take a segment of the old stream: (the new stream's offset before it, the new bytes it completed)."""
        before = self.total
        self.reassembler.segment(segment.seq, segment.payload, segment.missing, segment.flags, segment.ts, segment.index)
        out = bytes(self._out)
        self._out.clear()
        return before, out

    def finished_at(self, offset: int) -> None:
        """A FIN ends the old stream at `offset`: its sequence number follows the new stream's last byte."""
        if self._fin is None:
            self._fin = (offset, self.total)

    def moved(self, offset: int) -> int:
        """Where an offset of the old stream (an acknowledgement) lands in the new one: after every output made of the
        bytes before it."""
        if self._fin is not None and offset > self._fin[0]:
            return self._fin[1] + 1
        at = bisect_right(self._ins, offset) - 1
        return self._outs[at] if at >= 0 else 0

    # the reassembler's sink

    def start(self, mid_stream: bool) -> None:
        pass

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        self._in += len(chunk)
        self._emit(self.transform.data(chunk))

    def gap(self, length: int, ts: int) -> None:
        self._in += length
        self.transform.gap(length)

    @staticmethod
    def fill(offset: int, data: bytes) -> int:
        return 0

    def finish(self) -> None:
        """The stream is over: what a unit still waits for never comes, and a packet to carry it neither."""

    @property
    def held(self) -> int:
        """Bytes held for a packet to carry: none once the packet that completed them is written."""
        return len(self._out)

    def _emit(self, out: bytes) -> None:
        if not out:
            return
        self._out += out
        self.total += len(out)
        self._ins.append(self._in)
        self._outs.append(self.total)
        if len(self._ins) > MARKS:
            del self._ins[: MARKS // 2], self._outs[: MARKS // 2]


class Addressing(Protocol):
    """How written packets are addressed (an anonymization renumbers every address; a cut keeps them)."""

    def address(self, packed: bytes) -> bytes: ...

    def link(self, linktype: int, header: bytes) -> bytes: ...


def restreamed(placed: Placed, pair: tuple[Restream, Restream], addressing: Addressing | None = None) -> list[Packet]:
    """The packets a captured one becomes once its connection is restreamed (both directions in `pair`, in the
    track's order): the new bytes its arrival completed, at the new stream's sequence numbers, with its
    acknowledgement (and SACK edges) moved; none when it carries nothing new and is no handshake or close. Its
    link-layer header and addresses are kept, or renumbered by `addressing`."""
    packet, segment, track, direction, offset = placed
    flags = segment.flags
    mine, theirs = pair[direction], pair[direction ^ 1]
    if flags & ACK and track.base[direction ^ 1] is not None:
        theirs.reassembler.acknowledged(segment.ack, segment.ts, segment.index)
    before, out = mine.segment(segment)
    length = len(segment.payload) + segment.missing
    if flags & FIN:
        mine.finished_at(offset + length)
    elif not length:
        before = mine.moved(offset)  # a bare ACK after this side's FIN sits past the FIN's sequence number
    if not out and not flags & (SYN | FIN | RST) and (length or (track.data and not any(track.fins))):
        return []
    layout = tcp_layout(packet.linktype, packet.data)
    if layout is None:
        return []  # an IP fragment: its bytes went into the stream; the packet itself is not written again

    def moved_ack(ack: int) -> int:
        return ack if track.base[direction ^ 1] is None else track.seq_at(direction ^ 1, theirs.moved(track.offset_of(direction ^ 1, ack)))

    ack = moved_ack(segment.ack) if flags & ACK else segment.ack
    link = src = dst = None
    if addressing is not None:
        link = addressing.link(packet.linktype, packet.data[: layout.ip])
        src, dst = addressing.address(segment.src), addressing.address(segment.dst)
    pieces = [out[at : at + MAX_PAYLOAD] for at in range(0, len(out), MAX_PAYLOAD)] or [b""]
    made = []
    for i, piece in enumerate(pieces):
        seq = track.seq_at(direction, -1) if flags & SYN else track.seq_at(direction, before)
        last = i == len(pieces) - 1
        data = rebuilt(
            packet.data,
            layout,
            seq=seq,
            ack=ack,
            payload=piece,
            map_ack=moved_ack,
            flags=flags if last else flags & ~FIN,
            link=link,
            src=src,
            dst=dst,
        )
        made.append(packet._replace(data=data, orig_len=len(data)))
        before += len(piece)
    return made


Pair = tuple[Restream, Restream]


class Pairs:
    """The restreamed connections of a rewriting pass: each made at its first packet, let go of `GRACE` packets after
    it closed (or when the core would forget it), so a capture of a million connections holds the live ones only."""

    def __init__(self, conversations: Conversations, make: Callable[[Track], Pair]) -> None:
        self._conversations = conversations
        self._make = make
        self._pairs: dict[int, Pair] = {}
        self._closed: dict[Track, int] = {}
        self._packets = 0

    def of(self, track: Track) -> Pair | None:
        """The connection's pair; None once it was let go (a late packet of a connection over: not written)."""
        self._packets += 1
        if track.released:
            return None
        pair = self._pairs.get(track.id)
        if pair is None:
            pair = self._pairs[track.id] = self._make(track)
        if track.closed and track not in self._closed:
            self._closed[track] = self._packets
        if self._conversations.forgotten or (self._closed and self._packets - next(iter(self._closed.values())) > GRACE):
            self._release()
        return pair

    def __len__(self) -> int:
        return len(self._pairs)

    def _release(self) -> None:
        for track in self._conversations.forgotten:
            self._let_go(track)
        self._conversations.forgotten.clear()
        for track, closed in list(self._closed.items()):
            if self._packets - closed <= GRACE:
                break
            self._let_go(track)

    def _let_go(self, track: Track) -> None:
        track.released = True
        self._pairs.pop(track.id, None)
        self._closed.pop(track, None)
