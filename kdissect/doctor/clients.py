"""Which client library each client runs: from what it says (ApiVersions v3+ names its software, KIP-511), else
inferred from its default client id or the ApiVersions version it sends, and then said to be inferred.

The doctor words its advice in that library's dialect (`dialects.py`) and the client inventory names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kdissect.doctor.facts import fields
from kdissect.events import Exchange
from kdissect.schema import ApiKey

MOST = 10_000
"""Client ids and connections remembered; past it, newer ones go without a name (counted by the inventory)."""

NAMED = {
    "apache-kafka-java": "java",
    "librdkafka": "librdkafka",
    "confluent-kafka-python": "librdkafka",
    "confluent-kafka-go": "librdkafka",
    "confluent-kafka-javascript": "librdkafka",
    "node-rdkafka": "librdkafka",
    "confluent-kafka-dotnet": "dotnet",
    "kafka-python": "kafka-python",
    "aiokafka": "kafka-python",
    "kafkajs": "kafkajs",
    "kgo": "franz-go",
    "franz-go": "franz-go",
    "sarama": "sarama",
}
"""ClientSoftwareName -> the dialect its settings are named in."""
DEFAULT_IDS = (
    (re.compile(r"rdkafka$"), "librdkafka", "librdkafka"),
    (re.compile(r"kafka-python-"), "kafka-python", "kafka-python"),
    (re.compile(r"aiokafka-"), "aiokafka", "kafka-python"),
    (re.compile(r"kafkajs$"), "KafkaJS", "kafkajs"),
    (re.compile(r"(producer|consumer)-(.+-)?\d+$"), "the Java client", "java"),
    (re.compile(r"sarama$"), "sarama", "sarama"),
    (re.compile(r"kgo$"), "franz-go", "franz-go"),
)
"""Client ids the libraries make when the application gives none: (pattern, library, dialect)."""
BY_API_VERSIONS = {
    0: ("aiokafka or kafka-python before 2.1", "kafka-python"),
}
"""The ApiVersions version a client without a software name sends -> (what it is, the dialect): Java, librdkafka and
kafka-python 3 send v3 and later, with their names; only v0 still tells a family (both name their settings alike).
v2 does not: KafkaJS sends it, and so does kafka-python pinned to an old `api_version`."""


@dataclass(frozen=True, slots=True)
class Software:
    name: str
    """As the client named itself, with its version, or the library it was inferred to be."""
    dialect: str | None
    inferred: str | None = None
    """How it was inferred (None when the client named itself)."""
    version: str | None = None
    """The version it named, which ends `name` (None when inferred, or not named)."""

    def __str__(self) -> str:
        return self.name if self.inferred is None else f"{self.name} ({self.inferred})"


class Clients:
    """The software of each connection and client id, as the exchanges tell it."""

    def __init__(self) -> None:
        self.by_connection: dict[int, Software] = {}
        self.by_client_id: dict[str, Software] = {}

    def exchange(self, exchange: Exchange) -> None:
        header = exchange.request_header
        if header is None or header.api_key != ApiKey.API_VERSIONS:
            return
        request = fields(exchange.request)
        name = request.get("ClientSoftwareName") if request is not None else None
        software: Software | None
        if isinstance(name, str) and name:
            given = request.get("ClientSoftwareVersion") if request is not None else None
            version = given.strip() if isinstance(given, str) and given.strip() else None
            software = Software(f"{name} {version}" if version else name, NAMED.get(name.lower()), None, version)
        else:
            software = self._inferred(header.client_id, header.api_version)
        if software is None:
            return
        if len(self.by_connection) < MOST:
            self.by_connection[exchange.connection.id] = software
        client_id = header.client_id
        if client_id and (client_id in self.by_client_id or len(self.by_client_id) < MOST):
            known = self.by_client_id.get(client_id)
            if known is None or known.inferred is not None:  # what a client says of itself wins over a guess
                self.by_client_id[client_id] = software

    @staticmethod
    def _inferred(client_id: str | None, api_versions: int) -> Software | None:
        for pattern, library, dialect in DEFAULT_IDS:
            if client_id and pattern.match(client_id):
                return Software(library, dialect, f"inferred from its default client id {client_id!r}")
        guess = BY_API_VERSIONS.get(api_versions)
        if guess is not None:
            return Software(guess[0], guess[1], f"inferred from ApiVersions v{api_versions}, which it sends without a software name")
        return None

    def of(self, exchange: Exchange) -> Software | None:
        software = self.by_connection.get(exchange.connection.id)
        return software if software is not None else self.by_client_id.get(exchange.client_id or "")

    def of_clients(self, client_ids: tuple[str, ...]) -> Software | None:
        """The one software a finding's clients share; None when they run several, or it is not known."""
        found = {self.by_client_id.get(c) for c in client_ids}
        if len(found) != 1:
            return None
        return found.pop()

    def ended(self, connection: int) -> None:
        self.by_connection.pop(connection, None)
