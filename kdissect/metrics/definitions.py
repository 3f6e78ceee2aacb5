"""Every metric the tap exports, named once: its OpenTelemetry name, kind, unit, attributes and meaning.

Names and attributes follow OpenTelemetry's semantic conventions where they define one (`messaging.*`, `server.*`,
`client.*`, `error.type`, `tls.protocol.version`); the rest are kdissect's (`kafka.*`, `kdissect.*`). Prometheus
sees the names its own OTLP receiver would give them (`prometheus_name`): dots become underscores, the unit is
spelled out as a suffix, counters end in `_total`; so a dashboard reads the same series whichever way they came.
docs/metrics.md lists them all (a test holds the two together).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["counter", "histogram", "gauge"]

# attributes (OpenTelemetry's where it names one)
API = "kafka.api.name"
VERSION = "kafka.api.version"
CLIENT_ID = "messaging.client.id"
SOFTWARE = "kafka.client.software"
BROKER = "server.address"
BROKER_PORT = "server.port"
STATUS = "kafka.request.status"
ERROR = "error.type"
SYSTEM = "messaging.system"
OPERATION = "messaging.operation.name"
OPERATION_TYPE = "messaging.operation.type"
TOPIC = "messaging.destination.name"
PARTITION = "messaging.destination.partition.id"
GROUP = "messaging.consumer.group.name"
CLIENT_ADDRESS = "client.address"
SOFTWARE_NAME = "kafka.client.software.name"
SOFTWARE_VERSION = "kafka.client.software.version"
SASL = "kafka.sasl.mechanism"
TLS = "tls.protocol.version"
FINDING = "kdissect.finding.id"
SEVERITY = "kdissect.finding.severity"
LABEL = "kdissect.label"

EXCHANGE = (API, VERSION, CLIENT_ID, SOFTWARE, BROKER, BROKER_PORT)
"""What every per-request metric is broken down by: the API and version, the client and its software, the broker."""

DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 30.0, 60.0)
"""Seconds: OpenTelemetry's advice for `messaging.client.operation.duration`, with three below 5 ms (a broker on the
same host answers in less) and two past 10 s (JoinGroups held for a rebalance, long polls of many seconds)."""


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    """The OpenTelemetry name."""
    kind: Kind
    unit: str
    """UCUM, as OpenTelemetry writes it: s, By, {request}."""
    attributes: tuple[str, ...]
    description: str

    @property
    def prometheus(self) -> str:
        """The name Prometheus' OTLP translation gives it: `messaging_client_operation_duration_seconds`."""
        return prometheus_name(self.name, self.unit, self.kind)


UNITS = {"s": "seconds", "ms": "milliseconds", "By": "bytes", "1": ""}


def prometheus_name(name: str, unit: str, kind: Kind) -> str:
    base = re.sub(r"[^a-zA-Z0-9_:]", "_", name)
    suffix = "" if unit.startswith("{") else UNITS.get(unit, re.sub(r"[^a-zA-Z0-9]", "_", unit))
    if suffix and not base.endswith("_" + suffix):
        base = f"{base}_{suffix}"
    return f"{base}_total" if kind == "counter" else base


def prometheus_label(attribute: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", attribute)


def _m(name: str, kind: Kind, unit: str, attributes: tuple[str, ...], description: str) -> Metric:
    return Metric(name, kind, unit, attributes, description)


REQUESTS = _m("kafka.requests", "counter", "{request}", (*EXCHANGE, STATUS), "Requests, by how they ended (ok, error, unanswered, ...).")
SERVICE = _m(
    "kafka.request.service.duration",
    "histogram",
    "s",
    EXCHANGE,
    "The broker's own time on a request: its latency less the time it waited in line behind earlier requests of its "
    "connection. Fetch long polls are left out (kafka.fetch.long_poll.duration).",
)
QUEUE = _m(
    "kafka.request.queue.duration",
    "histogram",
    "s",
    EXCHANGE,
    "Time a request waited in line on its connection for the broker to answer the one before (0 when the connection was idle).",
)
LONG_POLL = _m(
    "kafka.fetch.long_poll.duration",
    "histogram",
    "s",
    EXCHANGE,
    "Fetches that came back without records after most of their MaxWaitMs: the wait the consumer asked for, not broker time.",
)
OPERATION_DURATION = _m(
    "messaging.client.operation.duration",
    "histogram",
    "s",
    (SYSTEM, OPERATION, OPERATION_TYPE, TOPIC, GROUP, ERROR, BROKER, BROKER_PORT),
    "OpenTelemetry's client operation duration for Produce (send) and Fetch (receive): the latency the client saw, time "
    "in line and long polls included. The destination is set when the request names one topic.",
)
ERRORS = _m(
    "kafka.request.errors",
    "counter",
    "{error}",
    (*EXCHANGE, ERROR),
    "Responses carrying an error code, once per error name a response holds (error.type is Kafka's name for it).",
)
THROTTLE = _m(
    "kafka.request.throttle.time",
    "counter",
    "s",
    EXCHANGE,
    "Time brokers asked clients to hold back (ThrottleTimeMs of the responses): quotas at work.",
)
THROTTLED = _m("kafka.request.throttled", "counter", "{response}", EXCHANGE, "Responses with a ThrottleTimeMs above 0.")
SENT = _m(
    "messaging.client.sent.messages",
    "counter",
    "{message}",
    (SYSTEM, TOPIC, PARTITION, CLIENT_ID),
    "Records in Produce requests (transaction markers left out), by topic and partition.",
)
CONSUMED = _m(
    "messaging.client.consumed.messages",
    "counter",
    "{message}",
    (SYSTEM, TOPIC, PARTITION, CLIENT_ID, GROUP),
    "Records in Fetch responses to consumers (transaction markers left out), by topic and partition; the group is the "
    "one the client last joined or committed for.",
)
PRODUCED_BYTES = _m(
    "kafka.produced.bytes",
    "counter",
    "By",
    (TOPIC, PARTITION, CLIENT_ID),
    "Record batch bytes in Produce requests, by topic and partition.",
)
FETCHED_BYTES = _m(
    "kafka.fetched.bytes",
    "counter",
    "By",
    (TOPIC, PARTITION, CLIENT_ID, GROUP),
    "Record batch bytes in Fetch responses to consumers, by topic and partition.",
)
LAG = _m(
    "kafka.consumer.lag",
    "gauge",
    "{message}",
    (GROUP, CLIENT_ID, TOPIC, PARTITION),
    "The partition's high watermark less the offset the consumer fetched from, at its last Fetch.",
)
GROUP_LAG = _m(
    "kafka.consumer.group.lag",
    "gauge",
    "{message}",
    (GROUP, TOPIC, PARTITION),
    "The newest high watermark a Fetch told for the partition less the offset the group last committed for it.",
)
REBALANCES = _m("kafka.consumer.group.rebalances", "counter", "{rebalance}", (GROUP,), "Generations the coordinator announced (JoinGroup).")
GENERATION = _m("kafka.consumer.group.generation", "gauge", "{generation}", (GROUP,), "The group's newest generation id.")
MEMBERS = _m("kafka.consumer.group.members", "gauge", "{member}", (GROUP,), "Members the group's newest generation had.")
CLIENTS = _m(
    "kafka.client.connections",
    "gauge",
    "{connection}",
    (CLIENT_ID, CLIENT_ADDRESS, SOFTWARE_NAME, SOFTWARE_VERSION, SASL, TLS),
    "The client inventory: open connections by client id, host, the software it named (ApiVersions v3+) or was inferred "
    "to run, its SASL mechanism and TLS version.",
)
API_VERSIONS = _m(
    "kafka.client.api.version",
    "gauge",
    "1",
    (CLIENT_ID, API),
    "The client inventory's API versions: the newest version of each API a client used.",
)
PRODUCER_TOPIC = _m(
    "kafka.producer.topic",
    "gauge",
    "1",
    (CLIENT_ID, CLIENT_ADDRESS, TOPIC),
    "1 while a client produces to a topic; gone once it has been idle for the idle time.",
)
CONSUMER_TOPIC = _m(
    "kafka.consumer.topic",
    "gauge",
    "1",
    (CLIENT_ID, CLIENT_ADDRESS, GROUP, TOPIC),
    "1 while a client fetches records of a topic; gone once it has been idle for the idle time.",
)
FINDINGS = _m(
    "kdissect.doctor.findings",
    "gauge",
    "{exchange}",
    (FINDING, SEVERITY),
    "The doctor's findings of the last window (`--metrics-window`), by id and severity: what each counts (exchanges, "
    "or connections for the findings about connections).",
)
PACKETS = _m("kdissect.capture.packets", "counter", "{packet}", (), "Packets the tap read.")
CAPTURED_BYTES = _m("kdissect.capture.bytes", "counter", "By", (), "Their length on the wire.")
DROPS = _m(
    "kdissect.capture.kernel.drops",
    "counter",
    "{packet}",
    (),
    "Packets the kernel dropped because the tap did not read them in time (PACKET_STATISTICS); their connections have gaps.",
)
SERIES = _m("kdissect.metrics.series", "gauge", "{series}", (), "Series the tap holds (its memory).")
OVERFLOW = _m(
    "kdissect.metrics.overflow",
    "counter",
    "{value}",
    (LABEL,),
    "Measurements whose label value (a client id, a topic, ...) was counted as `other` because the top-N of its kind "
    "was full (by kind), or that went to an all-`other` series because their metric held its most (`series`).",
)
EVICTED = _m("kdissect.metrics.evicted", "counter", "{series}", (), "Series dropped after the idle time without a measurement.")

METRICS: tuple[Metric, ...] = (
    REQUESTS,
    SERVICE,
    QUEUE,
    LONG_POLL,
    OPERATION_DURATION,
    ERRORS,
    THROTTLE,
    THROTTLED,
    SENT,
    CONSUMED,
    PRODUCED_BYTES,
    FETCHED_BYTES,
    LAG,
    GROUP_LAG,
    REBALANCES,
    GENERATION,
    MEMBERS,
    CLIENTS,
    API_VERSIONS,
    PRODUCER_TOPIC,
    CONSUMER_TOPIC,
    FINDINGS,
    PACKETS,
    CAPTURED_BYTES,
    DROPS,
    SERIES,
    OVERFLOW,
    EVICTED,
)
