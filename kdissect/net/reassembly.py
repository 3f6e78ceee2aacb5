"""One direction of a TCP connection: segments in capture order to a byte stream with its gaps named.

In-order segments go straight to the sink; segments that arrive early wait, within a byte bound, for the hole
before them; retransmissions are dropped (the first copy wins) and compared with what was delivered; bytes
that never appear become a gap at their stream offset, never zeros. Sequence numbers wrap modulo 2**32.

A hole the peer has acknowledged past was sent: the capture lost it, or captured it late. It is held open for
a bounded window (`Patience`) before it is declared a gap; bytes that arrive after that are offered to the
sink (`fill`), which uses them while the frame they belong to is still open, and are reported either way.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Callable, NamedTuple, Protocol

from kdissect.diagnostic import Diagnostic, Severity
from kdissect.net.tcp import FIN, RST, SYN

MOD = 0xFFFFFFFF
HALF = 1 << 31
RECENT_SEGMENTS = 32
"""Delivered segments remembered to check retransmissions against: a bounded deque costs one append each."""


class StreamSink(Protocol):
    """Where a direction's bytes go, in stream order: a probe while nobody knows what the connection carries, then the
    TLS gate, a Kafka framer or a TLS direction. Each takes every call below; what it holds is priced by `held`."""

    def start(self, mid_stream: bool) -> None:
        """The stream began: at its first byte, or (`mid_stream`) somewhere the capture joined it."""

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        """The stream's next bytes."""

    def gap(self, length: int, ts: int) -> None:
        """`length` bytes the capture does not hold come next."""

    def fill(self, offset: int, data: bytes) -> int:
        """Bytes at stream `offset`, inside a gap already told, that came late; returns how many it could use."""

    def finish(self) -> None:
        """The stream is over: settle what is held."""

    @property
    def held(self) -> int:
        """Bytes held, waiting for more."""


class Patience(NamedTuple):
    """How long an acknowledged hole is held open: packets (capture-wide numbers), bytes held behind it, time (ns)."""

    packets: int
    bytes: int
    ns: int


NO_PATIENCE = Patience(0, 0, 0)


Report = Callable[[Diagnostic, int, int], None]
"""Called with (diagnostic, timestamp, packet index)."""


class Reassembler:
    """Reassembles one direction. Offsets count bytes from the first byte after the SYN (or the first seen)."""

    __slots__ = (
        "sink",
        "report",
        "max_buffer",
        "reorder",
        "started",
        "mid_stream",
        "next_seq",
        "offset",
        "pending",
        "pending_heap",
        "pending_bytes",
        "recent",
        "fin_offset",
        "reset",
        "bytes",
        "retransmitted",
        "out_of_order",
        "gaps",
        "gap_bytes",
        "peer_ack_seq",
        "isn",
        "patience",
        "acked_since",
        "lost",
    )

    def __init__(self, sink: StreamSink, report: Report, max_buffer: int, reorder: bool = True, patience: Patience = NO_PATIENCE) -> None:
        self.sink = sink
        self.report = report
        self.max_buffer = max_buffer
        self.reorder = reorder
        self.patience = patience
        self.acked_since: tuple[int, int, int] | None = None
        """(stream offset of the hole, packet index, ts) when the peer was first seen acknowledging past it."""
        self.lost: deque[tuple[int, int]] | None = None
        """Stream spans recently declared gaps: bytes that come for them later are late, not retransmitted. Made at
        the first gap, like `recent`."""
        self.started = False
        self.mid_stream = False
        """No SYN was seen: the first byte captured may sit in the middle of a frame."""
        self.isn: int | None = None
        self.next_seq = 0
        self.offset = 0
        self.pending: dict[int, tuple[bytes, int, int, int]] | None = None
        """Segments held beyond a hole, by stream offset: (payload, bytes missing after it, ts, packet index). Made,
        with `pending_heap` (their offsets), at the first one: most streams never hold one."""
        self.pending_heap: list[int] | None = None
        self.pending_bytes = 0
        self.recent: deque[tuple[int, bytes]] | None = None
        """Made at the first byte: a deque costs 760 bytes, and most connections of a SYN flood never carry one."""
        self.fin_offset: int | None = None
        self.reset = False
        self.peer_ack_seq: int | None = None
        """The highest sequence number the peer acknowledged, as sent: what the capture must have lost before it."""
        self.bytes = 0
        self.retransmitted = 0
        self.out_of_order = 0
        self.gaps = 0
        self.gap_bytes = 0

    def segment(self, seq: int, payload: bytes, missing: int, flags: int, ts: int, index: int) -> None:
        if seq == self.next_seq and not missing and not flags & 0x07 and self.started:
            if payload:
                self._deliver(payload, ts, index)
                if self.pending:
                    self._drain(ts)
            return
        if flags & SYN:
            if not self.started:
                self.isn = seq
                self.next_seq = (seq + 1) & MOD
                self.started = True
                self.sink.start(False)
            seq = (seq + 1) & MOD
        elif not self.started:
            if not payload and not missing and not flags & FIN:
                if flags & RST:  # a refused connection: nothing more will come
                    self.reset = True
                return
            self.next_seq = seq
            self.isn = (seq - 1) & MOD  # a SYN reordered behind this first byte is then its own, not a new connection
            self.started = True
            self.mid_stream = True
            self.sink.start(True)
        length = len(payload) + missing
        if length:
            delta = (seq - self.next_seq) & MOD
            if delta == 0:
                self._deliver(payload, ts, index)
                if missing:
                    self._gap(missing, ts, index, "the capture's snapshot length cut")
                if self.pending:
                    self._drain(ts)
            elif delta < HALF:
                self._early(self.offset + delta, payload, missing, ts, index)
            else:
                self._behind(HALF * 2 - delta, payload, missing, ts, index)
        if flags & FIN and self.fin_offset is None:
            delta = (seq + length - self.next_seq) & MOD
            self.fin_offset = self.offset + delta if delta < HALF else self.offset
        if flags & RST:
            self.reset = True

    @property
    def finished(self) -> bool:
        """Reset, or every byte up to the FIN delivered: nothing more will come."""
        return self.reset or (self.fin_offset is not None and self.offset >= self.fin_offset)

    def _deliver(self, payload: bytes, ts: int, index: int) -> None:
        n = len(payload)
        recent = self.recent
        if recent is None:
            recent = self.recent = deque(maxlen=RECENT_SEGMENTS)
        recent.append((self.offset, payload))
        self.offset += n
        self.next_seq = (self.next_seq + n) & MOD
        self.bytes += n
        self.sink.data(payload, ts, index)

    def _gap(self, length: int, ts: int, index: int, cause: str) -> None:
        self.report(
            Diagnostic(
                "tcp.gap",
                f"{length} bytes missing: {cause}",
                "error",
                "stream",
                self.offset,
            ),
            ts,
            index,
        )
        self.gaps += 1
        self.gap_bytes += length
        lost = self.lost
        if lost is None:
            lost = self.lost = deque(maxlen=RECENT_SEGMENTS)
        lost.append((self.offset, self.offset + length))
        self.offset += length
        self.next_seq = (self.next_seq + length) & MOD
        if self.recent is not None:
            self.recent.clear()
        self.sink.gap(length, ts)

    def _early(self, at: int, payload: bytes, missing: int, ts: int, index: int) -> None:
        """A segment beyond the next expected byte: hold it until the hole fills, or call the hole a gap."""
        self.out_of_order += 1
        pending, heap = self.pending, self.pending_heap
        if pending is None or heap is None:
            pending, heap = self.pending, self.pending_heap = {}, []
        if at in pending:
            self._compare_pending(pending, at, payload, ts, index)  # may grow what is held: the bound below still applies
        else:
            pending[at] = (payload, missing, ts, index)
            heapq.heappush(heap, at)
            self.pending_bytes += len(payload)
        if not self.reorder:
            self._gap(at - self.offset, ts, index, "not captured (reordering is off)")
            self._drain(ts)
            return
        while self.pending_bytes > self.max_buffer:
            self._gap(heap[0] - self.offset, ts, index, "never captured (buffer limit reached)")
            self._drain(ts)
        self._acked_holes(ts, index)

    def _acked_holes(self, ts: int, index: int) -> None:
        """Holes the peer has acknowledged past were sent: once they have waited out the patience window, the
        capture lost them."""
        ack = self.peer_ack_seq
        if ack is None or not self.started:
            return
        delta = (ack - self.next_seq) & MOD
        if delta >= HALF:
            return
        acked = self.offset + delta
        heap = self.pending_heap
        while heap and acked > heap[0]:
            since = self.acked_since
            if since is None or since[0] != self.offset:
                self.acked_since = since = (self.offset, index, ts)
            patience = self.patience
            if index - since[1] <= patience.packets and ts - since[2] <= patience.ns and self.pending_bytes <= patience.bytes:
                return
            self._gap(heap[0] - self.offset, ts, index, "acknowledged by the peer but never captured")
            self._drain(ts)
            self.acked_since = (self.offset, since[1], since[2])  # the holes after it were acknowledged as long ago

    def _behind(self, behind: int, payload: bytes, missing: int, ts: int, index: int) -> None:
        """A segment starting before the next expected byte: a retransmission, whole or overlapping."""
        if behind == 1 and len(payload) == 1 and not missing:
            return  # a keep-alive probe: one byte of no meaning just before the next expected
        start = self.offset - behind
        old = min(behind, len(payload))
        lost = self.lost
        late = self._late(lost, start, payload[:old], ts, index) if lost else 0
        self.retransmitted += old - late
        self._compare_recent(start, payload[:old], ts, index)
        if behind < len(payload) + missing:
            if old < len(payload):
                self._deliver(payload[old:], ts, index)
            if missing:
                self._gap(missing - max(0, behind - len(payload)), ts, index, "the capture's snapshot length cut")
            if self.pending:
                self._drain(ts)

    def _late(self, lost: deque[tuple[int, int]], start: int, data: bytes, ts: int, index: int) -> int:
        """Bytes of spans already declared lost: offered to the sink, told, and no longer lost. Returns how many."""
        end = start + len(data)
        late = 0
        for lo, hi in list(lost):
            a, b = max(lo, start), min(hi, end)
            if a >= b:
                continue
            lost.remove((lo, hi))
            lost.extend(span for span in ((lo, a), (b, hi)) if span[0] < span[1])
            used = self.sink.fill(a, data[a - start : b - start])
            self.gap_bytes -= used
            late += b - a
            severity: Severity
            if used == b - a:
                message, severity = f"{b - a} bytes declared missing arrived late and filled their hole", "note"
            else:
                message = f"{b - a} bytes declared missing arrived late, after the frame they belong to was handed on"
                message += f"; {b - a - used} could not be used"
                severity = "warning"
            self.report(Diagnostic("tcp.late-segment", message, severity, "stream", a), ts, index)
        return late

    def _compare_recent(self, start: int, data: bytes, ts: int, index: int) -> None:
        end = start + len(data)
        first = None
        for at, chunk in reversed(self.recent or ()):  # newest first; the earliest difference is the one told
            if at + len(chunk) <= start:
                break
            lo, hi = max(at, start), min(at + len(chunk), end)
            if lo < hi and chunk[lo - at : hi - at] != data[lo - start : hi - start]:
                first = lo + _first_difference(chunk[lo - at : hi - at], data[lo - start : hi - start])
        if first is not None:
            self._differs(first, ts, index)

    def _compare_pending(self, pending: dict[int, tuple[bytes, int, int, int]], at: int, payload: bytes, ts: int, index: int) -> None:
        held, missing, first_ts, first_index = pending[at]
        n = min(len(held), len(payload))
        if held[:n] != payload[:n]:
            self._differs(at + _first_difference(held[:n], payload[:n]), ts, index)
        if len(payload) > len(held):
            self.pending_bytes += len(payload) - len(held)
            pending[at] = (held + payload[len(held) :], missing, first_ts, first_index)

    def _differs(self, offset: int, ts: int, index: int) -> None:
        self.report(
            Diagnostic(
                "tcp.retransmission-differs",
                "a retransmitted segment carries different bytes; the first copy was kept",
                "warning",
                "stream",
                offset,
            ),
            ts,
            index,
        )

    def _drain(self, ts: int) -> None:
        """Deliver held segments that the stream has now reached."""
        pending, heap = self.pending, self.pending_heap
        if pending is None or heap is None:
            return
        while heap:
            at = heap[0]
            if at > self.offset:
                return
            heapq.heappop(heap)
            payload, missing, seg_ts, index = pending.pop(at)
            self.pending_bytes -= len(payload)
            behind = self.offset - at
            if behind:
                self._behind(behind, payload, missing, seg_ts, index)
            else:
                self._deliver(payload, seg_ts, index)
                if missing:
                    self._gap(missing, seg_ts, index, "the capture's snapshot length cut")

    def acknowledged(self, ack: int, ts: int, index: int) -> None:
        """The peer acknowledged up to `ack`: bytes before it that we hold no copy of were lost by the capture.

        Called per packet, so it only stores the number unless segments are waiting behind a hole.
        """
        self.peer_ack_seq = ack
        if self.pending:
            self._acked_holes(ts, index)

    def behind(self, ack: int) -> bool:
        """Whether the peer acknowledged bytes of this direction that were not handed on yet: held behind a hole,
        captured late, or lost. What the peer sent after acknowledging them came after them on the wire."""
        if not self.started:
            return False
        delta = (ack - self.next_seq) & MOD
        if delta == 0 or delta >= HALF:
            return False
        return self.fin_offset is None or self.fin_offset > self.offset  # an acknowledged FIN is no byte

    def release(self) -> None:
        """The stream is over: drop the bytes kept for comparisons and anything still held."""
        self.recent = self.lost = None
        self.pending = self.pending_heap = None
        self.pending_bytes = 0

    def flush(self, ts: int) -> None:
        """The stream ends here: whatever still waits behind a hole is delivered after a gap."""
        heap = self.pending_heap
        while heap:
            hole = heap[0] - self.offset
            if hole > 0:
                since = self.acked_since
                if since is not None and since[0] == self.offset:  # told where the peer first acknowledged past it
                    self._gap(hole, since[2], since[1], "acknowledged by the peer but never captured")
                else:
                    self._gap(hole, ts, 0, "never captured")
            self._drain(ts)
        if self.fin_offset is not None and self.fin_offset > self.offset:
            self._gap(self.fin_offset - self.offset, ts, 0, "never captured before the FIN")


def _first_difference(a: bytes, b: bytes) -> int:
    """Index of the first byte where two unequal byte strings of the same length differ."""
    return next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
