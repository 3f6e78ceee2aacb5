"""Protocol and clients: who speaks which versions, what Kafka 4.0 will refuse, versions the broker did not
offer, connection churn, metadata storms, requests left unanswered, failed authentication."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import among, codes, each, fields
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import KEEP_CLIENTS, Kept, Scope, Trail, Window, made, plural
from kdissect.events import ConnectionEnd, Exchange
from kdissect.schema import ApiKey, ErrorCode

MINUTE = 60_000_000_000

REMOVED_IN_4 = {0: 2, 1: 3, 2: 0, 8: 1, 9: 0, 19: 1, 20: 0, 23: 1, 29: 0, 30: 0, 31: 0, 32: 0, 34: 0, 35: 0, 38: 0, 39: 0, 40: 0, 41: 0}
"""API key -> the highest version Apache Kafka 4.0 no longer accepts (KIP-896): the `deprecatedVersions` of
Kafka 3.9's message specs, all from version 0."""

CLIENTS = Rule(
    "protocol.client",
    "info",
    "A client's software, client ids and the API versions it used.",
    "ApiVersions v3 and later carry the client's software name and version (KIP-511); with the client ids "
    "and the versions of each API it used, this is the inventory to check before upgrading brokers.",
    "Nothing to do; compare with protocol.removed-in-kafka-4 before moving to Kafka 4.0.",
    (Threshold("threshold", 1, "exchanges", "a client with at least this many exchanges"),),
)
REMOVED = Rule(
    "protocol.removed-in-kafka-4",
    "warning",
    "A client uses API versions that Apache Kafka 4.0 removed (KIP-896).",
    "Kafka 4.0 brokers refuse the oldest versions of many APIs (Produce v0-2, Fetch v0-3, ListOffsets v0, "
    "OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1, ...). A client that still sends them breaks when "
    "the cluster is upgraded, even though it works today.",
    "Upgrade the client library (Java 2.1+, librdkafka 1.x+, recent kafka-python, sarama, franz-go) or remove "
    "its version pin ({version_pin}).",
    (Threshold("threshold", 1, "requests", "at least this many requests at a removed version"),),
)
UNSUPPORTED = Rule(
    "protocol.unsupported-version",
    "error",
    "Requests refused with UNSUPPORTED_VERSION.",
    "The broker does not implement the request's version. Outside ApiVersions (where it is the normal "
    "negotiation: the broker answers with the versions it has and the client retries) it means the client did "
    "not negotiate, or is pinned to a version the broker dropped; the request fails.",
    "Let the client negotiate versions ({version_pin}), or upgrade the broker or the client so that they share a version.",
    (Threshold("threshold", 1, "requests", "at least this many requests refused"),),
)
ABOVE = Rule(
    "protocol.above-advertised",
    "warning",
    "Requests at versions the broker did not advertise on that connection.",
    "The broker's ApiVersions response lists, per API, the versions it accepts. A request above the maximum "
    "(or below the minimum) is one the broker may reject or, worse, misread.",
    "Find why the client ignored the negotiation: a version pin, a client bug, a proxy in between that changes the versions.",
    (Threshold("threshold", 1, "requests", "at least this many requests outside the advertised range"),),
)
CHURN = Rule(
    "protocol.connection-churn",
    "warning",
    "A client opens connections at a high rate.",
    "Every new connection costs a TCP handshake, ApiVersions, often SASL/TLS and Metadata, and broker "
    "memory; clients created per message or per request (instead of one long-lived client) or crashing "
    "in a loop show up as churn.",
    "Create one producer/consumer per process and reuse it; look at connections.max.idle.ms and at "
    "{reconnect_backoff} for clients that reconnect after errors.",
    (Threshold("threshold", 30, "connections per minute", "more new connections than this within any 60 s, for one client id"),),
)
METADATA_STORM = Rule(
    "protocol.metadata-storm",
    "warning",
    "A client asks for metadata at a high rate.",
    "Clients refresh metadata when they find it stale (unknown topics, leader changes) or on a timer. Many "
    "Metadata requests a minute mean a client that keeps failing: a missing topic, an unstable leader, a "
    "bootstrap loop. On large clusters each response is big and loads the controller.",
    "Look for the errors that trigger the refreshes (producer.unknown-topic, producer.not-leader); {metadata_age} on the client.",
    (Threshold("threshold", 120, "requests per minute", "more Metadata requests than this within any 60 s, for one client id"),),
)
NEGOTIATION = Rule(
    "protocol.version-negotiation",
    "info",
    "ApiVersions answered UNSUPPORTED_VERSION: the normal version negotiation.",
    "A client opens a connection with the newest ApiVersions it knows; a broker that does not know that version "
    "answers UNSUPPORTED_VERSION with the versions it has (in the v0 layout), and the client asks again at one of "
    "them. It is how clients and brokers of different ages agree, not a failure.",
    "Nothing to do.",
    (),
    expected=True,
)
SASL_FAILED = Rule(
    "protocol.sasl-failed",
    "error",
    "SASL authentication failed.",
    "SaslHandshake or SaslAuthenticate answered with an error (a mechanism the broker does not enable, wrong "
    "credentials, an expired token): the client cannot work and usually retries in a loop.",
    "Check the client's SASL mechanism against the broker's sasl.enabled.mechanisms, and the credentials; "
    "the broker's authentication log tells which principal failed.",
    (Threshold("threshold", 1, "exchanges", "at least this many failed authentications"),),
)


def removed(api_key: int | None, version: int | None) -> bool:
    return api_key in REMOVED_IN_4 and version is not None and version <= REMOVED_IN_4[api_key]


class Protocol(Family):
    RULES = (CLIENTS, REMOVED, UNSUPPORTED, NEGOTIATION, ABOVE, CHURN, METADATA_STORM, SASL_FAILED)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.inventory: dict[str, dict] = {}
        """Client (its software, or its client id) -> its client ids, APIs and versions, exchanges."""
        self.inventory_trails: dict[str, Trail] = {}
        self.removed: dict[str, Trail] = {}
        self.removed_versions: dict[str, set[tuple[int, int]]] = {}
        self.unsupported = self.trail("api != ApiVersions and error == UNSUPPORTED_VERSION")
        self.negotiated = self.trail("api == ApiVersions and error == UNSUPPORTED_VERSION")
        self.advertised: dict[int, dict[int, tuple[int, int]]] = {}
        self.above = self.trail()
        self.started: set[int] = set()
        self.churn: dict[str, Window] = {}
        self.churn_trails: dict[str, Trail] = {}
        self.metadata: dict[str, Window] = {}
        self.metadata_trails: dict[str, Trail] = {}
        self.sasl = self.trail("api in {SaslHandshake, SaslAuthenticate} and error")
        self.names: dict[int, str] = {}
        """API key -> its name in the run's catalogue, as the headers told it."""
        self.clients_kept = Kept(KEEP_CLIENTS, "client ids: exchanges not followed per client")
        self.kept.append(self.clients_kept)

    def exchange(self, exchange: Exchange) -> None:
        header, connection = exchange.request_header, exchange.connection.id
        if header is None:
            return
        key, version, client_id = header.api_key, header.api_version, header.client_id
        if key == ApiKey.API_VERSIONS:
            self._api_versions(exchange)
        who = client_id or "(none)"
        if header.api_name is not None:
            self.names[key] = header.api_name
        per_client = self.clients_kept.admits(who)  # the inventory, churn and metadata tables are per client id
        if per_client:
            software = self.clients.of(exchange)
            name = f"{software} client" if software is not None else f"client id {who}"
            client = made(self.inventory, name, dict)
            if not client:
                client.update(ids=set(), apis={}, exchanges=0)
            client["exchanges"] += 1
            client["ids"].add(who)
            client["apis"].setdefault(key, set()).add(version)
            made(self.inventory_trails, name, Trail, self.scope).add(exchange)
            if removed(key, version):
                made(self.removed, name, Trail, self.scope).add(exchange)
                self.removed_versions.setdefault(name, set()).add((key, version))
        answer = codes(exchange.response)
        if ErrorCode.UNSUPPORTED_VERSION in answer:
            if key == ApiKey.API_VERSIONS:
                self.negotiated.add(exchange)
                self.claim(exchange, NEGOTIATION, "UNSUPPORTED_VERSION")
            else:
                self.unsupported.add(exchange)
                self.claim(exchange, UNSUPPORTED, "UNSUPPORTED_VERSION")
        if key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE) and answer:
            self.sasl.add(exchange)
            self.claim(exchange, SASL_FAILED)
        bounds = self.advertised.get(connection, {}).get(key)
        if bounds is not None and not bounds[0] <= version <= bounds[1]:
            self.above.add(exchange)
        if connection not in self.started:
            self.started.add(connection)
            if per_client and made(self.churn, who, Window, MINUTE).add(exchange.ts) > self.threshold(CHURN):
                made(self.churn_trails, who, Trail, self.scope).add(exchange)
        if per_client and key == ApiKey.METADATA:
            if made(self.metadata, who, Window, MINUTE).add(exchange.ts) > self.threshold(METADATA_STORM):
                made(self.metadata_trails, who, Trail, self.scope).add(exchange)

    def _api_versions(self, exchange: Exchange) -> None:
        response = fields(exchange.response)
        if response is not None and response.get("ErrorCode") == 0:
            self.advertised[exchange.connection.id] = {
                entry.get("ApiKey"): (entry.get("MinVersion"), entry.get("MaxVersion")) for entry in each(response, "ApiKeys")
            }

    def ended(self, end: ConnectionEnd) -> None:
        """What was kept per connection goes with it."""
        self.advertised.pop(end.connection.id, None)
        self.started.discard(end.connection.id)

    def findings(self) -> Iterator[Finding]:
        shared = {i for a, b in combinations(self.inventory.values(), 2) for i in a["ids"] & b["ids"]}
        """Client ids more than one software used: a filter by client id would mix them."""
        for name, client in sorted(self.inventory.items()):
            trail = self.inventory_trails[name]
            if trail and client["exchanges"] >= self.threshold(CLIENTS):
                apis = ", ".join(f"{self.names.get(k, k)} v{_versions(v)}" for k, v in sorted(client["apis"].items()))
                ids = sorted(client["ids"])
                named = "" if name.startswith("client id ") else f" (client ids {', '.join(ids)})"
                trail.expr = among("client_id", ids) if "(none)" not in ids and not shared & set(ids) else None
                yield CLIENTS.finding(f"{plural(trail.told, 'exchange')} of {name}{named}: {apis}", trail.evidence())
        for name, trail in sorted(self.removed.items()):
            if trail and trail.count >= self.threshold(REMOVED):
                used = sorted(self.removed_versions[name])
                versions = ", ".join(f"{self.names.get(k, k)} v{v}" for k, v in used)
                ids = sorted(self.inventory[name]["ids"])
                if "(none)" not in ids:
                    removed_versions = " or ".join(f"(api_key == {k} and version == {v})" for k, v in used)
                    trail.expr = f"{among('client_id', ids)} and ({removed_versions})"
                yield REMOVED.finding(
                    f"{plural(trail.told, 'request')} of {name} at versions Kafka 4.0 removed: {versions}", trail.evidence()
                )
        if self.unsupported and self.unsupported.count >= self.threshold(UNSUPPORTED):
            yield UNSUPPORTED.finding(
                f"{plural(self.unsupported.told, 'request')} refused with UNSUPPORTED_VERSION", self.unsupported.evidence()
            )
        if self.negotiated:
            yield NEGOTIATION.finding(
                f"{plural(self.negotiated.told, 'ApiVersions request')} answered UNSUPPORTED_VERSION: the client then asked at a "
                "version the broker has",
                self.negotiated.evidence(),
            )
        if self.above and self.above.count >= self.threshold(ABOVE):
            yield ABOVE.finding(f"{plural(self.above.told, 'request')} at versions the broker did not advertise", self.above.evidence())
        if self.sasl and self.sasl.count >= self.threshold(SASL_FAILED):
            yield SASL_FAILED.finding(f"{plural(self.sasl.told, 'authentication')} failed", self.sasl.evidence())
        for who, trail in sorted(self.churn_trails.items()):
            if trail:
                yield CHURN.finding(
                    f"{plural(trail.told, 'connection')} opened by {who} past the rate: up to {self.churn[who].peak} new ones a minute",
                    trail.evidence(),
                )
        for who, trail in sorted(self.metadata_trails.items()):
            if trail:
                yield METADATA_STORM.finding(
                    f"{plural(trail.told, 'Metadata request')} by {who} past the rate: up to {self.metadata[who].peak} a minute",
                    trail.evidence(),
                )


def _versions(versions: set[int]) -> str:
    ordered = sorted(versions)
    return (
        str(ordered[0])
        if len(ordered) == 1
        else f"{ordered[0]}-{ordered[-1]}"
        if ordered[-1] - ordered[0] + 1 == len(ordered)
        else ",".join(map(str, ordered))
    )
