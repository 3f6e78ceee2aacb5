"""The sans-IO core: packets in, events out.

`Dissector` knows nothing of files, sockets or Spark. A driver hands it packets in capture order and receives
the events each packet completes (exchanges, notices, connection summaries); `finish()` settles the rest.
The pcap reader, the live sniffer and the Spark job are three such drivers, and all three build it the one
way: `make_dissector(Options(...))`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Protocol

from kdissect.capture.packet import Packet
from kdissect.decode.decoder import Decoder
from kdissect.diagnostic import Diagnostic
from kdissect.events import Ending, Event, Notice
from kdissect.kafka.connection import CONNECTION_COST, SEGMENT_COST, Connection
from kdissect.kafka.phase import EMPTY, IGNORED
from kdissect.kafka.shared import BodyDecoder, Keep, Shared, SideStreams
from kdissect.limits import DEFAULT_LIMITS, Limits
from kdissect.net.malformed import Malformed
from kdissect.net.segments import SegmentDecoder
from kdissect.net.tcp import ACK, SYN
from kdissect.schema import BUILTIN, Catalog
from kdissect.tls.keylog import KeyLog, KeyLogFile, own_key_log

DEFAULT_PORTS = frozenset({9092})
EVICT_FRACTION = 8
"""When the connection table is full, the least recently active eighth goes at once, so eviction stays rare."""
HELD_CHECKS = 16
"""The global buffer bound is checked each time a sixteenth of it has been read from the capture."""


class Dissector:
    """Turns packets into Kafka events. One instance per capture (or live session)."""

    def __init__(
        self,
        *,
        ports: Iterable[int] = DEFAULT_PORTS,
        limits: Limits = DEFAULT_LIMITS,
        reorder: bool = True,
        decoder: BodyDecoder | None = None,
        keep: Keep | None = None,
        tls_keylog: bytes | KeyLog = b"",
        catalog: Catalog = BUILTIN,
        side_streams: SideStreams | None = None,
    ) -> None:
        self._shared = Shared(frozenset(ports), limits, reorder, decoder, catalog, keep, side_streams)
        if tls_keylog:
            self._shared.tls_keys = own_key_log(tls_keylog)
        self._segments = SegmentDecoder(limits.max_fragment_bytes)
        self._flows: dict[tuple, tuple[Connection, int]] = {}
        self._live: dict[Connection, None] = {}
        """Connections not closed yet, in the order they opened: what the global bound prices and evicts from."""
        self._tapped: dict[Connection, int] = {}
        """The tap of each connection keyed by one (`Packet.tap`: several captures read as one), for forgetting it."""
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
        if counters.bytes + counters.packets * SEGMENT_COST + self._shared.grown >= self._next_held_check:
            self._bound_held(packet.ts)
        try:
            segment = self._segments.decode(packet)
        except Malformed as exc:
            self._shared.emit(Notice(Diagnostic(exc.code, exc.reason, "warning", "packet"), None, packet.ts, packet.index))
            return self._take()
        if segment is None:
            return self._take()
        ts, index, src, sport, dst, dport, seq, ack, flags, payload, missing = segment
        tap = packet.tap
        entry = self._flows.get((src, sport, dst, dport) if not tap else (src, sport, dst, dport, tap))
        if entry is not None and not flags & 0x07:  # the common case: data or a bare ACK on a live connection
            connection, direction = entry
            if not connection.phase.over:
                connection.segment(direction, seq, ack, flags, payload, missing, ts, index)
                if connection.ending or connection.phase is IGNORED:
                    self._end(connection, ts)
            elif payload and connection.phase is not IGNORED:
                self._after_close(connection, len(payload), ts, index)
            events = self._shared.events
            if events:
                self._shared.events = []
            return events
        if entry is None:
            if not (payload or missing or flags & SYN):
                return self._take()
            connection, direction = self._open((src, sport), (dst, dport), ts, tap), 0
        else:
            connection, direction = entry
            # a SYN that is not a retransmission of this direction's own opens a new connection on the 4-tuple
            if flags & SYN and not flags & ACK and (connection.phase.over or connection.streams[direction].isn != seq):
                if not connection.phase.over:
                    self._close(connection, "reused", ts)
                connection, direction = self._open((src, sport), (dst, dport), ts, tap), 0
            elif connection.phase.over:
                if payload and connection.phase is not IGNORED:
                    self._after_close(connection, len(payload), ts, index)
                return self._take()
        connection.segment(direction, seq, ack, flags, payload, missing, ts, index)
        if connection.ending or connection.phase is IGNORED:
            self._end(connection, ts)
        return self._take()

    def add_tls_keylog(self, text: bytes) -> None:
        """More TLS secrets (NSS key log lines), such as a pcapng Decryption Secrets Block read between packets or
        lines a client appends during a live session (b"" says a key log is in use, nothing in it yet). Records held
        for want of them are opened; the events that completes come with the next `feed` or `finish`."""
        if self._shared.tls_keys.add(text).secrets:
            for session in list(self._shared.tls_waiting):
                session.keys_added()

    def _end(self, connection: Connection, ts: int) -> None:
        """Close a connection its own packets have ended; an ignored one is over for us too (its packets dropped)."""
        if connection.finished or connection.phase is IGNORED:
            self._close(connection, "reset" if any(s.reset for s in connection.streams) else "fin", ts)

    def _after_close(self, connection: Connection, length: int, ts: int, index: int) -> None:
        """Data for a connection already over: captured too late to be used, or sent after a reset. Told, not used."""
        message = f"{length} bytes came after the connection ended (captured late, or sent after a reset); not decoded"
        self._shared.emit(Notice(Diagnostic("tcp.after-close", message, "warning", "packet"), connection.info, ts, index))

    def _take(self) -> list[Event]:
        events = self._shared.events
        if events:
            self._shared.events = []
        return events

    def _open(self, a: tuple[bytes, int], b: tuple[bytes, int], ts: int, tap: int = 0) -> Connection:
        if len(self._flows) >= 2 * self._shared.limits.max_connections:
            self._evict(ts)
        self.counters.connections += 1
        self._shared.grown += CONNECTION_COST
        connection = Connection(self._shared, self.counters.connections, a, b, ts)
        forward, backward = flow_keys(a, b, tap)
        self._flows[forward] = (connection, 0)
        self._flows[backward] = (connection, 1)
        if tap:
            self._tapped[connection] = tap
        self._live[connection] = None
        return connection

    def _evict(self, ts: int) -> None:
        """Forget the least recently active connections, closing the live ones as evicted."""
        connections = {id(c): c for c, _ in self._flows.values()}
        by_age = sorted(connections.values(), key=lambda c: c.last_ts)
        for connection in by_age[: max(1, len(by_age) // EVICT_FRACTION)]:
            if not connection.phase.over:
                self.counters.evicted_connections += 1
                self._close(connection, "evicted", ts)
            self._forget(connection)

    def evict_idle(self, before: int) -> list[Event]:
        """Let go of the connections with no packet since `before` (ns): a tap that runs for days forgets the
        connections whose end it never saw (lost with the packets the kernel dropped) and the ended ones it keeps for
        a while to name late packets, instead of waiting for `max_connections` to fill. The live ones close as evicted."""
        idle = {id(c): c for c, _ in self._flows.values() if c.last_ts < before}
        for connection in idle.values():
            if not connection.phase.over:
                self.counters.evicted_connections += 1
                self._close(connection, "evicted", before)
            self._forget(connection)
        return self._take()

    def _forget(self, connection: Connection) -> None:
        connection.detach()
        for key in flow_keys(*connection.ends, self._tapped.pop(connection, 0)):
            self._flows.pop(key, None)

    def _bound_held(self, ts: int) -> None:
        """Past `max_buffered_bytes` held in all (priced by `Connection.priced`: objects, segments, waiting requests),
        evict the least recently active connections until half of it is free, and say so once.

        Pricing every live connection costs a pass over them, so it runs only once what was taken on since the last
        pass (bytes read, segments, new connections, waiting requests: each priced at least as much as it can add to
        what is held) could have reached the bound, and never sooner than a `HELD_CHECKS`th of it after the last. A flood is then
        priced once per half of the bound it fills, a few pricings per connection, however many connections come.
        """
        counters = self.counters
        taken = counters.bytes + counters.packets * SEGMENT_COST + self._shared.grown
        limit = self._shared.limits.max_buffered_bytes
        held = {c: c.priced() for c in self._live}
        total = before = sum(held.values())
        if total <= limit:
            self._next_held_check = taken + max(self._held_check_every, limit - total)
            return
        evicted = 0
        for connection in sorted(held, key=lambda c: c.last_ts):
            if total <= limit // 2:
                break
            total -= held[connection]
            evicted += 1
            counters.evicted_connections += 1
            self._close(connection, "evicted", ts)
            self._forget(connection)
        self._next_held_check = taken + max(self._held_check_every, limit - total)
        message = (
            f"all connections held {before} bytes (priced with their objects, segments and waiting requests), past "
            f"max_buffered_bytes ({limit}): the {evicted} least recently active were evicted, freeing {before - total}"
        )
        self._shared.emit(Notice(Diagnostic("limits.buffered-bytes", message, "warning"), None, ts, 0))

    def _close(self, connection: Connection, ended: Ending, ts: int) -> None:
        connection.close(ended, ts)
        self._live.pop(connection, None)
        if connection.phase is IGNORED:
            self.counters.ignored_connections += 1
        elif connection.phase is EMPTY:
            self.counters.empty_connections += 1
        else:
            self.counters.kafka_connections += 1

    def finish(self) -> list[Event]:
        """The capture is over: settle every connection still open."""
        return list(self.settle())

    def settle(self) -> Iterator[Event]:
        """`finish`, one connection at a time: each one's events are handed on, and its memory let go, before the
        next is closed, so the end of a capture of thousands of open connections costs no more than its middle."""
        ts = self.counters.last_ts or 0
        for connection in list(self._live):
            self._close(connection, "capture-end", ts)
            self._forget(connection)
            yield from self._take()
        self._flows.clear()
        self._tapped.clear()
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
        yield from self._take()

    def run(self, packets: Iterable[Packet]) -> Iterator[Event]:
        """Drive the dissector over an iterable of packets: the whole loop of a file driver."""
        return drive(self, packets)


class Driven(Protocol):
    """What a file driver's loop needs: the core, or the core with several captures before it (kdissect/taps/)."""

    def feed(self, packet: Packet) -> list[Any]: ...

    def settle(self) -> Iterator[Any]: ...


def drive(dissector: Driven, packets: Iterable[Packet]) -> Iterator[Any]:
    """Every event of `packets`: each packet's as it is fed, then what settling the rest yields."""
    feed = dissector.feed
    for packet in packets:
        events = feed(packet)
        if events:
            yield from events
    yield from dissector.settle()


def flow_keys(a: tuple[bytes, int], b: tuple[bytes, int], tap: int) -> tuple[tuple, tuple]:
    """A connection's two flow-table keys: its 4-tuple each way, with its tap when several captures are read as one
    (the same addresses and ports in two captures are two connections, unless the tap stage says they are one)."""
    if not tap:
        return (a[0], a[1], b[0], b[1]), (b[0], b[1], a[0], a[1])
    return (a[0], a[1], b[0], b[1], tap), (b[0], b[1], a[0], a[1], tap)


MAKE = object()
"""`make_dissector`'s default: make the decoder the options ask for."""


@dataclass(frozen=True, slots=True)
class Options:
    ports: frozenset[int] = DEFAULT_PORTS
    limits: Limits = DEFAULT_LIMITS
    reorder: bool = True
    decode: bool = True
    """Decode bodies and records; without it only headers are read (pairing and latency still work)."""
    show_secrets: bool = False
    spans: bool = False
    """Record every field's byte span (for the hex view); costs decoding time."""
    keep: Keep | None = None
    """A verdict from headers (`kafka.shared.Keep`): the bodies of exchanges it rejects are not decoded, except
    those later bodies depend on. A display filter's `Filter.keep`; None decodes every body."""
    tls_keylog: bytes | KeyLogFile = b""
    """TLS secrets to decrypt TLS connections with: key log lines (NSS format), or a key log file already read
    (`tls.keylog.KeyLogFile`, which every dissector of these options shares)."""
    catalog: Catalog = BUILTIN
    """The APIs the run knows: the generated tables, with the user's specs (--spec-dir) over them."""
    side_streams: SideStreams | None = None
    """What takes the connections that are not Kafka: `values.http_sink.HttpLearning`, which reads a schema registry's
    HTTP for the schemas it carries; None ignores them."""


def make_decoder(options: Options) -> Decoder | None:
    """The body decoder the options ask for, or None. Its compiled decoders are kept: share it to reuse them."""
    if not options.decode:
        return None
    return Decoder(options.catalog, options.limits, spans=options.spans, show_secrets=options.show_secrets)


def make_dissector(options: Options, decoder: Any = MAKE) -> Dissector:
    """A dissector for the options; pass a decoder (from `make_decoder`) to share one across dissectors."""
    if decoder is MAKE:
        decoder = make_decoder(options)
    return Dissector(
        ports=options.ports,
        limits=options.limits,
        reorder=options.reorder,
        decoder=decoder,
        keep=options.keep,
        tls_keylog=options.tls_keylog,
        catalog=options.catalog,
        side_streams=options.side_streams,
    )


def file_dissector(source: Any, options: Options, decoder: Any = MAKE) -> Dissector:
    """A dissector for the packets of a capture file (`capture.source.CaptureFile`): the TLS secrets the file
    embeds (pcapng Decryption Secrets Blocks) are handed to it as they are read, before the packets after them."""
    dissector = make_dissector(options, decoder)
    source.secrets_to(dissector.add_tls_keylog)
    return dissector
