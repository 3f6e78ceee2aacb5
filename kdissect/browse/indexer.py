"""The index's pass: every exchange of the capture (or, live, as it is captured) made into the index's numbers,
on a worker thread; the doctor, the connections' totals and the groups' rebalances are fed on the way.

What the pass makes goes to the app as messages: the new rows in batches (`Indexed`, every REFRESH seconds), the
flows and the groups' lanes now and then, the findings, and `Done`. What it keeps (the decoder's state, the
doctor, the totals) only its own thread touches: another thread that needs some of it (a body opened, the live
findings so far, a live filter to follow) `ask`s, and the pass answers between two events.
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from time import monotonic
from typing import Any, TypeVar

from textual.message import Message

from kdissect.browse.charts import Lane, lanes
from kdissect.browse.flows import Flow, More, flows
from kdissect.browse.index import Batch, Row, Rows
from kdissect.browse.kept import Keeping, Learnt
from kdissect.browse.scan import events, exchange_at
from kdissect.decode.body import Body
from kdissect.decode.session import Session
from kdissect.diagnostic import Diagnostic
from kdissect.dissector import Options, make_decoder
from kdissect.doctor.engine import Doctor
from kdissect.doctor.finding import Finding
from kdissect.events import Exchange
from kdissect.events.damage import lost_codes
from kdissect.views.stats import Stats
from kdissect.views.summary import Summary

REFRESH = 0.1
"""Seconds between two batches."""
FIRST = 0.02
"""The first batch comes sooner: the first screen."""
SLOW = 2.0
"""Seconds between two sendings of what costs a walk over every connection or group (the flows' percentiles)."""
T = TypeVar("T")


class Indexer:
    """The index's pass; `run` on a worker thread, `ask` and `exchange` from any other."""

    class Indexed(Message):
        def __init__(self, batch: Batch) -> None:
            super().__init__()
            self.batch = batch

    class Flows(Message):
        def __init__(self, shown: tuple[tuple[Flow, ...], More | None]) -> None:
            super().__init__()
            self.rows, self.more = shown

    class Lanes(Message):
        def __init__(self, lanes: tuple[Lane, ...]) -> None:
            super().__init__()
            self.lanes = lanes

    class Findings(Message):
        """The doctor's findings: of the whole capture at the end, or live, of what was captured so far."""

        def __init__(self, findings: list[Finding]) -> None:
            super().__init__()
            self.findings = findings

    class Done(Message):
        """The pass has ended (the capture's end, a capture error, or live, the capture stopped)."""

        def __init__(self, failure: str | None, stopped: str) -> None:
            super().__init__()
            self.failure = failure
            self.stopped = stopped
            """Live: why the capture stopped."""

    def __init__(self, path: Path, options: Options, live: Any = None, keeping: Keeping | None = None) -> None:
        """`live`: a `browse.live.LiveFeed` whose packets are written to `path` as they are dissected; None to
        read the capture file at `path`; `keeping`: where a capture file's whole pass is kept (kept.py): the pass
        is served from it when an earlier browse kept one."""
        self.path = path
        self.live = live
        self.keeping = keeping if live is None else None
        self.loaded = False
        """The pass was served from what was kept."""
        self.findings: list[Finding] = []
        self._at_end: Learnt | None = None
        self._indexing: Callable[[Exchange], None] | None = None
        """Where each exchange goes to make `read`'s index of the file on the way (`Keeping.indexing`)."""
        self.damage: Counter[str] = Counter()
        """What the capture lost, by diagnostic code, while `read`'s index is made."""
        self.packets = 0
        self.options = replace(options, keep=None)
        """Every body is decoded: the list's groups and the doctor's rules read them, whatever a filter shows."""
        self.offsets: list[int] = []
        """File offsets of every CHECKPOINT-th packet (scan.py)."""
        self.rows = Rows()
        self.indexed = 0
        self.doctor = Doctor()
        self.summary = Summary()
        self.groups = Stats()
        """Fed the exchanges that name a group: its groups' rounds are the charts' lanes."""
        self.decoder = make_decoder(options)
        self.sessions: list[Session] = []
        """Each connection's decoder session (by connection id - 1: connections make theirs as they open)."""
        if self.decoder is not None:
            self.decoder.new_session = self._new_session  # type: ignore[method-assign]  # the pass keeps every connection's session
        self.following: tuple[Any, int] | None = None
        """Live: a filter and its generation, tested on every exchange indexed after it came."""
        self._matched: list[int] = []
        self._span_decoder: Any = None
        self._post: Callable[[Message], Any] = lambda message: None
        self._asks: list[tuple[Callable[[], Any], Future[Any]]] = []
        self._asking = threading.Lock()
        self.ended = threading.Event()
        """Set when the pass has stopped reading (a live capture's file and socket are then free to close); a
        question is answered on the pass's thread before, on the asker's after."""
        self._due = monotonic() + FIRST
        self._slow_due = 0.0
        self._progress: tuple[int, int | None] = (0, None)
        """How far the last batch said the pass was: a batch with no rows is sent when that changes."""
        self._seen = ((-1, -1), -1)
        """What the flows and lanes last sent were made of."""
        self._named = 0
        """Exchanges that named a group."""

    def run(self, stop: threading.Event, post: Callable[[Message], Any]) -> None:
        """The pass, until the capture ends or `stop`; `post` sends a message to the app (from this thread)."""
        self._post = post
        if self._served():
            return
        if self.live is not None:
            passed = self.live.events(self.options, self.offsets, self.decoder, stop, self._tick)
        else:
            passed = events(self.path, self.options, self.offsets, self.decoder, self._ended)
        failure = findings = None
        try:
            for event in passed:
                if stop.is_set():
                    break
                self.doctor.add(event)
                if isinstance(event, Exchange):
                    self._add(event)
                elif self._indexing is not None:
                    self.damage.update(lost_codes(event))
                self.summary.add(event)
                self._tick()
        except Exception as exc:  # a capture error ends the pass; what was indexed stays browsable
            failure = str(exc)
        if not stop.is_set():
            findings = self.doctor.findings()  # after a failure too: on what was read
        self._stop_answering()
        if findings is not None:
            self._finish(findings, failure)

    def _finish(self, findings: list[Finding], failure: str | None) -> None:
        """The pass ended at the capture's end or at an error: what it made is sent, and `read`'s index of a file
        read whole is kept."""
        self.findings = findings
        if self.keeping is not None and self._indexing is not None and failure is None:
            self.keeping.indexed(self.packets, dict(self.damage))
        self._send(monotonic(), final=True)
        self._post(self.Findings(findings))
        live = self.live
        self._post(self.Done(failure or (live.failure if live is not None else None), live.stopped if live is not None else ""))

    def _served(self) -> bool:
        """Whether the pass is served from what an earlier browse kept; when it is not, whether it makes `read`'s
        index of the file on the way is the keeping's to say."""
        keeping = self.keeping
        if keeping is None:
            return False
        found = keeping.load()
        if found is not None:
            self._serve(*found)
            return True
        self._indexing = keeping.indexing(self.decoder, self.offsets, self.sessions)
        return False

    def _ended(self, packets: int, diagnostics: list[Diagnostic]) -> None:
        """The file's end: its packets, and what it lost of itself (a cut last record, say)."""
        self.packets = packets
        self.damage.update(d.code for d in diagnostics if d.lost)

    def _add(self, exchange: Exchange) -> None:
        self.rows.add(exchange)
        if self._indexing is not None:
            self._indexing(exchange)
            self.damage.update(lost_codes(exchange))
        self.indexed += 1
        request = exchange.request
        if request is not None and isinstance(request.body, Body) and request.body.groups:
            self.groups.add(exchange)
            self._named += 1
        following = self.following
        if following is not None and following[0].matches(exchange):
            self._matched.append(exchange.id - 1)

    def _tick(self) -> None:
        """Between two events (and, live, between two turns of the capture): answer what was asked, and send
        what was made when it is time."""
        if self._asks:
            self._answer()
        now = monotonic()
        if now >= self._due:
            self._send(now)

    def _send(self, now: float, final: bool = False) -> None:
        self._due = now + REFRESH
        following = self.following
        matched = None if following is None else (following[1], self._matched)
        read = self.offsets[-1] if self.offsets else 0
        captured = self.live.capture.stats.packets if self.live is not None else None
        if len(self.rows) or self._matched or (read, captured) != self._progress:
            self._matched = []
            self._progress = (read, captured)
            self._post(self.Indexed(self.rows.take(read, captured, matched)))
        if final or now >= self._slow_due:
            self._slow_due = now + SLOW
            seen = ((len(self.summary.flows), self.summary.exchanges), self._named)
            if seen[0] != self._seen[0]:
                self._post(self.Flows(flows(self.summary)))
            if seen[1] != self._seen[1]:
                self._post(self.Lanes(lanes(self.groups)))
            self._seen = seen

    def _serve(self, batch: Batch, learnt: Learnt) -> None:
        """The pass as an earlier browse kept it: what it learnt taken up, what it sent sent again."""
        self.offsets[:] = learnt.offsets
        if self.decoder is not None:
            self.decoder.topic_names = dict(learnt.topic_names)
        self.sessions = learnt.sessions
        self.indexed = len(batch.rows)
        self.findings = learnt.findings
        self._at_end = learnt
        self.loaded = True
        self._stop_answering()
        for message in (self.Indexed(batch), self.Flows(learnt.flows), self.Lanes(learnt.lanes), self.Findings(learnt.findings)):
            self._post(message)
        self._post(self.Done(None, ""))

    def learnt(self) -> Learnt:
        """What the pass learnt (or was served), once it has ended: nothing changes it then."""
        if self._at_end is None:
            topic_names = dict(self.decoder.topic_names) if self.decoder is not None else {}
            self._at_end = Learnt(flows(self.summary), lanes(self.groups), self.findings, list(self.offsets), topic_names, self.sessions)
        return self._at_end

    # -- questions from other threads ---------------------------------------------------------------------------

    def ask(self, question: Callable[[], T]) -> Future[T]:
        """`question` answered on the pass's thread between two events, or at once on this one when the pass has
        ended (nothing changes what it holds then)."""
        future: Future[T] = Future()
        with self._asking:
            if not self.ended.is_set():
                self._asks.append((question, future))
                return future
        _settle(question, future)
        return future

    def _answer(self) -> None:
        with self._asking:
            asks, self._asks = self._asks, []
        for question, future in asks:
            _settle(question, future)

    def _stop_answering(self) -> None:
        with self._asking:
            self.ended.set()
        self._answer()

    def follow(self, wanted: Any, generation: int) -> Future[int]:
        """Live: test `wanted` (None: nothing) on every exchange indexed from now on, its matches sent with the
        batches; the future tells how many exchanges were indexed before, which the filter's own pass covers."""

        def start() -> int:
            self.following = None if wanted is None else (wanted, generation)
            self._matched = []
            return self.indexed

        return self.ask(start)

    def findings_so_far(self) -> list[Finding]:
        """Live: the doctor's findings of what was captured so far. The rules settle what is still open when they
        are asked (a transaction, say), so they judge a copy."""
        return copy.deepcopy(self.doctor).findings()

    def exchange(self, row: Row) -> Exchange | None:
        """The exchange of `row` decoded again from the file, with spans, as it was decoded in the pass; called on
        the detail pane's worker, one at a time. What the pass learnt before it (topic names of topic ids, the
        connection's session, the checkpoints) is copied on the pass's thread."""
        topic_names, known, offsets = self.ask(lambda: self._learnt(row.connection.id)).result()
        if self._span_decoder is None:
            self._span_decoder = make_decoder(replace(self.options, spans=True, decode=True))
        decoder = self._span_decoder
        if topic_names is not None:
            decoder.topic_names = topic_names
        decoder.new_session = lambda: copy.copy(known)
        found = exchange_at(self.path, self.options, offsets, row, decoder)
        return None if found is None else replace(found, id=row.id, connection=row.connection, ahead=row.ahead)

    def _learnt(self, connection: int) -> tuple[dict[Any, str] | None, Session, list[int]]:
        topic_names = None if self.decoder is None else dict(self.decoder.topic_names)
        known = copy.copy(self.sessions[connection - 1]) if connection <= len(self.sessions) else Session()
        return topic_names, known, list(self.offsets)

    def _new_session(self) -> Session:
        session = Session()
        self.sessions.append(session)
        return session


def _settle(question: Callable[[], T], future: Future[T]) -> None:
    try:
        future.set_result(question())
    except Exception as exc:  # the asker's to handle
        future.set_exception(exc)
