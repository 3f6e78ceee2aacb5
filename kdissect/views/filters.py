"""Which exchanges a user asked to see: one filter shared by read, show, stats, live and spark."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.decode.body import Body
from kdissect.events import Exchange
from kdissect.schema import APIS


class FilterError(ValueError):
    """A filter option that makes no sense; the message is one line for the user."""


def parse_apis(text: str | None) -> frozenset[int] | None:
    """ "Produce,Fetch,18" -> API keys; names are matched without regard to case."""
    if not text:
        return None
    by_name = {api.name.lower(): key for key, api in APIS.items()}
    keys = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.isdigit():
            keys.add(int(item))
        elif item.lower() in by_name:
            keys.add(by_name[item.lower()])
        else:
            raise FilterError(f"unknown API {item!r} (give a name such as Produce or a key such as 0)")
    return frozenset(keys)


def parse_versions(text: str | None) -> frozenset[int] | None:
    """ "9", "3-7" or "1,4-5"."""
    if not text:
        return None
    versions: set[int] = set()
    for item in (part.strip() for part in text.split(",")):
        lo, _, hi = item.partition("-")
        try:
            versions.update(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            raise FilterError(f"bad version {item!r} (give N, N-M, or a comma-separated list)") from None
    return frozenset(versions)


def parse_ids(text: str | None, what: str) -> frozenset[int] | None:
    if not text:
        return None
    try:
        return frozenset(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise FilterError(f"bad {what} {text!r} (give numbers, comma-separated)") from None


@dataclass(frozen=True, slots=True)
class ExchangeFilter:
    apis: frozenset[int] | None = None
    versions: frozenset[int] | None = None
    topics: frozenset[str] | None = None
    client_ids: frozenset[str] | None = None
    groups: frozenset[str] | None = None
    errors_only: bool = False
    connections: frozenset[int] | None = None
    min_latency_ns: int | None = None

    @property
    def active(self) -> bool:
        return any(getattr(self, name) not in (None, False) for name in self.__slots__)

    def matches(self, exchange: Exchange) -> bool:
        if self.apis is not None and exchange.api_key not in self.apis:
            return False
        if self.versions is not None and exchange.api_version not in self.versions:
            return False
        if self.connections is not None and exchange.connection.id not in self.connections:
            return False
        if self.client_ids is not None and exchange.client_id not in self.client_ids:
            return False
        if self.min_latency_ns is not None:
            latency = exchange.latency
            if latency is None and exchange.status != "unanswered":  # never answered: the slowest of all
                return False
            if latency is not None and latency < self.min_latency_ns:
                return False
        bodies = [m.body for m in (exchange.request, exchange.response) if m is not None and isinstance(m.body, Body)]
        if self.topics is not None and not any(t in self.topics for b in bodies for t in b.topics):
            return False
        if self.groups is not None and not any(g in self.groups for b in bodies for g in b.groups):
            return False
        if self.errors_only and not (exchange.diagnostics or any(b.errors for b in bodies)):
            return False
        return True


def make_filter(
    api: str | None = None,
    version: str | None = None,
    topic: list[str] | None = None,
    client_id: list[str] | None = None,
    group: list[str] | None = None,
    errors: bool = False,
    connection: str | None = None,
    min_latency_ms: float | None = None,
) -> ExchangeFilter:
    return ExchangeFilter(
        apis=parse_apis(api),
        versions=parse_versions(version),
        topics=frozenset(topic) if topic else None,
        client_ids=frozenset(client_id) if client_id else None,
        groups=frozenset(group) if group else None,
        errors_only=errors,
        connections=parse_ids(connection, "connection id"),
        min_latency_ns=None if min_latency_ms is None else int(min_latency_ms * 1e6),
    )
