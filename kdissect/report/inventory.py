"""The report's inventory beside `stats`' tables: each client id's API versions (and those Kafka 4.0 removed), and
the connections (flows) with their client ids, bytes, and how they ended.

Bounded: `MOST_CLIENTS` client ids (later ones counted together), and the `MOST_FLOWS` connections with the most
exchanges (the others counted).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

from kdissect.doctor.protocol import removed
from kdissect.events import ConnectionEnd, Exchange

MOST_CLIENTS = 10_000
MOST_FLOWS = 1000
OTHER_CLIENTS = "(more client ids)"


@dataclass(slots=True)
class ClientUse:
    versions: Counter[str] = field(default_factory=Counter)
    """"Fetch v12" -> requests."""
    removed: Counter[str] = field(default_factory=Counter)
    """The versions among them that Apache Kafka 4.0 removed (KIP-896)."""
    connections: set[int] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Flow:
    connection: int
    client: str
    broker: str
    client_id: str
    exchanges: int
    bytes: tuple[int, int]
    """Client to broker, and back."""
    first_ts: int
    last_ts: int
    ended: str
    closed_by: str | None
    tls: str | None
    """The TLS version, for a TLS connection."""


class Inventory:
    def __init__(self) -> None:
        self.clients: dict[str, ClientUse] = {}
        self.flows: list[tuple[int, int, Flow]] = []
        """A heap of (exchanges, -connection id, flow): the busiest MOST_FLOWS."""
        self.flows_left_out = 0

    def exchange(self, exchange: Exchange) -> None:
        header = exchange.request_header
        if header is None:
            return
        name = header.client_id or ""
        use = self.clients.get(name)
        if use is None:
            if len(self.clients) >= MOST_CLIENTS:
                name = OTHER_CLIENTS
            use = self.clients.get(name)
            if use is None:
                use = self.clients[name] = ClientUse()
        label = f"{header.api_name or f'api {header.api_key}'} v{header.api_version}"
        use.versions[label] += 1
        if removed(header.api_key, header.api_version):
            use.removed[label] += 1
        use.connections.add(exchange.connection.id)

    def ended(self, end: ConnectionEnd, client_id: str | None) -> None:
        info = end.connection
        flow = Flow(
            info.id,
            str(info.client),
            str(info.broker),
            client_id or "",
            end.requests,
            end.bytes,
            end.first_ts,
            end.last_ts,
            end.ended,
            end.closed_by,
            info.tls.version if info.tls is not None else None,
        )
        item = (end.requests, -info.id, flow)
        if len(self.flows) < MOST_FLOWS:
            heapq.heappush(self.flows, item)
        else:
            heapq.heappushpop(self.flows, item)
            self.flows_left_out += 1

    def busiest(self) -> list[Flow]:
        """The flows kept, by connection id."""
        return sorted((flow for _, _, flow in self.flows), key=lambda flow: flow.connection)
