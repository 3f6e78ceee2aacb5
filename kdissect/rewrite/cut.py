"""`-w FILE`: the packets that carry chosen exchanges, and their connections' handshakes and closes, as a capture.

A first pass (the command's own reading) collects each chosen exchange's frames as stream spans (`Selection`);
`write_cut` then reads the capture again and keeps, of each chosen connection, its SYNs, FINs and resets, the
ACKs that end its handshake and its close, and every packet with kept bytes.

A packet may carry the end of one frame and the start of the next: when only one of them is chosen, the other's
bytes are cut out of the packet and every later sequence number of that direction (and the acknowledgements and
SACK blocks that name them) moves down by what was cut, with the IP length and the checksums made right. Left in,
they would read back as an exchange nobody chose, or as half of one; cut out with the sequence numbers left as
they were, they would read back as bytes the capture lost (a TCP gap, exit status 1, "previous segment not
captured" in Wireshark). Renumbered, each kept direction is one gapless stream, retransmissions and reordering
included as they were captured, and the cut reads back as exactly the chosen exchanges, paired as before.

TLS connections are rewritten record by record (rewrite/tls_cut.py): their handshake records as they were, and
the chosen bytes sealed again under the same keys at their new sequence numbers, so the same key log opens them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from typing import Any

from kdissect.capture.destination import CaptureDestination
from kdissect.capture.packet import Packet
from kdissect.events import Endpoint, Exchange
from kdissect.limits import Limits
from kdissect.net.rebuild import rebuilt, sack_edges, tcp_layout
from kdissect.net.tcp import ACK, FIN, RST, SYN
from kdissect.rewrite.placement import Conversations, Placed, Track
from kdissect.rewrite.restream import Pairs, Restream, restreamed
from kdissect.rewrite.spans import Spans
from kdissect.rewrite.tls_cut import SealedCut, TlsCutError
from kdissect.rewrite.tls_records import TlsRecords
from kdissect.taps.joined import joined
from kdissect.tls.keylog import KeyLog, own_key_log

CLIENT, BROKER = 0, 1


class CutError(Exception):
    """The cut cannot be made as asked; the message is one line for the user."""


@dataclass
class Chosen:
    """A connection with chosen exchanges: which end is the client, and the spans kept each way (client's first)."""

    client: Endpoint
    tls: bool
    spans: tuple[Spans, Spans] = field(default_factory=lambda: (Spans(), Spans()))


class Selection:
    """The chosen exchanges' frames, as stream spans per connection: a few numbers per run of chosen frames, however
    many exchanges are chosen."""

    def __init__(self) -> None:
        self.connections: dict[int, Chosen] = {}
        self.exchanges = 0
        self._last = 0

    def add(self, exchange: Exchange) -> None:
        """Choose an exchange; choosing it again (a command that shows each of its records) changes nothing."""
        if exchange.id == self._last:
            return
        self._last = exchange.id
        info = exchange.connection
        chosen = self.connections.get(info.id)
        if chosen is None:
            chosen = self.connections[info.id] = Chosen(info.client, info.tls is not None)
        chosen.tls = chosen.tls or info.tls is not None
        for side, message in ((CLIENT, exchange.request), (BROKER, exchange.response)):
            if message is not None:
                frame = message.frame
                chosen.spans[side].add(frame.offset, frame.offset + 4 + frame.size)
        self.exchanges += 1

    def freeze(self) -> None:
        for chosen in self.connections.values():
            for spans in chosen.spans:
                spans.freeze()


@dataclass
class Written:
    """What a cut wrote."""

    packets: int = 0
    connections: int = 0
    exchanges: int = 0


def choose(events: Iterable[Any], ids: Container[int], connections: Container[int] = ()) -> Selection:
    """The exchanges numbered `ids`, and every exchange of `connections`, from the events of the capture read again
    (numbered as the first reading numbered them)."""
    selection = Selection()
    for event in events:
        if isinstance(event, Exchange) and (event.id in ids or event.connection.id in connections):
            selection.add(event)
    return selection


def cut_into(path: str | os.PathLike[str], source: Any, selection: Selection, limits: Limits, keylog: bytes | KeyLog) -> Written:
    """Write the cut of `source` (a capture opened again, or several: capture/merge.py) into the capture file `path`,
    TLS connections opened with `keylog` and the secrets the file embeds (which a pcapng cut embeds in turn).
    DestinationError or CutError say why it cannot be written."""
    keys = own_key_log(keylog)
    with CaptureDestination(path) as destination:

        def embedded(text: bytes) -> None:
            keys.add(text)
            destination.secrets(text)

        source.secrets_to(embedded)
        return write_cut(joined(source, limits), selection, destination.write, limits, keys)


def write_cut(packets: Iterable[Packet], selection: Selection, write: Callable[[Packet], None], limits: Limits, keys: KeyLog) -> Written:
    """Write the cut of `packets` (the capture read again, in order) through `write(packet)`; `keys` opens the TLS
    connections chosen (the key log the first pass used, with the secrets the file embeds added as they are read)."""
    selection.freeze()
    conversations = Conversations(limits)
    plain: dict[int, tuple[Spans, Spans]] = {}
    """Each chosen plaintext connection's spans, in the track's directions (0: the sender of its first packet)."""
    sealed = Pairs(conversations, lambda track: _sealed(track, selection.connections[track.id], limits, keys))
    """Each chosen TLS connection's directions, rewritten record by record."""
    seen: set[int] = set()
    written = Written(exchanges=selection.exchanges)
    for packet in packets:
        placed = conversations.place(packet)
        if placed is None:
            continue
        track = placed.track
        chosen = selection.connections.get(track.id)
        if chosen is None:
            continue
        if chosen.tls:
            pair = sealed.of(track)
            try:
                out = restreamed(placed, pair) if pair is not None else []
            except TlsCutError as exc:
                raise CutError(str(exc)) from None
        else:
            spans = plain.get(track.id) or plain.setdefault(track.id, _oriented(track, chosen))
            kept = _kept(placed, spans)
            out = [kept] if kept is not None else []
        for each in out:
            write(each)
        written.packets += len(out)
        if out:
            seen.add(track.id)
    written.connections = len(seen)
    return written


def _oriented(track: Track, chosen: Chosen) -> tuple[Spans, Spans]:
    """The chosen connection's spans in the track's directions."""
    return chosen.spans if track.direction_from(chosen.client) == CLIENT else (chosen.spans[1], chosen.spans[0])


def _sealed(track: Track, chosen: Chosen, limits: Limits, keys: KeyLog) -> tuple[Restream, Restream]:
    """A chosen TLS connection's two directions, each a restream of its records (rewrite/tls_cut.py)."""
    records = TlsRecords(keys)
    client = track.direction_from(chosen.client)
    sides = (CLIENT, BROKER) if client == 0 else (BROKER, CLIENT)
    return (
        Restream(SealedCut(records, sides[0], chosen.spans[sides[0]], track.id), limits),
        Restream(SealedCut(records, sides[1], chosen.spans[sides[1]], track.id), limits),
    )


def _kept(placed: Placed, spans: tuple[Spans, Spans]) -> Packet | None:
    """The packet as the cut holds it, or None when the cut leaves it out."""
    packet, segment, track, direction, offset = placed
    flags = segment.flags
    mine, theirs = spans[direction], spans[direction ^ 1]
    captured = len(segment.payload)
    length = captured + segment.missing
    if flags & FIN and not mine.covers(offset + length):
        mine.add(offset + length, offset + length + 1)  # the FIN's own sequence number, which its peer acknowledges
        mine.freeze()
    parts = mine.kept(offset, offset + length) if length else []
    if not parts and not flags & (SYN | FIN | RST) and (length or (track.data and not any(track.fins))):
        return None  # not ours, or a bare ACK between the handshake and the close
    layout = tcp_layout(packet.linktype, packet.data)
    if layout is None:
        return None  # an IP fragment: its datagram's bytes are not cut out of fragments
    payload = b"".join(segment.payload[max(lo, offset) - offset : min(hi, offset + captured) - offset] for lo, hi in parts)
    missing = sum(max(0, hi - max(lo, offset + captured)) for lo, hi in parts)
    seq = _moved_seq(track, direction, mine, offset, flags)
    ack = _moved_ack(track, direction ^ 1, theirs, segment.ack) if flags & ACK else segment.ack
    if seq == segment.seq and ack == segment.ack and len(payload) == captured and missing == segment.missing:
        if all(_moved_ack(track, direction ^ 1, theirs, edge) == edge for edge in sack_edges(packet.data, layout)):
            return packet  # nothing to change: as captured, checksums and all
    data = rebuilt(
        packet.data,
        layout,
        seq=seq,
        ack=ack,
        payload=payload,
        missing=missing,
        map_ack=lambda edge: _moved_ack(track, direction ^ 1, theirs, edge),
    )
    return packet._replace(data=data, orig_len=len(data) + missing)


def _moved_seq(track: Track, direction: int, spans: Spans, offset: int, flags: int) -> int:
    """A segment's sequence number once the bytes before it that the cut leaves out are gone."""
    if flags & SYN:
        return track.seq_at(direction, -1)
    return track.seq_at(direction, spans.moved(offset))


def _moved_ack(track: Track, peer: int, spans: Spans, ack: int) -> int:
    """An acknowledgement of the peer's stream, moved as the peer's sequence numbers are."""
    base = track.base[peer]
    if base is None:
        return ack
    offset = track.offset_of(peer, ack)
    return track.seq_at(peer, spans.moved(offset)) if offset >= 0 else ack
