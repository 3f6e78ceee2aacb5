"""Totals the views show after the exchanges: per connection, per error, per capture.

Under a filter the capture's totals (exchanges and their statuses) count every exchange, an answered one the
filter hid before its response was decoded as "filtered out unread" (ok or error is not known), and everything else
(flows, errors, diagnostics of exchanges) counts the shown ones only: the bodies of the others may not have
been decoded at all (the core skips them when the filter rejects an exchange by its headers), so their errors
are not known. Stream notices (gaps, skipped bytes) belong to no exchange and are
all counted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from kdissect.decode.body import Body
from kdissect.events import ConnectionEnd, ConnectionInfo, Event, Exchange, Notice
from kdissect.schema import error_name

if TYPE_CHECKING:
    from kdissect.doctor.trail import Histogram

SASL_TOKEN_LABEL = "SASL token"
"""What views call the raw token exchanges after SaslHandshake v0, which have no API key."""


def percentile(sorted_values: list[int], q: float) -> int | None:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    rank = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[rank]


class Latencies:
    """A table row's latencies: exact up to `EXACT` of them, then folded into the doctor's `Histogram`, so a
    row costs constant memory however long the capture. Past `EXACT` a percentile is its bucket's upper bound
    (within 9 %, never above the largest seen); the largest stays exact."""

    __slots__ = ("exact", "histogram", "largest")

    EXACT = 10_000

    def __init__(self) -> None:
        self.exact: list[int] = []
        self.histogram: Histogram | None = None
        self.largest: int | None = None

    def append(self, ns: int) -> None:
        if self.largest is None or ns > self.largest:
            self.largest = ns
        if self.histogram is not None:
            self.histogram.add(ns)
            return
        self.exact.append(ns)
        if len(self.exact) > self.EXACT:
            from kdissect.doctor.trail import Histogram  # the doctor's modules, loaded by a run of that many exchanges

            self.histogram = Histogram()
            for value in self.exact:
                self.histogram.add(value)
            self.exact = []

    def percentile(self, q: float) -> int | None:
        if self.histogram is None:
            return percentile(sorted(self.exact), q)
        assert self.largest is not None
        return min(self.histogram.percentile(q), self.largest)

    def __bool__(self) -> bool:
        return self.largest is not None


def exchange_errors(exchange: Exchange) -> list[tuple[str, int, str]]:
    """(side, code, field path) of every non-zero error code in the exchange."""
    out = []
    for side, message in (("request", exchange.request), ("response", exchange.response)):
        if message is not None and isinstance(message.body, Body):
            out += [(side, e.code, e.path) for e in message.body.errors]
    return out


class Labelled(Protocol):
    """What an API label reads: an `Exchange`, or the browser's index row (browse/index.py), which has no messages."""

    @property
    def api_key(self) -> int | None: ...
    @property
    def api_version(self) -> int | None: ...
    @property
    def api_name(self) -> str | None: ...
    @property
    def sasl_token(self) -> bool: ...


def api_label(exchange: Labelled) -> str:
    key = exchange.api_key
    if key is None:
        return SASL_TOKEN_LABEL if exchange.sasl_token else "?"
    return f"{exchange.api_name or f'api {key}'} v{exchange.api_version}"


UNDECODED = "filtered out unread"
"""The status counted for an exchange the filter hid by its headers, on purpose before its response was decoded:
ok, error or malformed is not known without the body."""


def _counted_status(exchange: Exchange, shown: bool) -> str:
    response = exchange.response
    if not shown and exchange.status == "ok" and response is not None and response.body is None:
        return UNDECODED
    return exchange.status


class Facts(NamedTuple):
    """What the totals count of one exchange: a few values, cheap to send between processes."""

    id: int
    shown: bool
    counted_status: str
    status: str
    client_id: str | None
    label: str
    latency: int | None
    diagnostics: tuple[str, ...]
    errors: tuple[int, ...]
    """Distinct error codes, in the order of their set (as the totals have always counted them)."""
    error_topics: tuple[tuple[int, str], ...] = ()
    """Distinct (error code, topic) of the errors that belong to a topic."""


def exchange_facts(exchange: Exchange, shown: bool) -> Facts:
    status = _counted_status(exchange, shown)
    if not shown:
        return Facts(exchange.id, False, status, exchange.status, None, "", None, (), ())
    return Facts(
        exchange.id,
        True,
        status,
        exchange.status,
        exchange.client_id,
        api_label(exchange),
        exchange.latency,
        tuple(d.code for d in exchange.diagnostics),
        tuple({code for _, code, _ in exchange_errors(exchange)}),
        _error_topics(exchange),
    )


def _error_topics(exchange: Exchange) -> tuple[tuple[int, str], ...]:
    response = exchange.response
    body = response.body if response is not None else None
    if not isinstance(body, Body) or not body.errors:
        return ()
    return tuple(dict.fromkeys((e.code, e.topic) for e in body.errors if e.topic is not None))


@dataclass
class Flow:
    """One connection, as the flows table shows it."""

    info: ConnectionInfo
    client_ids: Counter[str] = field(default_factory=Counter)
    apis: Counter[str] = field(default_factory=Counter)
    exchanges: int = 0
    """Shown exchanges."""
    hidden: int = 0
    """Exchanges the filter did not show."""
    errors: int = 0
    unanswered: int = 0
    diagnostics: int = 0
    latencies: Latencies = field(default_factory=Latencies)
    end: ConnectionEnd | None = None


@dataclass
class ErrorTally:
    count: int = 0
    apis: Counter[str] = field(default_factory=Counter)
    exchanges: list[int] = field(default_factory=list)
    """The first few exchange ids where it occurred."""
    topics: Counter[str] = field(default_factory=Counter)
    """The topics it was about, up to `Summary.MOST_TOPICS` of them."""


class Summary:
    """Consumes the core's events and keeps what the closing panels need; constant memory per connection."""

    FIRST_EXCHANGES = 5
    MOST_TOPICS = 100

    def __init__(self) -> None:
        self.flows: dict[int, Flow] = {}
        self.errors: dict[int, ErrorTally] = {}
        self.statuses: Counter[str] = Counter()
        self.notices: Counter[str] = Counter()
        self.exchanges = 0
        self.shown = 0
        self.diagnostics: Counter[str] = Counter()

    def _flow(self, info: ConnectionInfo) -> Flow:
        flow = self.flows.get(info.id)
        if flow is None:
            flow = self.flows[info.id] = Flow(info)
        return flow

    def add(self, event: Event, shown: bool = True) -> None:
        """Count an event; `shown` says whether the filter showed an exchange."""
        if isinstance(event, Exchange):
            self._exchange(event, shown)
        elif isinstance(event, Notice):
            self.notices[event.diagnostic.code] += 1
            if event.connection is not None:
                self._flow(event.connection).diagnostics += 1
        elif isinstance(event, ConnectionEnd):
            self._flow(event.connection).end = event

    def _exchange(self, exchange: Exchange, shown: bool) -> None:
        self.count(exchange.connection, exchange_facts(exchange, shown))

    def count(self, info: ConnectionInfo, facts: Facts) -> None:
        """Count one exchange from its facts: how `add` counts an exchange, and how a process reading a capture
        with others (`read --jobs`) counts the exchanges another one decoded."""
        self.exchanges += 1
        self.statuses[facts.counted_status] += 1
        flow = self._flow(info)
        if not facts.shown:
            flow.hidden += 1
            return
        self.shown += 1
        flow.exchanges += 1
        if facts.client_id:
            flow.client_ids[facts.client_id] += 1
        flow.apis[facts.label.split(" v")[0]] += 1
        if facts.status == "unanswered":
            flow.unanswered += 1
        if facts.latency is not None:
            flow.latencies.append(facts.latency)
        for code in facts.diagnostics:
            self.diagnostics[code] += 1
            flow.diagnostics += 1
        flow.errors += len(facts.errors)
        for error_code in facts.errors:
            tally = self.errors.setdefault(error_code, ErrorTally())
            tally.count += 1
            tally.apis[facts.label] += 1
            if len(tally.exchanges) < self.FIRST_EXCHANGES:
                tally.exchanges.append(facts.id)
        for error_code, topic in facts.error_topics:
            topics = self.errors[error_code].topics
            if topic in topics or len(topics) < self.MOST_TOPICS:
                topics[topic] += 1

    @staticmethod
    def error_label(code: int) -> str:
        return f"{error_name(code)} ({code})"
