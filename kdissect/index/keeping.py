"""The index made on the way: a full `read` of a capture file hands each exchange to `Keeper.add`, and the cache
keeps what it made when the run read the whole file (a run stopped early, or one that failed, keeps nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, get_args

from kdissect.browse.index import NONE, SASL_TOKEN, flags_of
from kdissect.browse.scan import checkpointed
from kdissect.decode.session import Session
from kdissect.events import ConnectionInfo, Exchange, Status
from kdissect.index import entry
from kdissect.index.entry import NO_HEADER, CaptureIndex, Columns

STATUS_NUMBERS = {status: n for n, status in enumerate(get_args(Status))}
"""A status's number in the index: its place in `events.Status` (answer.py reads it back the same way)."""
BATCH = 4096
"""Rows gathered before they go into the columns."""


class Keeper:
    """Makes the index of one capture file as a command reads it; `decoder` learns on the way what `save` keeps."""

    def __init__(self, capture: str, options: Any, decoder: Any, sessions: list[Session] | None = None) -> None:
        """`sessions`: the connections' sessions as the pass that drives `decoder` keeps them (browse's); None to
        keep them here."""
        self.capture = capture
        self.options = options
        self.decoder = decoder
        self.columns = Columns()
        self.offsets: list[int] = []
        self.connections: dict[int, ConnectionInfo] = {}
        self.tls: set[int] = set()
        self.starts: dict[int, int] = {}
        self._clients: dict[str | None, int] = {}
        """Client ids by their number; None (a header without one, v0) apart from an empty client id."""
        self.sessions: list[Session] = [] if sessions is None else sessions
        self._rows: list[tuple[int, ...]] = []
        if decoder is not None and sessions is None:
            decoder.new_session = self._new_session

    def packets(self, feed: Iterator[Any]) -> Iterator[Any]:
        """The file's packets, their checkpoints noted on the way."""
        return checkpointed(feed, self.offsets)

    def take(self, event: Any) -> None:
        """An event of the run: an exchange, or one another process decoded (`views.sink.Settled`), is indexed."""
        exchange = event if type(event) is Exchange else getattr(event, "exchange", None)
        if type(exchange) is Exchange:
            self.add(exchange)

    def add(self, exchange: Exchange) -> None:
        """One exchange's numbers, gathered as a row; every BATCH rows go into the columns at once (a row is a
        tuple for a moment, a few bytes in an array for good)."""
        info = exchange.connection
        if info.id not in self.connections:
            self.connections[info.id] = info
            if info.tls is not None:
                self.tls.add(info.id)
        request, response = exchange.request, exchange.response
        header = exchange.request_header
        client = header.client_id if header is not None else None
        number = self._clients.get(client)
        if number is None:
            number = self._clients[client] = len(self._clients)
        first = (request or response).frame  # type: ignore[union-attr]  # an exchange has a side
        last = (response or request).frame  # type: ignore[union-attr]
        if first.first_packet < self.starts.get(info.id, first.first_packet + 1):
            self.starts[info.id] = first.first_packet
        correlation = exchange.correlation_id
        queued = exchange.queued
        self._rows.append(
            (
                first.ts,
                last.ts - first.ts if request and response else NONE,
                NONE if correlation is None else correlation,
                first.first_packet,
                last.last_packet,
                NONE if queued is None else queued,
                request.frame.offset if request else NONE,
                response.frame.offset if response else NONE,
                info.id,
                number,
                exchange.ahead or 0,
                (SASL_TOKEN if exchange.sasl_token else NO_HEADER) if header is None else header.api_key,
                -1 if header is None else header.api_version,
                flags_of(exchange),
                STATUS_NUMBERS[exchange.status],
            )
        )
        if len(self._rows) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        for column, values in zip(self.columns.named().values(), zip(*self._rows)):
            column.extend(values)
        self._rows.clear()

    def save(self, packets: int, damage: dict[str, int], registry: bool) -> None:
        """Keep the index: the run read every packet of the file, `packets` of them; `registry`: it met the
        capture's own schema registry."""
        self._flush()
        topic_names = dict(getattr(self.decoder, "topic_names", None) or {})
        sessions = [s.state() for s in self.sessions]
        index = CaptureIndex(
            self.columns,
            list(self._clients),
            self.connections,
            frozenset(self.tls),
            self.starts,
            self.offsets,
            packets,
            {str(k): v for k, v in topic_names.items()},
            sessions,
            dict(damage),
            registry,
        )
        entry.save(self.capture, self.options, index)

    def _new_session(self) -> Session:
        session = Session()
        self.sessions.append(session)
        return session
