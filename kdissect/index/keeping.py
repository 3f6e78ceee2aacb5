"""The index made on the way: a full `read` of a capture file hands each exchange to `Keeper.add`, and the cache
keeps what it made when the run read the whole file (a run stopped early, or one that failed, keeps nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, get_args

from kdissect.browse.scan import checkpointed
from kdissect.decode.session import Session
from kdissect.events import ConnectionInfo, Exchange, Status
from kdissect.index import entry
from kdissect.index.entry import CUT, NO_HEADER, NONE, REQUEST, RESPONSE, SASL_TOKEN, CaptureIndex, Columns

STATUSES: tuple[str, ...] = get_args(Status)
EARLY_CUT = frozenset({"frame.incomplete", "header.unreadable"})
"""The diagnostics that make an exchange malformed before any body is decoded: what the early verdict sees."""


class Keeper:
    """Makes the index of one capture file as a command reads it; `decoder` learns on the way what `save` keeps."""

    def __init__(self, capture: str, options: Any, decoder: Any) -> None:
        self.capture = capture
        self.options = options
        self.decoder = decoder
        self.columns = Columns()
        self.offsets: list[int] = []
        self.connections: dict[int, ConnectionInfo] = {}
        self.tls: set[int] = set()
        self.starts: dict[int, int] = {}
        self._clients: dict[str, int] = {}
        self.sessions: list[Session] = []
        if decoder is not None:
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
        c = self.columns
        info = exchange.connection
        if info.id not in self.connections:
            self.connections[info.id] = info
        if info.tls is not None:
            self.tls.add(info.id)
        request, response = exchange.request, exchange.response
        header = exchange.request_header
        flags = (REQUEST if request else 0) | (RESPONSE if response else 0)
        if any(d.code in EARLY_CUT for m in (request, response) if m is not None for d in m.diagnostics):
            flags |= CUT
        client = exchange.client_id or ""
        number = self._clients.get(client)
        if number is None:
            number = self._clients[client] = len(self._clients)
        first = (request or response).frame.first_packet  # type: ignore[union-attr]  # an exchange has a side
        last = (response or request).frame.last_packet  # type: ignore[union-attr]
        if first < self.starts.get(info.id, first + 1):
            self.starts[info.id] = first
        c.ts.append(exchange.ts)
        c.latency.append(NONE if exchange.latency is None else exchange.latency)
        c.correlation.append(NONE if exchange.correlation_id is None else exchange.correlation_id)
        c.first.append(first)
        c.last.append(last)
        c.queued.append(NONE if exchange.queued is None else exchange.queued)
        c.request_offset.append(request.frame.offset if request else NONE)
        c.response_offset.append(response.frame.offset if response else NONE)
        c.connection.append(info.id)
        c.client.append(number)
        c.ahead.append(exchange.ahead or 0)
        c.api.append((SASL_TOKEN if exchange.sasl_token else NO_HEADER) if header is None else header.api_key)
        c.version.append(-1 if header is None else header.api_version)
        c.flags.append(flags)
        c.status.append(STATUSES.index(exchange.status))

    def save(self, packets: int, damage: dict[str, int], registry: bool) -> None:
        """Keep the index: the run read every packet of the file, `packets` of them; `registry`: it met the
        capture's own schema registry."""
        topic_names = dict(getattr(self.decoder, "topic_names", None) or {})
        sessions = [(s.sasl_mechanism, dict(s.protocol_types), dict(s.protocol_names)) for s in self.sessions]
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
