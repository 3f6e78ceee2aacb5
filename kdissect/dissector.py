"""The sans-IO core: packets in, events out.

`Dissector` knows nothing of files, sockets or Spark. A driver hands it packets in capture order and receives
the events each packet completes (exchanges, notices, connection summaries); `finish()` settles the rest.
The pcap reader, the live sniffer and the Spark job are three such drivers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Protocol

from kdissect.capture.packet import Packet
from kdissect.diagnostic import Diagnostic
from kdissect.events import Event, Notice
from kdissect.kafka.connection import Connection
from kdissect.kafka.exchange import Message
from kdissect.kafka.session import Session
from kdissect.limits import DEFAULT_LIMITS, Limits
from kdissect.net.malformed import Malformed
from kdissect.net.segments import SegmentDecoder
from kdissect.net.tcp import ACK, SYN

DEFAULT_PORTS = frozenset({9092})
EVICT_FRACTION = 8
"""When the connection table is full, the least recently active eighth goes at once, so eviction stays rare."""
HELD_CHECKS = 16
"""The global buffer bound is checked each time a sixteenth of it has been read from the capture."""

log = logging.getLogger(__name__)


class BodyDecoder(Protocol):
    """Decodes message bodies; returns the message with `body` and its diagnostics filled in. Never raises."""

    def request(self, message: Message, session: Session) -> Message: ...

    def response(self, message: Message, request: Message, session: Session) -> Message: ...


@dataclass
class Counters:
    """Totals over the whole capture, for summaries."""

    packets: int = 0
    bytes: int = 0
    first_ts: int | None = None
    last_ts: int | None = None
    tcp_segments: int = 0
    malformed: int = 0
    connections: int = 0
    kafka_connections: int = 0
    ignored_connections: int = 0
    """Connections on other ports that never showed a Kafka request."""
    evicted_connections: int = 0
    empty_connections: int = 0
    """Connections on a Kafka port that carried no data (SYN floods, port scans, refused connects)."""
    exchanges: int = 0
    malformed_codes: dict[str, int] = field(default_factory=dict)


class Shared:
    """What every connection of one dissector shares: settings, the output queue, counters."""

    def __init__(self, ports: frozenset[int], limits: Limits, reorder: bool, decoder: BodyDecoder | None) -> None:
        self.ports = ports
        self.limits = limits
        self.reorder = reorder
        self.decoder = decoder
        self.events: list[Event] = []
        self.counters = Counters()

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def decode_request(self, message: Message, session: Session) -> Message:
        if self.decoder is None:
            return message
        try:
            return self.decoder.request(message, session)
        except Exception as exc:  # a decoder bug must cost one body, never the pairing or the run
            return _decoder_failed(message, exc)

    def decode_response(self, message: Message, request: Message, session: Session) -> Message:
        if self.decoder is None:
            return message
        try:
            return self.decoder.response(message, request, session)
        except Exception as exc:  # as above
            return _decoder_failed(message, exc)


def _decoder_failed(message: Message, exc: Exception) -> Message:
    log.debug("decoder failure", exc_info=exc)
    diagnostic = Diagnostic("decode.internal-error", f"kdissect failed to decode this body: {exc!r}", "error", "frame")
    return Message(message.frame, message.header, None, message.diagnostics + (diagnostic,))


class Dissector:
    """Turns packets into Kafka events. One instance per capture (or live session)."""

    def __init__(
        self,
        *,
        ports: Iterable[int] = DEFAULT_PORTS,
        limits: Limits = DEFAULT_LIMITS,
        reorder: bool = True,
        decoder: BodyDecoder | None = None,
    ) -> None:
        self._shared = Shared(frozenset(ports), limits, reorder, decoder)
        self._segments = SegmentDecoder(limits.max_fragment_bytes)
        self._flows: dict[tuple[bytes, int, bytes, int], tuple[Connection, int]] = {}
        self.counters = self._shared.counters
        self._held_check_every = max(64 << 10, limits.max_buffered_bytes // HELD_CHECKS)
        self._next_held_check = self._held_check_every

    def feed(self, packet: Packet) -> list[Event]:
        """Take the next packet; return the events it completed (usually none)."""
        counters = self.counters
        counters.packets += 1
        counters.bytes += packet.orig_len
        if counters.first_ts is None:
            counters.first_ts = packet.ts
        counters.last_ts = packet.ts
        if counters.bytes >= self._next_held_check:
            self._bound_held(packet.ts)
        try:
            segment = self._segments.decode(packet)
        except Malformed as exc:
            counters.malformed += 1
            counters.malformed_codes[exc.code] = counters.malformed_codes.get(exc.code, 0) + 1
            self._shared.emit(Notice(Diagnostic(exc.code, exc.reason, "warning", "packet"), None, packet.ts, packet.index))
            return self._take()
        if segment is None:
            return self._take()
        counters.tcp_segments += 1
        ts, index, src, sport, dst, dport, seq, ack, flags, payload, missing = segment
        entry = self._flows.get((src, sport, dst, dport))
        if entry is not None and not flags & 0x07:  # the common case: data or a bare ACK on a live connection
            connection, direction = entry
            if not connection.closed:
                connection.segment(direction, seq, ack, flags, payload, missing, ts, index)
                if connection.ending or connection.ignored:
                    self._end(connection, ts)
            events = self._shared.events
            if events:
                self._shared.events = []
            return events
        if entry is None:
            if not (payload or missing or flags & SYN):
                return self._take()
            connection, direction = self._open((src, sport), (dst, dport), ts), 0
        else:
            connection, direction = entry
            # a SYN that is not a retransmission of this direction's own opens a new connection on the 4-tuple
            if flags & SYN and not flags & ACK and (connection.closed or connection.streams[direction].isn != seq):
                if not connection.closed:
                    self._close(connection, "reused", ts)
                connection, direction = self._open((src, sport), (dst, dport), ts), 0
            elif connection.closed:
                return self._take()
        connection.segment(direction, seq, ack, flags, payload, missing, ts, index)
        if connection.ending or connection.ignored:
            self._end(connection, ts)
        return self._take()

    def _end(self, connection: Connection, ts: int) -> None:
        """Close a connection its own packets have ended; an ignored one is over for us too (its packets dropped)."""
        if connection.finished or connection.ignored:
            self._close(connection, "reset" if any(s.reset for s in connection.streams) else "fin", ts)

    def _take(self) -> list[Event]:
        events = self._shared.events
        if events:
            self._shared.events = []
        return events

    def _open(self, a: tuple[bytes, int], b: tuple[bytes, int], ts: int) -> Connection:
        if len(self._flows) >= 2 * self._shared.limits.max_connections:
            self._evict(ts)
        self.counters.connections += 1
        connection = Connection(self._shared, self.counters.connections, a, b, ts)
        self._flows[(a[0], a[1], b[0], b[1])] = (connection, 0)
        self._flows[(b[0], b[1], a[0], a[1])] = (connection, 1)
        return connection

    def _evict(self, ts: int) -> None:
        """Forget the least recently active connections, closing the live ones as evicted."""
        connections = {id(c): c for c, _ in self._flows.values()}
        by_age = sorted(connections.values(), key=lambda c: c.last_ts)
        for connection in by_age[: max(1, len(by_age) // EVICT_FRACTION)]:
            if not connection.closed:
                self.counters.evicted_connections += 1
                self._close(connection, "evicted", ts)
            a, b = connection.ends
            self._flows.pop((a[0], a[1], b[0], b[1]), None)
            self._flows.pop((b[0], b[1], a[0], a[1]), None)

    def _bound_held(self, ts: int) -> None:
        """Past `max_buffered_bytes` held in all, evict the connections holding the most until half of it is free.

        Summing every connection's buffers costs a pass over the table, so it runs once per `HELD_CHECKS`th of the
        bound read from the capture: no more than that can be held past the bound before it is noticed.
        """
        self._next_held_check = self.counters.bytes + self._held_check_every
        limit = self._shared.limits.max_buffered_bytes
        held = {c: c.buffered() for c, direction in self._flows.values() if direction == 0 and not c.closed}
        total = sum(held.values())
        if total <= limit:
            return
        for connection in sorted(held, key=held.__getitem__, reverse=True):
            if total <= limit // 2:
                break
            total -= held[connection]
            self._shared.emit(
                Notice(
                    Diagnostic(
                        "limits.buffered-bytes",
                        f"all connections held {total + held[connection]} bytes, past max_buffered_bytes ({limit}); "
                        f"this one, holding {held[connection]}, was evicted",
                        "warning",
                    ),
                    connection.info,
                    ts,
                    0,
                )
            )
            self.counters.evicted_connections += 1
            self._close(connection, "evicted", ts)

    def _close(self, connection: Connection, ended: str, ts: int) -> None:
        connection.close(ended, ts)  # type: ignore[arg-type]
        if connection.ignored:
            self.counters.ignored_connections += 1
        elif connection.empty:
            self.counters.empty_connections += 1
        else:
            self.counters.kafka_connections += 1

    def finish(self) -> list[Event]:
        """The capture is over: settle every connection still open."""
        ts = self.counters.last_ts or 0
        for connection, direction in list(self._flows.values()):
            if direction == 0 and not connection.closed:
                self._close(connection, "capture-end", ts)
        self._flows.clear()
        fragments = self._segments.fragments
        if fragments.incomplete() or fragments.dropped:
            self._shared.emit(
                Notice(
                    Diagnostic(
                        "ip.fragments-incomplete",
                        f"{fragments.incomplete() + fragments.dropped} IP datagrams were fragmented and never completed",
                        "warning",
                    ),
                    None,
                    ts,
                    0,
                )
            )
        return self._take()

    def run(self, packets: Iterable[Packet]) -> Iterator[Event]:
        """Drive the dissector over an iterable of packets: the whole loop of a file driver."""
        feed = self.feed
        for packet in packets:
            events = feed(packet)
            if events:
                yield from events
        yield from self.finish()
