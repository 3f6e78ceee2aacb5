"""One TCP connection carrying Kafka: its two streams, which side is the client, framing, and pairing.

Requests and responses pair in the order they were sent, which the capture's order can contradict when one
direction's segments were captured late or out of order: a response whose packets acknowledge request bytes
not yet handed on waits (within `Limits.max_late_*`) until those bytes, or the gap that replaces them, have been.

After a SaslHandshake v0 request the client may send raw SASL tokens, size-delimited but with no Kafka header, and
the broker answers each one the same way: the connection is then in its authentication phase, where a client
frame that does not read as a request is a token and the broker's next frame its reply, until a request comes.

On a Kafka port the broker side is known from the start. On any other port both directions are held briefly
(`Probe`) until one of them shows a request header: the side that sent the SYN must open with one, and
without a SYN the side whose bytes hold a plausible request is the client.

Where a connection is in its life is its `phase` (phase.py, which holds every move and the table of those
allowed): probing, Kafka, in the raw SASL tokens, or ended one of three ways.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kdissect.diagnostic import Diagnostic
from kdissect.events import (
    SASL_TOKEN,
    ConnectionEnd,
    ConnectionInfo,
    Ending,
    Endpoint,
    Frame,
    Message,
    Notice,
    RequestHeader,
    Status,
    TlsInfo,
    answered,
    new_exchange,
    new_message,
)
from kdissect.kafka.detect import REQUEST_PROBE, find_request, find_response, plausible_request
from kdissect.kafka.framing import Framer
from kdissect.kafka.headers import HeaderError, parse_request_header, parse_response_header
from kdissect.kafka.pairing import Pairing, expects_response
from kdissect.kafka.phase import CLOSED, EMPTY, IGNORED, KAFKA, PROBING, SASL, SIDE, Phase, moved
from kdissect.kafka.shared import Shared
from kdissect.net.reassembly import Reassembler, StreamSink
from kdissect.net.tcp import ACK, SYN
from kdissect.schema import ApiKey
from kdissect.tls.detect import kafka_client_hello
from kdissect.tls.gate import TlsSwitch
from kdissect.wire import INT32

PROBE_LIMIT = 64 << 10
"""Bytes per direction held on an unknown port before deciding the connection is not Kafka."""
HELD_NOTICES = 64
"""Stream notices held while the connection's nature is unknown; told once it is Kafka, dropped if not."""
MIN_REQUEST = 8
MIN_RESPONSE = 4
_SIZE_PREFIX = struct.Struct(">i").pack

# What state costs in memory beyond the bytes it holds, measured with tracemalloc: the global bound
# (`Limits.max_buffered_bytes`) prices connections, segments and waiting requests with these.
CONNECTION_COST = 2560
"""A connection's own objects before its first byte: its streams with their probes, pairing and session, and its two
flow-table entries. A SYN flood's connections cost this and no more."""
KAFKA_COST = 3584
"""What a connection takes on with its first byte (or its orientation on an unknown port): its framers, its TLS gate,
its ends' addresses as text."""
SEGMENT_COST = 256
"""A segment held out of order or in a probe: its tuple, its bytes object, its heap and dictionary entries."""
REQUEST_COST = 1024
"""A request waiting for its response, besides its decoded body (priced at `BODY_FACTOR` times its frame)."""
BODY_FACTOR = 8
"""A decoded body costs about this many times its frame: a struct and a list per element, a str per name."""


class Probe:
    """Holds a direction's bytes while nobody knows yet whether it carries requests or responses."""

    __slots__ = ("items", "held", "mid_stream")

    def __init__(self) -> None:
        self.items: list[tuple[bytes | None, int, int, int]] = []
        """(chunk or None for a gap, gap length, ts, packet index)."""
        self.held = 0
        self.mid_stream = False

    def start(self, mid_stream: bool) -> None:
        self.mid_stream = mid_stream

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        self.items.append((chunk, 0, ts, index))
        self.held += len(chunk)

    @staticmethod
    def fill(offset: int, data: bytes) -> int:
        """Late bytes cannot be placed once a gap is held: the framer that replays it never sees them."""
        return 0

    def gap(self, length: int, ts: int) -> None:
        if not self.items:
            self.mid_stream = True  # the first bytes are lost: what comes is judged as if the capture began here
        self.items.append((None, length, ts, 0))

    def finish(self) -> None:
        """Nobody will judge these bytes: the connection ended, or is not Kafka."""
        self.items.clear()
        self.held = 0

    def joined(self) -> bytes:
        """The bytes before the first gap: what the first bytes of a SYN sender are judged by."""
        out = []
        for chunk, _, _, _ in self.items:
            if chunk is None:
                break
            out.append(chunk)
        return b"".join(out)

    def last_run(self) -> bytes:
        """The bytes after the last gap: where a search for a request header can look."""
        out = []
        for chunk, _, _, _ in reversed(self.items):
            if chunk is None:
                break
            out.append(chunk)
        return b"".join(reversed(out))

    def replay(self, sink: StreamSink) -> None:
        for chunk, length, ts, index in self.items:
            if chunk is None:
                sink.gap(length, ts)
            else:
                sink.data(chunk, ts, index)
        self.items.clear()


class Connection:
    """Both directions of one connection. Direction 0 runs from `a`, the sender of its first packet, to `b`.

    `client_dir`, `pairing` and `session` are made when the connection is oriented, and read only after: a SYN
    flood's connections never have them. `sasl_tokens` is made when a SASL phase begins.
    """

    __slots__ = (
        "shared",
        "id",
        "ends",
        "first_ts",
        "last_ts",
        "packets",
        "phase",
        "ending",
        "closer",
        "closing",
        "initiator",
        "port_side",
        "streams",
        "probes",
        "held_notices",
        "info",
        "client_dir",
        "pairing",
        "session",
        "tls",
        "sasl_tokens",
        "deferred",
        "deferred_bytes",
        "requests",
        "responses",
        "unanswered",
        "answered_ts",
        "answered_id",
    )

    client_dir: int
    """Which direction is the client's."""
    pairing: Pairing
    session: Any
    """The body decoder's own state for this connection."""
    sasl_tokens: deque[Message]
    """In the SASL phase: the client's tokens waiting for the broker's replies."""

    def __init__(self, shared: Shared, cid: int, a: tuple[bytes, int], b: tuple[bytes, int], ts: int) -> None:
        self.shared = shared
        self.id = cid
        self.ends = (a, b)
        self.first_ts = self.last_ts = ts
        self.packets = [0, 0]
        self.phase = PROBING
        self.ending = False
        """A FIN or RST was seen, in any phase: from then on the dissector checks after each packet whether it is over."""
        self.closer: int | None = None
        """The direction of the first FIN or RST: the side that closed the connection."""
        self.closing = False
        """`close` is running: the frames it hands on are settled at once, so what they register is not priced."""
        self.initiator: int | None = None
        """The direction that sent the SYN, when the capture saw it."""
        ports = shared.ports
        self.port_side = 0 if b[1] in ports else 1 if a[1] in ports else None
        """The client's direction, when a Kafka port says which it is: the connection is oriented at its first byte,
        so one that never carries any (a SYN flood, a port scan) builds no framers, gates or addresses."""
        limits = shared.limits
        report = self._report
        self.probes: tuple[Probe, ...] = (Probe(), Probe())
        """Each stream's sink while probing; none once oriented."""
        self.streams: tuple[Reassembler, ...] = (
            Reassembler(self.probes[0], report, limits.max_stream_buffer, shared.reorder, shared.patience),
            Reassembler(self.probes[1], report, limits.max_stream_buffer, shared.reorder, shared.patience),
        )
        self.held_notices: list[Notice] = []
        self.info: ConnectionInfo | None = None
        """The connection as events name it, once oriented."""
        self.tls: TlsSwitch[Framer] | None = None
        """Made when the connection is oriented: it puts the framers, or TLS decryptors feeding them, in the streams."""
        self.deferred: deque[tuple[Frame, int, int, int]] | None = None
        """Responses waiting for the request bytes their packets acknowledged: (frame, ack, packet index, ts). Made at
        the first (a deque costs 760 bytes; a SYN flood defers none)."""
        self.deferred_bytes = 0
        self.requests = self.responses = self.unanswered = 0
        self.answered_ts = 0
        """When the broker's last response was sent: it takes the next request only then (`Exchange.queued`)."""
        self.answered_id: int | None = None

    def _move(self, to: Phase) -> None:
        self.phase = moved(self.phase, to)

    def segment(self, direction: int, seq: int, ack: int, flags: int, payload: bytes, missing: int, ts: int, index: int) -> None:
        self.last_ts = ts
        self.packets[direction] += 1
        stream = self.streams[direction]
        if flags & 0x07:
            if flags & SYN and not flags & ACK:
                self.initiator = direction
            if flags & 0x05 and not self.ending:
                self.ending, self.closer = True, direction
        if flags & ACK:  # first: what the peer sent before this packet was sent, a request before its response
            other = self.streams[direction ^ 1]
            if other.pending:
                other.acknowledged(ack, ts, index)
            else:
                other.peer_ack_seq = ack
        stream.segment(seq, payload, missing, flags, ts, index)
        if self.deferred:
            self._release_deferred(index, ts, False)
        if self.phase is PROBING and (payload or stream.finished):
            self._detect()

    # probing

    def _detect(self) -> None:
        """Decide which side is the client on an unknown port, or that this is not Kafka."""
        if self.port_side is not None:
            self._orient(self.port_side)
            return
        max_size = self.shared.limits.max_frame_size
        probes = self.probes
        if self.initiator is not None and not probes[self.initiator].mid_stream:
            head = probes[self.initiator].joined()
            verdict = plausible_request(head, 0, max_size, self.shared.catalog) if head else None
            if verdict is False:
                verdict = kafka_client_hello(head)  # TLS on any port
            if verdict:
                self._orient(self.initiator)
            elif verdict is False or any(probe.held > PROBE_LIMIT for probe in probes):
                self._ignore()
            return
        found = [find_request(probe.last_run(), 0, max_size, self.shared.catalog)[0] is not None for probe in probes]
        if found[0] != found[1]:
            self._orient(0 if found[0] else 1)
        elif found[0]:
            ports = (self.ends[0][1], self.ends[1][1])
            self._orient(0 if ports[1] < ports[0] else 1)
        elif any(probe.held > PROBE_LIMIT for probe in probes) or all(stream.finished for stream in self.streams):
            self._ignore()

    def _ignore(self) -> None:
        side_streams = self.shared.side_streams
        if side_streams is not None and side_streams(self.streams, self.ends):  # its probes replayed into sinks of its own
            self._move(SIDE)
            self.probes = ()
            return
        self._move(IGNORED)
        self._release()

    def _orient(self, client_dir: int) -> None:
        self.client_dir = client_dir
        self.shared.grown += KAFKA_COST
        client, broker = self.ends[client_dir], self.ends[1 - client_dir]
        self.info = ConnectionInfo(self.id, Endpoint.from_packed(*client), Endpoint.from_packed(*broker))
        self._move(KAFKA)
        for notice in self.held_notices:
            self.shared.emit(Notice(notice.diagnostic, self.info, notice.ts, notice.packet))
        self.held_notices.clear()
        limits = self.shared.limits
        self.pairing = Pairing(limits.max_outstanding_requests, limits.max_outstanding_acks_zero)
        self.session = self.shared.new_session()
        requests = Framer(self._on_request, self._report, self._find_request, MIN_REQUEST, limits.max_frame_size, True)
        responses = Framer(self._on_response, self._report, self._find_response, MIN_RESPONSE, limits.max_frame_size, True)
        framers = (requests, responses) if client_dir == 0 else (responses, requests)
        shared = self.shared
        self.tls = TlsSwitch(self.streams, framers, client_dir, shared.tls_keys, self._report, self._tls_info, shared.tls_waiting)
        probes, self.probes = self.probes, ()
        for stream, probe in zip(self.streams, probes):  # each stream's sink is now a gate: TLS or not, its first bytes say
            if stream.started:
                stream.sink.start(stream.mid_stream)
            probe.replay(stream.sink)

    def _tls_info(self, tls: TlsInfo) -> None:
        assert self.info is not None
        self.info = replace(self.info, tls=tls)

    def _find_request(self, buf: bytearray, start: int) -> tuple[int | None, int]:
        return find_request(buf, start, self.shared.limits.max_frame_size, self.shared.catalog)

    def _find_response(self, buf: bytearray, start: int) -> tuple[int | None, int]:
        return find_response(buf, start, self.shared.limits.max_frame_size, self.pairing.correlations())

    def _report(self, diagnostic: Diagnostic, ts: int, index: int) -> None:
        if self.phase is IGNORED:
            return
        if self.phase is PROBING:
            if len(self.held_notices) < HELD_NOTICES:
                self.held_notices.append(Notice(diagnostic, None, ts, index))
            return
        self.shared.emit(Notice(diagnostic, self.info, ts, index))

    # frames

    def _on_request(self, frame: Frame) -> None:
        assert self.info is not None  # frames come from the framers, made with the info when the connection was oriented
        self.requests += 1
        diagnostics = _frame_diagnostics(frame) if frame.size != len(frame.data) else ()
        if self.phase is SASL:
            size = self.shared.limits.max_frame_size
            if plausible_request(_SIZE_PREFIX(frame.size) + frame.data[: REQUEST_PROBE + 256], 0, size, self.shared.catalog) is not True:
                token = self.shared.decode_request(new_message(frame, SASL_TOKEN, None, diagnostics), self.session, self.info)
                self.sasl_tokens.append(token)
                return
            self._sasl_phase(False)
        try:
            header = parse_request_header(frame.data, self.shared.catalog)
        except HeaderError as exc:
            diagnostic = Diagnostic("header.unreadable", str(exc), "error", "frame", exc.offset)
            self._exchange("unreadable", new_message(frame, None, None, diagnostics + (diagnostic,)), None)
            return
        if header.api_key == ApiKey.SASL_HANDSHAKE and header.api_version == 0:
            self._sasl_phase(True)
        request = self.shared.decode_request(new_message(frame, header, None, diagnostics), self.session, self.info)
        pushed = self.pairing.add(request, header.correlation_id, expects_response(header, frame.data))
        if not self.closing:
            self.shared.grown += REQUEST_COST + BODY_FACTOR * frame.size
        if pushed:
            self._settle(*pushed)

    def _on_response(self, frame: Frame) -> None:
        requests = self.streams[self.client_dir]
        ack = requests.peer_ack_seq  # the broker's last: an upper bound of what it had when it sent this response
        deferred = self.deferred
        if deferred or (ack is not None and ack != requests.next_seq and requests.behind(ack)):
            assert ack is not None  # deferring starts at an acknowledgement, and peer_ack_seq never goes back to None
            if deferred is None:
                deferred = self.deferred = deque()
            deferred.append((frame, ack, frame.last_packet, frame.ts))
            self.deferred_bytes += frame.size + 4 - frame.lost
            if len(deferred) > self.shared.limits.max_outstanding_requests:
                self._release_deferred(0, 0, True, 1)
            return
        self._response(frame)

    def _release_deferred(self, index: int, ts: int, force: bool, count: int | None = None) -> None:
        """Pair the responses whose request bytes have been handed on, or that waited long enough, in order."""
        limits = self.shared.limits
        deferred = self.deferred
        while deferred and count != 0:
            frame, ack, since, at = deferred[0]
            waited = index - since > limits.max_late_packets or ts - at > limits.max_late_ms * 1_000_000
            if not (force or waited or not self.streams[self.client_dir].behind(ack)):
                return
            deferred.popleft()
            self.deferred_bytes -= frame.size + 4 - frame.lost
            self._response(frame)
            count = None if count is None else count - 1

    def _sasl_phase(self, on: bool) -> None:
        """Enter or leave the raw SASL phase: tokens may be as short as the empty reply to PLAIN."""
        if on:
            self._move(SASL)
            self.sasl_tokens = deque()
        else:
            self._move(KAFKA)
            self._settle_tokens()
        assert self.tls is not None  # the framers sit behind the TLS gate, whether the stream turned out TLS or not
        requests, responses = self.tls.framers[self.client_dir], self.tls.framers[self.client_dir ^ 1]
        requests.min_size, responses.min_size = (0, 0) if on else (MIN_REQUEST, MIN_RESPONSE)

    def _settle_tokens(self) -> None:
        """The tokens of a SASL phase that ended with no reply for them."""
        tokens = self.sasl_tokens
        while tokens:
            self._settle(tokens.popleft(), True)

    def _response(self, frame: Frame) -> None:
        assert self.info is not None  # as in _on_request
        self.responses += 1
        diagnostics = _frame_diagnostics(frame) if frame.size != len(frame.data) else ()
        if self.phase is SASL and self.sasl_tokens:
            token = self.sasl_tokens.popleft()
            reply = self.shared.decode_response(new_message(frame, SASL_TOKEN, None, diagnostics), token, self.session, self.info)
            self._exchange(answered(token, reply), token, reply)
            return
        if len(frame.data) < 4:
            diagnostic = Diagnostic("header.unreadable", "the response is too short for a correlation id", "error", "frame", 0)
            self._exchange("orphan-response", None, new_message(frame, None, None, diagnostics + (diagnostic,)))
            return
        request, settled = self.pairing.match(INT32(frame.data, 0)[0])
        for entry in settled:
            self._settle(*entry)
        request_header: RequestHeader | None = request.header if request else None  # type: ignore[assignment]  # paired: its header was read
        try:
            header = parse_response_header(
                frame.data,
                request_header.api_key if request_header else None,
                request_header.api_version if request_header else None,
                self.shared.catalog,
            )
        except HeaderError as exc:
            diagnostics += (Diagnostic("header.unreadable", str(exc), "error", "frame", exc.offset),)
            header = None
        response = new_message(frame, header, None, diagnostics)
        if header is not None:
            response = self.shared.decode_response(response, request, self.session, self.info)
        self._exchange(answered(request, response) if request else "orphan-response", request, response)

    def _settle(self, request: Message, expects: bool) -> None:
        """A request that will get no response: the capture lost it, or it asked for none."""
        self.unanswered += expects
        self._exchange("unanswered" if expects else "no-response-expected", request, None)

    def _exchange(self, status: Status, request: Message | None, response: Message | None) -> None:
        shared = self.shared
        shared.counters.exchanges += 1
        number = shared.counters.exchanges
        queued = ahead = None
        if response is not None:
            if request is not None:
                queued = max(0, min(self.answered_ts, response.ts) - request.ts)
                ahead = self.answered_id if queued else None
            self.answered_ts, self.answered_id = response.ts, number
        shared.events.append(new_exchange(number, self.info, status, request, response, queued, ahead))

    # what it holds

    def _release(self) -> None:
        """An ended connection stays in the flow table until evicted: let go of what it holds."""
        self.held_notices.clear()
        for stream in self.streams:
            stream.release()
        for probe in self.probes:
            probe.finish()

    def buffered(self) -> int:
        """Bytes this connection holds in its buffers (the fuzzers check them against the global bound)."""
        total = 0
        for stream in self.streams:
            total += stream.pending_bytes + stream.sink.held
        return total + self.deferred_bytes

    def detach(self) -> None:
        """The dissector forgets this ended connection: break the cycles through its streams' callbacks, so its
        memory comes back at once rather than at the next full garbage collection (a SYN flood makes thousands)."""
        self.streams = ()
        if self.tls is not None:
            self.tls.detach()
            self.tls = None

    def priced(self) -> int:
        """What this connection costs in memory, priced: its own objects, every segment and buffered byte, every
        request waiting for its response with its decoded body, every response waiting for its request's bytes."""
        total = CONNECTION_COST + self.deferred_bytes + SEGMENT_COST * len(self.deferred or ())
        if self.phase is not PROBING and self.phase is not SIDE:
            total += KAFKA_COST
            for request, _ in self.pairing.outstanding or ():
                total += REQUEST_COST + BODY_FACTOR * request.frame.size
        for stream in self.streams:
            total += stream.pending_bytes + SEGMENT_COST * len(stream.pending or ()) + stream.sink.held
        for probe in self.probes:
            total += SEGMENT_COST * len(probe.items)
        return total

    # the end

    @property
    def finished(self) -> bool:
        """Both directions are over, and nothing waits for a segment that may still be captured late."""
        a, b = self.streams
        over = (a.finished and b.finished) or a.reset or b.reset
        return over and not (self.deferred or _waiting(a) or _waiting(b))

    def close(self, ended: Ending, ts: int) -> None:
        """End the connection as its phase says (`CLOSERS`); an ended one stays as it is."""
        closer = CLOSERS.get(self.phase)
        if closer is not None:
            self.closing = True
            closer(self, ended, ts)

    def _close_probing(self, ended: Ending, ts: int) -> None:
        """Its last bytes may still tell what it is: then it ends as that; otherwise it is counted, not told: EMPTY
        on a Kafka port (a SYN flood, a port scan), IGNORED elsewhere."""
        for stream in self.streams:
            stream.flush(ts)
        if any(probe.items for probe in self.probes) or (self.held_notices and self.port_side is not None):
            self._detect()
        if self.phase is PROBING:
            self._move(EMPTY if self.port_side is not None else IGNORED)
            self._release()
        elif not self.phase.over:  # Kafka, perhaps already in its SASL tokens: the bytes replayed may have said so
            self._close_kafka(ended, ts)

    def _close_side(self, ended: Ending, ts: int) -> None:
        """A connection another protocol's reader took: its last bytes go to that reader; it ends as not Kafka."""
        for stream in self.streams:
            stream.flush(ts)
            stream.sink.finish()
        self._move(IGNORED)
        self._release()

    def _close_kafka(self, ended: Ending, ts: int) -> None:
        """Flush what waits behind holes and hand on the last frames, settle every request still waiting, and tell the
        connection's end: CLOSED, or EMPTY when not a byte went either way."""
        for stream in self.streams:
            stream.flush(ts)
            stream.sink.finish()
        self._release_deferred(0, 0, True)
        if self.phase is SASL:
            self._settle_tokens()
        for entry in self.pairing.drain():
            self._settle(*entry)
        self._release()
        c, b = self.client_dir, 1 - self.client_dir
        client, broker = self.streams[c], self.streams[b]
        if not (client.bytes or broker.bytes or client.gaps or broker.gaps):
            self._move(EMPTY)  # a SYN flood or a port scan: counted, not told one by one
            return
        self._move(CLOSED)
        assert self.info is not None
        self.shared.emit(
            ConnectionEnd(
                self.info,
                ended,
                self.first_ts,
                self.last_ts,
                (self.packets[c], self.packets[b]),
                (client.bytes, broker.bytes),
                self.requests,
                self.responses,
                self.unanswered,
                client.gaps + broker.gaps,
                client.gap_bytes + broker.gap_bytes,
                client.retransmitted + broker.retransmitted,
                client.out_of_order + broker.out_of_order,
                client.mid_stream or broker.mid_stream,
                self.tls.session.totals() if self.tls and self.tls.session else None,
                None if self.closer is None else "client" if self.closer == c else "broker",
            )
        )


CLOSERS: dict[Phase, Callable[[Connection, Ending, int], None]] = {
    PROBING: Connection._close_probing,
    KAFKA: Connection._close_kafka,
    SASL: Connection._close_kafka,
    SIDE: Connection._close_side,
}
"""How a connection in each phase is closed; an ended one is not."""


SHOWN_HOLES = 4


def _waiting(stream: Reassembler) -> bool:
    """Bytes held behind a hole, or bytes the peer acknowledged that the capture has not shown yet."""
    return bool(stream.pending) or (stream.peer_ack_seq is not None and stream.behind(stream.peer_ack_seq))


def _frame_diagnostics(frame: Frame) -> tuple[Diagnostic, ...]:
    """A frame the capture holds only part of says so, and where its holes are."""
    holes = frame.holes()
    where = ", ".join(f"{end - start} at {start}" for start, end in holes[:SHOWN_HOLES])
    more = f" and {len(holes) - SHOWN_HOLES} more holes" if len(holes) > SHOWN_HOLES else ""
    return (
        Diagnostic(
            "frame.incomplete",
            f"{frame.lost} of the frame's {frame.size} bytes are missing from the capture ({where}{more})",
            "error",
            "frame",
            len(frame.data),
        ),
    )
