"""The report's timelines, added up while the capture is read: per API the exchanges started, the broker's own time
and the time in line (long polls apart), errors and failures, bytes and records per topic, consumer lag per
partition, and connections opened and closed per client, all on one `Axis`.

Lines are kept per name up to `MOST_NAMES` per kind; later names add to one line of the rest (`None`), so memory
stays the axis's buckets times a bounded number of lines. The sums over a kind's lines are what `stats` counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import fields as fields_of
from typing import Generic, TypeVar

from kdissect.decode.body import Body
from kdissect.doctor.consumers import follower, long_poll
from kdissect.doctor.facts import each, fields, topic_of
from kdissect.events import ConnectionEnd, Exchange
from kdissect.report.axis import Axis, Series
from kdissect.schema import ApiKey, error_name
from kdissect.views.summary import SASL_TOKEN_LABEL

MOST_NAMES = 64
"""Lines kept apart per kind (APIs, errors, topics, clients, partitions); past it, one line holds the rest."""
NO_CLIENT = "(no client id)"
UNKNOWN_TOPIC = "?"
"""A records field whose topic is not known (named by an id the capture never resolved)."""
TROUBLES = ("unanswered", "malformed", "orphan-response", "unreadable")
"""Statuses other than ok and error that the errors timeline marks (an error is marked by its error codes)."""

K = TypeVar("K")
L = TypeVar("L")


class Named(Generic[K, L]):
    """Lines by name, made on first use; past `MOST_NAMES` names, the rest share the line of `None`."""

    __slots__ = ("lines", "make")

    def __init__(self, make: Callable[[], L]) -> None:
        self.lines: dict[K | None, L] = {}
        self.make = make

    def __getitem__(self, name: K) -> L:
        lines = self.lines.get(name)
        if lines is None:
            key: K | None = name if len(self.lines) < MOST_NAMES else None
            lines = self.lines.get(key)
            if lines is None:
                lines = self.lines[key] = self.make()
        return lines


@dataclass(slots=True)
class ApiLines:
    count: Series
    """Exchanges started in the bucket."""
    service: Series
    """The longest service time (ns): the broker's own, after any wait in line; long polls left out."""
    queue: Series
    """The longest time a request waited in line behind an earlier one on its connection (ns)."""
    polls: Series
    """Long-poll Fetches: answered empty after waiting out their MaxWaitMs."""
    poll_wait: Series
    """The longest long poll (ns)."""


@dataclass(slots=True)
class TopicLines:
    produced_bytes: Series
    produced_records: Series
    fetched_bytes: Series
    fetched_records: Series


@dataclass(slots=True)
class ClientLines:
    opened: Series
    closed: Series
    """Connections the client or the broker closed (FIN or RST); those the capture ended in are not closed."""


def series_of(lines: object) -> list[Series]:
    """A line's series: itself, or each field of a group of them (ApiLines, TopicLines, ClientLines)."""
    if isinstance(lines, Series):
        return [lines]
    return [getattr(lines, f.name) for f in fields_of(lines)]  # type: ignore[arg-type]  # not a Series: a group of them, a dataclass


@dataclass(slots=True)
class Timelines:
    axis: Axis
    poll_fraction: float
    """The part of its MaxWaitMs after which an empty Fetch is a long poll (the doctor's consumer.long-poll)."""
    apis: Named[str, ApiLines] = field(init=False)
    errors: Named[str, Series] = field(init=False)
    """Error codes by name, each occurrence (as `stats` counts them), and the TROUBLES statuses."""
    topics: Named[str, TopicLines] = field(init=False)
    lags: Named[tuple[str, str | None, int | None], Series] = field(init=False)
    """(consumer, topic, partition) -> the largest lag (records) its fetches saw in the bucket."""
    clients: Named[str, ClientLines] = field(init=False)

    def __post_init__(self) -> None:
        axis = self.axis
        self.apis = Named(lambda: ApiLines(axis.series(), axis.series(True), axis.series(True), axis.series(), axis.series(True)))
        self.errors = Named(axis.series)
        self.topics = Named(lambda: TopicLines(axis.series(), axis.series(), axis.series(), axis.series()))
        self.lags = Named(lambda: axis.series(True))
        self.clients = Named(lambda: ClientLines(axis.series(), axis.series()))

    def exchange(self, exchange: Exchange, errors: list[int]) -> None:
        """An exchange the report shows; `errors`: every error code in its bodies."""
        at = self.axis.at
        bucket = at(exchange.ts)
        header = exchange.request_header
        name = exchange.api_name or (SASL_TOKEN_LABEL if exchange.sasl_token else "?")
        lines = self.apis[name]
        lines.count.values[bucket] += 1
        latency = exchange.latency
        if latency is not None:
            if header is not None and header.api_key == ApiKey.FETCH and long_poll(exchange, self.poll_fraction):
                lines.polls.values[bucket] += 1
                lines.poll_wait.keep(bucket, latency)
            else:
                lines.service.keep(bucket, latency - (exchange.queued or 0))
            if exchange.queued:
                lines.queue.keep(bucket, exchange.queued)
        for code in errors:
            self.errors[error_name(code)].values[bucket] += 1
        if exchange.status in TROUBLES:
            self.errors[exchange.status].values[bucket] += 1
        if header is not None and header.api_key in (ApiKey.PRODUCE, ApiKey.FETCH):
            self._records(exchange)
            if header.api_key == ApiKey.FETCH:
                self._lags(exchange, header.client_id)

    def _records(self, exchange: Exchange) -> None:
        request, response = exchange.request, exchange.response
        for message, produced in ((request, True), (response, False)):
            body = getattr(message, "body", None)
            if not isinstance(body, Body) or not body.records:
                continue
            assert message is not None
            bucket = self.axis.at(message.ts)
            for placed in body.records:
                lines = self.topics[placed.topic if placed.topic is not None else UNKNOWN_TOPIC]
                records, size = placed.records.data_count, placed.records.size
                if produced:
                    lines.produced_records.values[bucket] += records
                    lines.produced_bytes.values[bucket] += size
                else:
                    lines.fetched_records.values[bucket] += records
                    lines.fetched_bytes.values[bucket] += size

    def _lags(self, exchange: Exchange, client_id: str | None) -> None:
        """The lag of each partition a consumer's Fetch was answered for, when it was answered: the high watermark
        less the offset it asked from, as the doctor's consumer.lag measures it."""
        request, response = fields(exchange.request), fields(exchange.response)
        if request is None or response is None or exchange.response is None or follower(request):
            return
        bucket = self.axis.at(exchange.response.ts)
        offsets = {
            (topic_of(topic), partition.get("Partition")): partition.get("FetchOffset")
            for topic in each(request, "Topics")
            for partition in each(topic, "Partitions")
        }
        consumer = client_id or f"connection {exchange.connection.id}"
        for topic in each(response, "Responses"):
            name = topic_of(topic)
            for partition in each(topic, "Partitions"):
                index = partition.get("PartitionIndex")
                offset, high = offsets.get((name, index)), partition.get("HighWatermark")
                if isinstance(offset, int) and isinstance(high, int) and offset >= 0 and high >= 0:
                    self.lags[(consumer, name, index)].keep(bucket, max(0, high - offset))

    def ended(self, end: ConnectionEnd, client_id: str | None) -> None:
        """A connection's end: opened at its first packet, closed at its last when a side closed it; `client_id` the
        first its requests carried."""
        lines = self.clients[client_id or NO_CLIENT]
        lines.opened.values[self.axis.at(end.first_ts)] += 1
        if end.closed_by is not None:
            lines.closed.values[self.axis.at(end.last_ts)] += 1
