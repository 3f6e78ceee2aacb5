"""A few numbers of every exchange, by id, in typed arrays: what the report needs to mark and list a finding's
evidence, whose exchange ids are known only when the capture has been read.

About 40 bytes an exchange and no decoded body, as the browser's index (browse/index.py); client ids and
connections are kept once each, up to `MOST`.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import get_args

from kdissect.events import Exchange
from kdissect.events.exchange import Status
from kdissect.report.axis import Axis
from kdissect.schema import error_name
from kdissect.views.summary import api_label

STATUSES: tuple[Status, ...] = get_args(Status)
STATUS_NUMBER = {status: number for number, status in enumerate(STATUSES)}
MOST = 100_000
"""Distinct client ids and connections named; past it, an exchange's are not told ("?")."""
NONE = -1


@dataclass(frozen=True, slots=True)
class Listed:
    """One exchange as a finding's evidence list shows it."""

    id: int
    ts: int
    api: str
    client_id: str
    connection: str
    latency: int | None
    queued: int | None
    status: str
    error: str | None
    """The first error code's name, when there is one."""


class ExchangeIndex:
    """Exchange id -> when it started and ended, its API, client, connection, status and first error."""

    def __init__(self) -> None:
        self.ts = array("q")
        self.end = array("q")
        self.queued = array("q")
        self.error = array("i")
        self.status = array("b")
        self.label = array("l")
        self.client = array("l")
        self.connection = array("l")
        self._names: dict[str, int] = {}
        self.names: list[str] = []
        """API labels and client ids, each once."""
        self.connections: dict[int, str] = {}
        """Connection id -> client → broker."""

    def _name(self, text: str) -> int:
        number = self._names.get(text)
        if number is None:
            if len(self.names) >= MOST:
                return NONE
            number = self._names[text] = len(self.names)
            self.names.append(text)
        return number

    def add(self, exchange: Exchange, errors: list[int]) -> None:
        """Exchange ids come in order from 1; a gap (ids a worker numbered) is filled with nothing known."""
        while len(self.ts) < exchange.id - 1:
            self._blank()
        response, request = exchange.response, exchange.request
        self.ts.append(exchange.ts)
        self.end.append(response.ts if response is not None and request is not None else NONE)
        self.queued.append(NONE if exchange.queued is None else exchange.queued)
        self.error.append(errors[0] if errors else 0)
        self.status.append(STATUS_NUMBER[exchange.status])
        self.label.append(self._name(api_label(exchange)))
        self.client.append(self._name(exchange.client_id or ""))
        info = exchange.connection
        if info.id not in self.connections and len(self.connections) < MOST:
            self.connections[info.id] = f"#{info.id} {info}"
        self.connection.append(info.id)

    def _blank(self) -> None:
        for column in (self.ts, self.end, self.queued, self.label, self.client, self.connection):
            column.append(NONE)
        self.error.append(0)
        self.status.append(NONE)

    def __len__(self) -> int:
        return len(self.ts)

    def known(self, exchange_id: int) -> bool:
        return 0 < exchange_id <= len(self.ts) and self.status[exchange_id - 1] != NONE

    def listed(self, exchange_id: int) -> Listed:
        at = exchange_id - 1
        end, queued, code = self.end[at], self.queued[at], self.error[at]
        label, client = self.label[at], self.client[at]
        return Listed(
            exchange_id,
            self.ts[at],
            self.names[label] if label != NONE else "?",
            self.names[client] if client != NONE else "?",
            self.connections.get(self.connection[at], f"#{self.connection[at]}"),
            None if end == NONE else end - self.ts[at],
            None if queued == NONE else queued,
            STATUSES[self.status[at]],
            error_name(code) if code else None,
        )

    def buckets(self, ids: tuple[int, ...], axis: Axis) -> dict[int, int]:
        """Bucket -> how many of these exchanges started in it."""
        out: dict[int, int] = {}
        for exchange_id in ids:
            bucket = axis.find(self.ts[exchange_id - 1]) if self.known(exchange_id) else None
            if bucket is not None:
                out[bucket] = out.get(bucket, 0) + 1
        return out
