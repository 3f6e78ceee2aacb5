"""The tap: the core's events made into the metrics of `definitions.py`, in bounded memory.

`live --metrics` and `read --metrics` feed it the same events. Times are the capture's (ns since the epoch), so a
file's metrics carry the time of the incident and idle series leave a file's snapshots as they leave a live one's.

What it measures comes from what the rest of kdissect already knows: an exchange's service time and time in line
(`Exchange.service`, `.queued`), a long poll as the doctor tells it (`doctor.consumers.long_poll`), a Fetch's
positions and high watermarks (`doctor.consumers.fetched`), the clients' software (`doctor.clients.Clients`), the
groups' generations and commits (the doctor's `Rebalances`). A doctor runs beside it, one per window
(`TapSettings.window`): the findings of the last window are the active ones, and each window starts afresh, so the
doctor's bookkeeping never outgrows a window. The clients' software outlives windows: a connection says it once.

Memory: every name from the wire passes a `Budget` (the first `top` of each kind, `other` after), every metric holds
at most `most` series, and `tick` drops what has been idle for `idle` seconds: series, label values, what is
remembered of groups, partitions and clients. Connections end with the core's `ConnectionEnd`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kdissect.decode.body import Body
from kdissect.doctor.clients import Clients, Software
from kdissect.doctor.consumers import LONG_POLL, fetched, follower, long_poll, records_behind
from kdissect.doctor.engine import Doctor, Report
from kdissect.doctor.facts import fields
from kdissect.doctor.rebalances import Group
from kdissect.events import ConnectionEnd, Exchange
from kdissect.filter import EVERYTHING, Filter
from kdissect.metrics import definitions as m
from kdissect.metrics.budget import Budget, Recent
from kdissect.metrics.series import Family, Labels, Snapshot, family
from kdissect.metrics.settings import TapSettings
from kdissect.schema import ApiKey, error_name
from kdissect.schema.tree import Struct

SECOND = 1_000_000_000
SWEEP_EVERY = 10 * SECOND
"""How often idle series and names are looked for."""
LONG_POLL_FRACTION = LONG_POLL.thresholds[0].default
"""An empty Fetch that took this part of its MaxWaitMs is a long poll, as the doctor says by default."""
GROUP_KEYS = frozenset({ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH})
OPERATIONS: dict[int, tuple[str, str]] = {ApiKey.PRODUCE: ("send", "send"), ApiKey.FETCH: ("poll", "receive")}
"""API -> (messaging.operation.name, messaging.operation.type), as OpenTelemetry's Kafka conventions name them."""


class Connection:
    """What the tap keeps of an open connection: its labels, and which inventory series counts it."""

    __slots__ = ("client_id", "host", "broker", "port", "sasl", "counted")

    def __init__(self, host: str, broker: str, port: str) -> None:
        self.client_id: str | None = None
        self.host = host
        self.broker = broker
        self.port = port
        self.sasl = ""
        self.counted: Labels | None = None
        """The kafka.client.connections series this connection adds 1 to."""


class Tap:
    def __init__(self, settings: TapSettings = TapSettings(), wanted: Filter = EVERYTHING) -> None:
        self.settings = settings
        self.wanted = wanted
        self.shown: Callable[[Exchange], bool] | None = wanted.matches if wanted.active else None
        self.families: dict[str, Family] = {metric.name: family(metric, settings.most) for metric in m.METRICS}
        f = self.families
        self._requests, self._service, self._queue, self._long_poll = (f[x.name] for x in (m.REQUESTS, m.SERVICE, m.QUEUE, m.LONG_POLL))
        top = settings.top
        self.client_ids = Budget("client ids", top)
        self.topics = Budget("topics", top)
        self.groups = Budget("consumer groups", top)
        self.hosts = Budget("client hosts", top)
        self.brokers = Budget("brokers", top)
        self.software = Budget("client software names", top)
        self.budgets = (self.client_ids, self.topics, self.groups, self.hosts, self.brokers, self.software)
        most = settings.most
        self.group_of: Recent[str, str] = Recent(most)
        """Client id -> the group it last joined or committed for (its label)."""
        self.watermarks: Recent[tuple[str, str], int] = Recent(most)
        """(topic label, partition) -> the newest high watermark a Fetch told."""
        self.committed: Recent[tuple[str, str, str], int] = Recent(most)
        """(group label, topic label, partition) -> the offset the group last committed."""
        self.generations: Recent[str, int] = Recent(most)
        self.versions: Recent[tuple[str, str], int] = Recent(most)
        self.connections: dict[int, Connection] = {}
        self.clients = Clients()
        self.doctor = Doctor(settings.doctor, wanted, self.clients)
        self.report: Report | None = None
        """The last complete window's findings."""
        self.window_end: int | None = None
        self.next_sweep: int | None = None
        self.now = 0
        self._told: set[str] = set()

    # --- events ------------------------------------------------------------------------------------

    def add(self, event: object) -> None:
        self.doctor.add(event)
        if isinstance(event, Exchange):
            self._exchange(event)
        elif isinstance(event, ConnectionEnd):
            self._ended(event)

    @staticmethod
    def when(event: object) -> int | None:
        """The capture time an event is measured at: an exchange's end, a connection's last packet."""
        if isinstance(event, Exchange):
            return event.response.ts if event.response is not None else event.ts
        if isinstance(event, ConnectionEnd):
            return event.last_ts
        return None

    def _exchange(self, exchange: Exchange) -> None:
        now = exchange.response.ts if exchange.response is not None else exchange.ts
        if now > self.now:
            self.now = now
        connection = self._connection(exchange, now)
        if self.shown is not None and not self.shown(exchange):
            return
        header = exchange.request_header
        if header is None:  # a response alone, a raw SASL token, a request whose header cannot be read
            labels: Labels = ("", "", "", "", connection.broker, connection.port)
            self._requests.add((*labels, exchange.status), 1, now)
            return
        key = header.api_key
        api = header.api_name or str(key)
        client = self.client_ids.label(header.client_id, now)
        software = self._software(self.clients.of(exchange), now)
        labels = (api, str(header.api_version), client, software, connection.broker, connection.port)
        self._requests.add((*labels, exchange.status), 1, now)
        version = self.versions.get((client, api), now)
        if version is None or header.api_version > version:
            if self.versions.put((client, api), header.api_version, now):
                self.families[m.API_VERSIONS.name].set((client, api), header.api_version, now)
        else:
            self.families[m.API_VERSIONS.name].set((client, api), version, now)
        request, response = fields(exchange.request), fields(exchange.response)
        service, latency = exchange.service, exchange.latency
        if service is not None and latency is not None:
            if key == ApiKey.FETCH and long_poll(exchange, LONG_POLL_FRACTION):
                self._long_poll.observe(labels, latency / SECOND, now)
            else:
                self._service.observe(labels, service / SECOND, now)
            self._queue.observe(labels, (exchange.queued or 0) / SECOND, now)
        errors = self._errors(exchange, labels, now)
        if response is not None:
            throttle = response.get("ThrottleTimeMs")
            if isinstance(throttle, int) and throttle > 0:
                self.families[m.THROTTLE.name].add(labels, throttle / 1000, now)
                self.families[m.THROTTLED.name].add(labels, 1, now)
        if key in GROUP_KEYS or key == ApiKey.TXN_OFFSET_COMMIT:
            self._group(exchange, key, request, header.client_id, now)
        elif key == ApiKey.SASL_HANDSHAKE and request is not None:
            mechanism = request.get("Mechanism")
            connection.sasl = mechanism[:40] if isinstance(mechanism, str) else ""
            self._count(exchange, connection, now)
        elif key == ApiKey.API_VERSIONS:
            self._count(exchange, connection, now)
        operation = OPERATIONS.get(key)
        if operation is None:
            return
        group = (self.group_of.get(header.client_id, now) or "") if header.client_id else ""
        if key == ApiKey.PRODUCE:
            self._produced(exchange, client, connection, now)
        elif request is not None and response is not None and not follower(request):
            self._fetched(exchange, request, response, client, group, connection, now)
        if latency is not None:
            topics: tuple[str, ...] = getattr(getattr(exchange.request, "body", None), "topics", ())
            topic = self.topics.label(topics[0], now) if len(topics) == 1 else ""
            name, kind = operation
            self.families[m.OPERATION_DURATION.name].observe(
                ("kafka", name, kind, topic, group if key == ApiKey.FETCH else "", errors, connection.broker, connection.port),
                latency / SECOND,
                now,
            )

    def _errors(self, exchange: Exchange, labels: Labels, now: int) -> str:
        """Count the response's error names; the first, for error.type where one error stands for the exchange."""
        body = getattr(exchange.response, "body", None)
        if not isinstance(body, Body) or not body.errors:
            return ""
        names = dict.fromkeys(error_name(e.code) for e in body.errors)
        errors = self.families[m.ERRORS.name]
        for name in names:
            errors.add((*labels, name), 1, now)
        return next(iter(names))

    def _produced(self, exchange: Exchange, client: str, connection: Connection, now: int) -> None:
        body = getattr(exchange.request, "body", None)
        if not isinstance(body, Body):
            return
        sent, size, relation = (self.families[x.name] for x in (m.SENT, m.PRODUCED_BYTES, m.PRODUCER_TOPIC))
        for placed in body.records:
            topic = self.topics.label(placed.topic, now)
            partition = "" if placed.partition is None else str(placed.partition)
            sent.add(("kafka", topic, partition, client), placed.records.data_count, now)
            size.add((topic, partition, client), placed.records.size, now)
            relation.set((client, connection.host, topic), 1, now)

    def _fetched(
        self, exchange: Exchange, request: Struct, response: Struct, client: str, group: str, connection: Connection, now: int
    ) -> None:
        lag, group_lag = self.families[m.LAG.name], self.families[m.GROUP_LAG.name]
        for name, index, struct, offset in fetched(request, response):
            high = struct.get("HighWatermark")
            behind = records_behind(offset, high)
            if behind is None or not isinstance(high, int):
                continue
            topic, number = self.topics.label(name, now), "" if index is None else str(index)
            lag.set((group, client, topic, number), behind, now)
            self.watermarks.put((topic, number), high, now)
            committed = self.committed.get((group, topic, number), now) if group else None
            if committed is not None:
                group_lag.set((group, topic, number), max(0, high - committed), now)
        body = getattr(exchange.response, "body", None)
        if not isinstance(body, Body):
            return
        consumed, size, relation = (self.families[x.name] for x in (m.CONSUMED, m.FETCHED_BYTES, m.CONSUMER_TOPIC))
        for placed in body.records:
            if not placed.records.batches:
                continue
            topic = self.topics.label(placed.topic, now)
            number = "" if placed.partition is None else str(placed.partition)
            consumed.add(("kafka", topic, number, client, group), placed.records.data_count, now)
            size.add((topic, number, client, group), placed.records.size, now)
            relation.set((client, connection.host, group, topic), 1, now)

    def _group(self, exchange: Exchange, key: int, request: Struct | None, client_id: str | None, now: int) -> None:
        """Whose group a client is in; a new generation (a rebalance); what a commit leaves the group's lag at."""
        name = request.get("GroupId") if request is not None else None
        if not isinstance(name, str):
            return
        group = self.groups.label(name, now)
        if client_id:
            self.group_of.put(client_id, group, now)
        followed = self.doctor.rebalances.groups.get(name)
        if followed is None:
            return
        if key == ApiKey.JOIN_GROUP and followed.generations:
            generation = max(followed.generations)
            if self.generations.get(group, now) != generation:
                self.generations.put(group, generation, now)
                self.families[m.REBALANCES.name].add((group,), 1, now)
                round_ = followed.rounds.get(generation)
                if round_ is not None:
                    self.families[m.MEMBERS.name].set((group,), len(round_.members), now)
            self.families[m.GENERATION.name].set((group,), generation, now)
        elif key in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT):
            self._committed(group, followed, now)

    def _committed(self, group: str, followed: Group, now: int) -> None:
        """What the group's commits leave its lag at, on each partition whose high watermark is known."""
        group_lag = self.families[m.GROUP_LAG.name]
        for (topic_name, partition), offset in followed.committed.items():
            if not isinstance(offset, int) or not isinstance(topic_name, str):
                continue
            topic, number = self.topics.label(topic_name, now), "" if partition is None else str(partition)
            self.committed.put((group, topic, number), offset, now)
            high = self.watermarks.get((topic, number), now)
            if high is not None:
                group_lag.set((group, topic, number), max(0, high - offset), now)

    # --- the client inventory -------------------------------------------------------------------------

    def _connection(self, exchange: Exchange, now: int) -> Connection:
        info = exchange.connection
        connection = self.connections.get(info.id)
        if connection is None:
            connection = self.connections[info.id] = Connection(
                self.hosts.label(info.client.address, now), self.brokers.label(info.broker.address, now), str(info.broker.port)
            )
        if connection.client_id is None and exchange.client_id:
            connection.client_id = exchange.client_id
            self._count(exchange, connection, now)
        elif connection.counted is None or (info.tls is not None and info.tls.version and connection.counted[-1] != info.tls.version):
            self._count(exchange, connection, now)
        return connection

    def _count(self, exchange: Exchange, connection: Connection, now: int) -> None:
        """Count the connection in the inventory series its labels name now (they grow as the connection tells more)."""
        software = self.clients.of(exchange)
        name, version = self._named(software)
        tls = exchange.connection.tls
        labels = (
            self.client_ids.label(connection.client_id, now),
            connection.host,
            self.software.label(name, now),
            version,
            connection.sasl,
            (tls.version or "") if tls is not None else "",
        )
        if labels == connection.counted:
            return
        inventory = self.families[m.CLIENTS.name]
        self._uncount(connection)
        inventory.add(labels, 1, now)
        connection.counted = labels

    def _uncount(self, connection: Connection) -> None:
        counted = connection.counted
        if counted is None:
            return
        series = self.families[m.CLIENTS.name].series.get(counted)
        if series is not None and series.value > 0:
            series.value -= 1

    def _ended(self, end: ConnectionEnd) -> None:
        connection = self.connections.pop(end.connection.id, None)
        if connection is not None:
            self._uncount(connection)

    def _software(self, software: Software | None, now: int) -> str:
        return "" if software is None else self.software.label(software.name, now)

    @staticmethod
    def _named(software: Software | None) -> tuple[str | None, str]:
        """(software name, version) as the client named them; an inferred library has no version."""
        if software is None:
            return None, ""
        version = software.version or ""
        return software.name.removesuffix(f" {version}") if version else software.name, version[:40]

    # --- time ----------------------------------------------------------------------------------------

    def capture(self, packets: int, size: int, drops: int, now: int) -> None:
        """The capture's totals so far: what was read, and what the kernel dropped."""
        for metric, value in ((m.PACKETS, packets), (m.CAPTURED_BYTES, size), (m.DROPS, drops)):
            self.families[metric.name].set((), value, now)

    def tick(self, now: int) -> None:
        """Time passed (the capture's clock): close the doctor's window when it is over, let go of what is idle."""
        if now > self.now:
            self.now = now
        if self.window_end is None:
            self.window_end = now + int(self.settings.window * SECOND)
            self.next_sweep = now + SWEEP_EVERY
            return
        if now >= self.window_end:
            self.close_window(now)
        if self.next_sweep is not None and now >= self.next_sweep:
            self.sweep(now - int(self.settings.idle * SECOND), now)
            self.next_sweep = now + SWEEP_EVERY

    def close_window(self, now: int) -> None:
        """The doctor's findings become the active ones, and a new doctor starts."""
        self.report = self.doctor.report()
        findings = self.families[m.FINDINGS.name]
        findings.series.clear()
        for finding in self.report.findings:
            findings.add((finding.id, finding.severity), finding.evidence.count, now)
        self.doctor = Doctor(self.settings.doctor, self.wanted, self.clients)
        self.window_end = now + int(self.settings.window * SECOND)

    def sweep(self, before: int, now: int) -> None:
        inventory = self.families[m.CLIENTS.name]
        for connection in self.connections.values():  # an open connection keeps its inventory line, however quiet
            if connection.counted is not None and connection.counted in inventory.series:
                inventory.series[connection.counted].last = now
        for name, f in self.families.items():
            if name not in (m.FINDINGS.name, m.PACKETS.name, m.CAPTURED_BYTES.name, m.DROPS.name):
                f.sweep(before)
        for budget in self.budgets:
            budget.sweep(before)
        for recent in (self.group_of, self.watermarks, self.committed, self.generations, self.versions):
            recent.sweep(before)

    # --- out -----------------------------------------------------------------------------------------

    def told(self) -> Iterator[str]:
        """Lines to print once: the first label value a budget turned away, the first series a metric folded."""
        for budget in self.budgets:
            if budget.told is not None and budget.kind not in self._told:
                self._told.add(budget.kind)
                yield budget.told
        for f in self.families.values():
            if f.folded and f.metric.name not in self._told:
                self._told.add(f.metric.name)
                yield (
                    f"{f.metric.prometheus} holds {f.most} series: new ones are counted in one labelled 'other' "
                    "(--metrics-series; kdissect_metrics_overflow_total counts them)"
                )

    def snapshot(self, now: int | None = None) -> Snapshot:
        now = self.now if now is None else now
        families = self.families
        families[m.SERIES.name].set((), sum(len(f.series) for f in families.values()), now)
        overflow = families[m.OVERFLOW.name]
        for budget in self.budgets:
            if budget.turned_away:
                overflow.set((budget.kind,), budget.turned_away, now)
        folded = sum(f.folded for f in families.values())
        if folded:
            overflow.set(("series",), folded, now)
        families[m.EVICTED.name].set((), sum(f.evicted for f in families.values()), now)
        return Snapshot(now, tuple(f.points() for f in families.values()))
