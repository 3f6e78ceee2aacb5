"""The compact index of a capture's exchanges: a few numbers per exchange in typed arrays, so a million exchanges
cost tens of megabytes and no decoded body stays in memory.

The index's pass (indexer.py) makes the numbers on its worker thread (`Rows`) and hands them over in batches; the
app's `Index` is extended with each batch on the UI thread, and only that thread reads it. Strings that repeat
(client ids, error lists, diagnostic codes, groups) are interned: the arrays hold their number, and a batch brings
the values numbered since the one before.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, get_args

from kdissect.decode.body import Body
from kdissect.events import ConnectionInfo, Exchange, Status
from kdissect.views.summary import exchange_errors

NONE = -(1 << 62)
"""Stands for a missing number in the integer columns."""
STATUSES: tuple[str, ...] = get_args(Status)
SASL_TOKEN = -2
"""The API column of a raw SASL token's exchange, which has no request header either."""
REQUEST, RESPONSE, CUT = 1, 2, 4
"""Bits of the `flags` column: the exchange has a request, a response, and a frame or header the capture holds only
part of (a diagnostic the verdict from headers sees before any body is decoded)."""
EARLY_CUT = frozenset({"frame.incomplete", "header.unreadable"})
"""The diagnostics that make an exchange malformed before any body is decoded."""
T = TypeVar("T")


def flags_of(exchange: Exchange) -> int:
    """What the verdict from headers is told of an exchange's sides: the `flags` bits."""
    request, response = exchange.request, exchange.response
    flags = (REQUEST if request else 0) | (RESPONSE if response else 0)
    if (request and request.diagnostics or response and response.diagnostics) and any(d.code in EARLY_CUT for d in exchange.diagnostics):
        flags |= CUT
    return flags


class Columns:
    """One typed array per number kept of an exchange; position i holds exchange i + 1 (exchanges are numbered in
    the order they complete)."""

    def __init__(self) -> None:
        self.ts, self.completed, self.latency, self.correlation, self.first, self.last = (array("q") for _ in range(6))
        """The request's time; when the response came (the request, without one); latency; correlation id; the first
        and last packet numbers of its frames."""
        self.queued = array("q")
        """How long its request waited in line behind another's (NONE: it did not wait)."""
        self.connection, self.client, self.errors, self.diagnostics, self.groups, self.ahead = (array("l") for _ in range(6))
        """The connection id, the numbers of the interned client id, error codes, diagnostic codes and groups, and the
        exchange it waited behind in line (0 for none: a body decoded again on demand numbers its neighbours anew)."""
        self.api, self.version, self.assumed = array("h"), array("h"), array("h")
        """-1 where the exchange has no request header (SASL_TOKEN for a raw SASL token), or no version was assumed."""
        self.status, self.flags = array("b"), array("b")
        """An index into STATUSES; the `flags_of` bits."""

    def arrays(self) -> tuple[array, ...]:
        return (
            *(self.ts, self.completed, self.latency, self.correlation, self.first, self.last, self.queued),
            *(self.connection, self.client, self.errors, self.diagnostics, self.groups, self.ahead),
            *(self.api, self.version, self.assumed, self.status, self.flags),
        )

    def __len__(self) -> int:
        return len(self.ts)


@dataclass(frozen=True, slots=True)
class Batch:
    """What the index's pass made since its last batch; handed to the UI thread whole, the pass keeps none of it."""

    rows: Columns
    clients: list[str | None]
    error_sets: list[tuple[int, ...]]
    diagnostic_sets: list[tuple[str, ...]]
    group_sets: list[tuple[str, ...]]
    """The interned values numbered since the last batch, in number order."""
    connections: list[ConnectionInfo]
    """Connections first seen in these rows."""
    read: int
    """How far into the file the pass is, in bytes (a checkpoint's offset)."""
    captured: int | None
    """Live: packets captured so far."""
    matched: tuple[int, list[int]] | None
    """Live: (the filter's generation, positions among these rows it matched), while a filter is followed."""


class Interned(Generic[T]):
    """Numbers for values, each value numbered once; `fresh` holds the values numbered since it was last taken."""

    def __init__(self) -> None:
        self._numbers: dict[T, int] = {}
        self.fresh: list[T] = []

    def number(self, value: T) -> int:
        found = self._numbers.get(value)
        if found is None:
            found = self._numbers[value] = len(self._numbers)
            self.fresh.append(value)
        return found

    def take(self) -> list[T]:
        fresh, self.fresh = self.fresh, []
        return fresh


class Rows:
    """The pass's half: each exchange made into numbers, gathered until `take` hands them over as a batch."""

    def __init__(self) -> None:
        self.columns = Columns()
        self.clients: Interned[str | None] = Interned()
        """None (a request header without a client id) apart from an empty client id: filters tell them apart."""
        self.error_sets: Interned[tuple[int, ...]] = Interned()
        self.diagnostic_sets: Interned[tuple[str, ...]] = Interned()
        self.group_sets: Interned[tuple[str, ...]] = Interned()
        self._seen: set[int] = set()
        self._connections: list[ConnectionInfo] = []

    def __len__(self) -> int:
        return len(self.columns)

    def add(self, exchange: Exchange) -> None:
        c = self.columns
        header = exchange.request_header
        if exchange.connection.id not in self._seen:
            self._seen.add(exchange.connection.id)
            self._connections.append(exchange.connection)
        first = exchange.request or exchange.response
        last = exchange.response or exchange.request
        assert first is not None and last is not None
        bodies = [m.body for m in (exchange.request, exchange.response) if m is not None and isinstance(m.body, Body)]
        c.ts.append(exchange.ts)
        c.completed.append(last.ts)
        c.latency.append(NONE if exchange.latency is None else exchange.latency)
        c.correlation.append(NONE if exchange.correlation_id is None else exchange.correlation_id)
        c.first.append(first.frame.first_packet)
        c.last.append(last.frame.last_packet)
        c.queued.append(NONE if exchange.queued is None else exchange.queued)
        c.connection.append(exchange.connection.id)
        c.client.append(self.clients.number(exchange.client_id))
        c.errors.append(self.error_sets.number(tuple(code for _, code, _ in exchange_errors(exchange))))
        c.diagnostics.append(self.diagnostic_sets.number(tuple(d.code for d in exchange.diagnostics if d.severity != "note")))
        c.groups.append(self.group_sets.number(tuple(dict.fromkeys(g for b in bodies for g in b.groups))))
        c.api.append((SASL_TOKEN if exchange.sasl_token else -1) if header is None else header.api_key)
        c.version.append(-1 if header is None else header.api_version)
        c.assumed.append(next((b.version for b in bodies if b.assumed), -1))
        c.status.append(STATUSES.index(exchange.status))
        c.flags.append(flags_of(exchange))
        c.ahead.append(exchange.ahead or 0)

    def take(self, read: int, captured: int | None, matched: tuple[int, list[int]] | None) -> Batch:
        columns, self.columns = self.columns, Columns()
        connections, self._connections = self._connections, []
        return Batch(
            columns,
            self.clients.take(),
            self.error_sets.take(),
            self.diagnostic_sets.take(),
            self.group_sets.take(),
            connections,
            read,
            captured,
            matched,
        )


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
    """The API's name in the run's catalogue (None for a key no spec defines), as the exchange's header had it."""
    ahead: int | None
    """The exchange it waited behind in line, if it waited."""
    sasl_token: bool


class Index(Columns):
    """The exchanges indexed so far, as the UI thread has them: extended by each batch, read when a line is drawn."""

    def __init__(self, names: Mapping[int, str]) -> None:
        """`names`: the API names of the run's catalogue."""
        super().__init__()
        self.names = names
        self.clients: list[str | None] = []
        self.error_sets: list[tuple[int, ...]] = []
        self.diagnostic_sets: list[tuple[str, ...]] = []
        self.group_sets: list[tuple[str, ...]] = []
        self.connections: dict[int, ConnectionInfo] = {}

    def extend(self, batch: Batch) -> None:
        for mine, added in zip(self.arrays(), batch.rows.arrays()):
            mine.extend(added)
        self.clients += batch.clients
        self.error_sets += batch.error_sets
        self.diagnostic_sets += batch.diagnostic_sets
        self.group_sets += batch.group_sets
        self.connections.update((info.id, info) for info in batch.connections)

    def row(self, i: int) -> Row:
        """The exchange at position i (its id is i + 1)."""
        api, latency, correlation, assumed = self.api[i], self.latency[i], self.correlation[i], self.assumed[i]
        return Row(
            i + 1,
            self.ts[i],
            self.completed[i],
            self.connections[self.connection[i]],
            None if api < 0 else api,
            None if api < 0 else self.version[i],
            None if correlation == NONE else correlation,
            self.clients[self.client[i]] or "",
            None if latency == NONE else latency,
            STATUSES[self.status[i]],
            self.error_sets[self.errors[i]],
            self.diagnostic_sets[self.diagnostics[i]],
            None if assumed < 0 else assumed,
            self.group_sets[self.groups[i]],
            self.first[i],
            self.last[i],
            None if api < 0 else self.names.get(api),
            self.ahead[i] or None,
            api == SASL_TOKEN,
        )

    def flagged(self, i: int) -> bool:
        """What n and N jump to: an error code or a diagnostic."""
        return bool(self.error_sets[self.errors[i]] or self.diagnostic_sets[self.diagnostics[i]])

    def sort_key(self, column: str) -> Callable[[int], Any]:
        """A key over positions for the list's sort by a column (`views.terminal.Column.key`, or "status")."""
        columns = {"time": self.completed, "conn": self.connection, "api": self.api, "corr": self.correlation, "latency": self.latency}
        if column in columns:
            return columns[column].__getitem__
        if column == "client":
            return lambda i: self.clients[self.client[i]] or ""
        if column == "status":
            return lambda i: (not self.flagged(i), self.status[i])
        return lambda i: i
