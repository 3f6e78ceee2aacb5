"""The compact index of a capture's exchanges: a few numbers per exchange in typed arrays, filled by a background
pass, so a million exchanges cost tens of megabytes and no decoded body stays in memory.

Strings that repeat (client ids, error lists, diagnostic codes, groups) are interned: the arrays hold their number.
"""

from __future__ import annotations

import copy
import threading
from array import array
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar, get_args

from kdissect.browse.scan import events, exchange_at
from kdissect.decode.body import Body
from kdissect.decode.session import Session
from kdissect.dissector import Options, make_decoder
from kdissect.doctor.engine import Doctor
from kdissect.doctor.finding import Finding
from kdissect.events import ConnectionInfo, Exchange, Status
from kdissect.views.stats import Stats
from kdissect.views.summary import Summary, exchange_errors

NONE = -(1 << 62)
"""Stands for a missing number in the integer columns."""
STATUSES: tuple[str, ...] = get_args(Status)
T = TypeVar("T")


class Interned(Generic[T]):
    """Values by number, each stored once."""

    def __init__(self) -> None:
        self.values: list[T] = []
        self._numbers: dict[T, int] = {}

    def number(self, value: T) -> int:
        found = self._numbers.get(value)
        if found is None:
            found = self._numbers[value] = len(self.values)
            self.values.append(value)
        return found


@dataclass(frozen=True, slots=True)
class Row:
    """One exchange as the list shows it, made from the index when a line is drawn."""

    id: int
    ts: int
    completed: int
    """When the response came (the request, without one): the list's time column."""
    connection: ConnectionInfo
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    client_id: str
    latency: int | None
    status: str
    errors: tuple[int, ...]
    diagnostics: tuple[str, ...]
    assumed: int | None
    groups: tuple[str, ...]
    first_packet: int
    last_packet: int
    api_name: str | None
    """The API's name in the run's catalogue, as the exchange's header had it."""

    @property
    def flagged(self) -> bool:
        """What n and N jump to: an error code or a diagnostic."""
        return bool(self.errors or self.diagnostics)


class Index:
    """Built by `run` (on a worker thread); read by the app at any time, under `lock`."""

    def __init__(self, path: Path, options: Options, live: Any = None) -> None:
        """`live`: a `browse.live.LiveFeed` whose packets are written to `path` as they are dissected; None to
        read the capture file at `path`."""
        self.path = path
        self.live = live
        self.options = replace(options, keep=None)
        """Every body is decoded: the list's groups and the doctor's rules read them, whatever a filter shows."""
        self.lock = threading.Lock()
        self.summary = Summary()
        self.stats = Stats()
        self.connections: dict[int, ConnectionInfo] = {}
        self.offsets: list[int] = []
        """File offsets of every CHECKPOINT-th packet (scan.py)."""
        self.done = False
        self.failure: str | None = None
        self.doctor = Doctor()
        self.findings: list[Finding] | None = None
        """The doctor's findings, once the pass has seen every event: its rules judge the capture as a whole. A
        live capture has no end to wait for: there they are the findings so far, taken when `findings_wanted`."""
        self.findings_wanted = False
        self.following: tuple[Any, int, list[int]] | None = None
        """Live: a filter, the last exchange id its pass over the file looked at, and the list its matches go to:
        the exchanges captured after that pass are tested here as they come."""
        self.decoder = make_decoder(options)
        self.sessions: list[Any] = []
        """Each connection's decoder session (by connection id - 1: connections make theirs as they open)."""
        if self.decoder is not None:
            self.decoder.new_session = self._new_session
        self._span_decoder: Any = None
        self._ts, self._completed, self._latency, self._correlation = array("q"), array("q"), array("q"), array("q")
        self._first, self._last = array("q"), array("q")
        self._connection, self._client, self._errors, self._diagnostics, self._groups = (array("l") for _ in range(5))
        self._api, self._version, self._assumed = array("h"), array("h"), array("h")
        self._status = array("b")
        self.clients: Interned[str] = Interned()
        self.error_sets: Interned[tuple[int, ...]] = Interned()
        self.diagnostic_sets: Interned[tuple[str, ...]] = Interned()
        self.group_sets: Interned[tuple[str, ...]] = Interned()

    def __len__(self) -> int:
        return len(self._ts)

    def run(self, stop: threading.Event | None = None) -> None:
        """The background pass: every exchange of the capture into the index."""
        if self.live is not None:
            passed = self.live.events(self.options, self.offsets, self.decoder, stop or threading.Event(), self._findings_so_far)
        else:
            passed = events(self.path, self.options, self.offsets, self.decoder)
        try:
            for event in passed:
                if stop is not None and stop.is_set():
                    return
                self.doctor.add(event)
                with self.lock:
                    if isinstance(event, Exchange):
                        self.add(event)
                        following = self.following
                        if following is not None and event.id > following[1] and following[0].matches(event):
                            following[2].append(event.id - 1)
                    self.summary.add(event)
        except Exception as exc:  # a capture error ends the pass; what was indexed stays browsable
            self.failure = str(exc)
        finally:
            if stop is None or not stop.is_set():
                self.findings = self.doctor.findings()  # after a failure too: on what was read
            self.done = True

    def _findings_so_far(self) -> None:
        """Between two turns of a live capture: the findings of what was captured so far, when the app asked.
        The rules settle what is still open when they are asked (a transaction, say), so they judge a copy."""
        if self.findings_wanted:
            self.findings_wanted = False
            self.findings = copy.deepcopy(self.doctor).findings()

    def _new_session(self) -> Any:
        session = Session()
        self.sessions.append(session)
        return session

    def exchange(self, row: Row) -> Exchange | None:
        """The exchange of `row` decoded again from the file, with spans, as it was decoded in the pass."""
        if self._span_decoder is None:
            self._span_decoder = make_decoder(replace(self.options, spans=True, decode=True))
        decoder = self._span_decoder
        with self.lock:
            if self.decoder is not None:
                decoder.topic_names = dict(self.decoder.topic_names)
            known = self.sessions[row.connection.id - 1] if row.connection.id <= len(self.sessions) else Session()
        decoder.new_session = lambda: copy.copy(known)
        found = exchange_at(self.path, self.options, self.offsets, row, decoder)
        return None if found is None else replace(found, id=row.id, connection=row.connection)

    def add(self, exchange: Exchange) -> None:
        self.stats.add(exchange)
        header = exchange.request_header
        self.connections.setdefault(exchange.connection.id, exchange.connection)
        first = exchange.request or exchange.response
        last = exchange.response or exchange.request
        assert first is not None and last is not None
        bodies = [m.body for m in (exchange.request, exchange.response) if m is not None and isinstance(m.body, Body)]
        assumed = next((b.version for b in bodies if b.assumed), -1)
        self._ts.append(exchange.ts)
        self._completed.append(last.ts)
        self._latency.append(NONE if exchange.latency is None else exchange.latency)
        self._correlation.append(NONE if exchange.correlation_id is None else exchange.correlation_id)
        self._first.append(first.frame.first_packet)
        self._last.append(last.frame.last_packet)
        self._connection.append(exchange.connection.id)
        self._client.append(self.clients.number(exchange.client_id or ""))
        self._errors.append(self.error_sets.number(tuple(code for _, code, _ in exchange_errors(exchange))))
        self._diagnostics.append(self.diagnostic_sets.number(tuple(d.code for d in exchange.diagnostics if d.severity != "note")))
        self._groups.append(self.group_sets.number(tuple(dict.fromkeys(g for b in bodies for g in b.groups))))
        self._api.append(-1 if header is None else header.api_key)
        self._version.append(-1 if header is None else header.api_version)
        self._assumed.append(assumed)
        self._status.append(STATUSES.index(exchange.status))

    def row(self, i: int) -> Row:
        """The exchange at position i (its id is i + 1: exchanges are numbered in the order they complete)."""
        api, latency, correlation, assumed = self._api[i], self._latency[i], self._correlation[i], self._assumed[i]
        return Row(
            i + 1,
            self._ts[i],
            self._completed[i],
            self.connections[self._connection[i]],
            None if api < 0 else api,
            None if api < 0 else self._version[i],
            None if correlation == NONE else correlation,
            self.clients.values[self._client[i]],
            None if latency == NONE else latency,
            STATUSES[self._status[i]],
            self.error_sets.values[self._errors[i]],
            self.diagnostic_sets.values[self._diagnostics[i]],
            None if assumed < 0 else assumed,
            self.group_sets.values[self._groups[i]],
            self._first[i],
            self._last[i],
            None if api < 0 else self.options.catalog.names.get(api),
        )

    def ts(self, i: int) -> int:
        return self._ts[i]

    def flagged(self, i: int) -> bool:
        return bool(self.error_sets.values[self._errors[i]] or self.diagnostic_sets.values[self._diagnostics[i]])

    def sort_key(self, column: str):
        """A key over positions for the list's sort by a column (`views.terminal.Column.key`, or "status")."""
        columns = {
            "time": self._completed,
            "conn": self._connection,
            "api": self._api,
            "corr": self._correlation,
            "latency": self._latency,
        }
        if column in columns:
            return columns[column].__getitem__
        if column == "client":
            return lambda i: self.clients.values[self._client[i]]
        if column == "status":
            return lambda i: (not self.flagged(i), self._status[i])
        return lambda i: i
