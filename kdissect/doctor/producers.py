"""Producers and quotas: throttling, produce to partitions without a leader or topics that do not exist,
duplicate and out-of-order sends, tiny batches, oversized ones, acks=0, aborted transactions."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import broker, codes, each, fields, topic_of, who
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding, Severity
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import KEEP_CLIENTS, KEEP_GROUPS, Kept, Scope, Trail, plural, span
from kdissect.events import Exchange
from kdissect.records.values import RecordBatch
from kdissect.schema import ApiKey, ErrorCode, error_name
from kdissect.schema.tree import Struct

SECOND = 1_000_000_000
KEEP_SEQUENCES = 100_000
"""Produce batches remembered to spot a second send of the same one; older ones are forgotten."""

THROTTLED = Rule(
    "client.throttled",
    "warning",
    "Brokers throttled clients (ThrottleTimeMs > 0).",
    "A broker that finds a client over its quota (produce or fetch bytes per second, request time) answers "
    "with a ThrottleTimeMs and mutes the connection for that long: the client slows down whatever its settings "
    "say. Throughput drops and latencies grow with no error anywhere.",
    "Check the quotas for these client ids and users (kafka-configs --describe --entity-type clients/users), "
    "and whether the client's rate is expected; spread the load over more client ids or raise the quota.",
    (),
)
UNKNOWN_TOPIC = Rule(
    "producer.unknown-topic",
    "warning",
    "Requests for topics or partitions the cluster does not have.",
    "UNKNOWN_TOPIC_OR_PARTITION in Metadata or Produce means the topic does not exist (or not yet on this "
    "broker). A producer keeps asking for metadata and holds its records until delivery.timeout.ms / "
    "message.timeout.ms, then fails them.",
    "Create the topic, or allow auto creation on the broker (auto.create.topics.enable) and the client "
    "({auto_create}); check the topic name for typos.",
    (Threshold("threshold", 1, "answers", "at least this many topics answered UNKNOWN_TOPIC_OR_PARTITION"),),
)
NOT_LEADER = Rule(
    "producer.not-leader",
    "warning",
    "Requests sent to a broker that is not the partition's leader.",
    "NOT_LEADER_OR_FOLLOWER means the client's metadata is stale: leadership moved (a broker restarted, a "
    "reassignment, preferred-leader election). The client refreshes metadata and retries; many of them mean "
    "unstable leadership.",
    "Look at broker restarts and ISR changes in the same window; {metadata_age} on the client.",
    (Threshold("threshold", 1, "answers", "at least this many partitions answered NOT_LEADER_OR_FOLLOWER"),),
)
DUPLICATE = Rule(
    "producer.duplicate-send",
    "warning",
    "Idempotent producers sent batches again that an earlier request carried.",
    "An idempotent producer numbers its batches (producer id, epoch, base sequence). The same numbers in a second "
    "request are a retry: the first request's answer did not come in time (a timeout, a connection lost), so the "
    "producer waited a full request timeout and sent the batch again. The broker keeps one copy.",
    "Compare {request_timeout} with the Produce latencies of the broker (the first sends' answers may still have "
    "come); look for network stalls and broker pauses at those times.",
    (Threshold("threshold", 1, "batches", "at least this many batches sent again"),),
)
SEQUENCE_REFUSED = Rule(
    "producer.sequence-refused",
    "warning",
    "Batches the broker refused for their sequence number.",
    "DUPLICATE_SEQUENCE_NUMBER answers a batch the broker already wrote (a retry of one whose first answer was "
    "lost): the copy is dropped, nothing is written twice. OUT_OF_ORDER_SEQUENCE_NUMBER means batches were lost "
    "between the last one the broker has and this one: the producer must reset, and records may be lost.",
    "Duplicates follow from resends (producer.duplicate-send): fix those. Out-of-order answers: look for lost "
    "requests and producer restarts sharing a producer id.",
    (),
)
INIT_REFUSED = Rule(
    "producer.init-producer-id-refused",
    "error",
    "Producers whose InitProducerId the broker refused: they never became idempotent or transactional.",
    "An idempotent or transactional producer starts by asking the broker for a producer id (InitProducerId). "
    "Refused, it cannot number its batches: a transactional producer cannot begin a transaction at all, and an "
    "idempotent one either stops (its records fail) or, in some clients, goes on without idempotence, where a retry "
    "can write a record twice.",
    "The error's meaning is in the title. UNKNOWN_SERVER_ERROR for an old InitProducerId version means the broker "
    "does not support it: upgrade the client or lift its version pin ({version_pin}), or turn {idempotence} off "
    "knowingly.",
    (),
)
NOT_IDEMPOTENT = Rule(
    "producer.not-idempotent",
    "warning",
    "Producers that asked for idempotence, were refused, and went on producing without it.",
    "After its InitProducerId was refused, the producer sent its batches with producer id -1: the broker cannot "
    "tell a retry from a new batch, so a batch sent again after a timeout is written twice.",
    "Fix the refusal (producer.init-producer-id-refused); until then a retry can duplicate records.",
    (),
)
TINY_BATCHES = Rule(
    "producer.tiny-batches",
    "info",
    "Producers send batches of very few records.",
    "Each Produce request carries one batch per partition; batches of one or two records cost a request, a "
    "log append and a replication round each, and compress badly. Throughput is then bound by requests, not bytes.",
    "Raise {linger} (5 to 50 ms) so that records wait for company, and {batch_size} if batches fill up.",
    (
        Threshold("threshold", 2, "records per batch", "an average of at most this many records per batch"),
        Threshold("batches", 100, "batches", "from a client that sent at least this many batches"),
        Threshold("close_ms", 20, "ms", "Produce requests sent within this of the one before: records a linger would have batched"),
        Threshold("rate", 50, "records per second", "a client producing at least this many: a warning (fewer: info)"),
    ),
)
TOO_LARGE = Rule(
    "producer.too-large",
    "error",
    "Batches refused as too large.",
    "MESSAGE_TOO_LARGE or RECORD_LIST_TOO_LARGE: a batch exceeds the topic's max.message.bytes (or the broker's "
    "message.max.bytes). The producer fails these records; they are not written.",
    "Raise max.message.bytes on the topic (and replica.fetch.max.bytes / fetch sizes to match), lower the "
    "producer's {batch_size}, or compress.",
    (Threshold("threshold", 1, "answers", "at least this many partitions refused"),),
)
ACKS_ZERO = Rule(
    "producer.acks-zero",
    "info",
    "Produce requests with acks=0: nobody learns whether they were written.",
    "With acks=0 the broker sends no response: a record lost to a leader change, a full disk or a refused "
    "batch is lost silently, and the producer's retries never happen.",
    "Use acks=all (with {idempotence}) unless losing records is acceptable.",
    (Threshold("threshold", 1, "requests", "at least this many acks=0 Produce requests"),),
)
ABORTED = Rule(
    "producer.aborted-transactions",
    "info",
    "Transactions were aborted.",
    "An aborted transaction's records stay in the log, marked aborted: read_committed consumers skip them, "
    "read_uncommitted ones see them. Many aborts mean producers that fail mid-transaction (timeouts, fencing "
    "by a newer instance with the same transactional.id).",
    "Look at why the producer aborts: transaction.timeout.ms against its processing time, errors before "
    "EndTxn, two instances sharing a transactional.id.",
    (Threshold("threshold", 1, "aborts", "at least this many EndTxn requests with Committed false"),),
)
LONG_TRANSACTION = Rule(
    "producer.long-transaction",
    "warning",
    "Transactions that stayed open a long time.",
    "A transaction is open from its first AddPartitionsToTxn or AddOffsetsToTxn to its EndTxn. While it is "
    "open, read_committed consumers of its partitions cannot read past its first record (the last stable offset "
    "stops there), so their lag grows for every producer on those partitions; past transaction.timeout.ms the "
    "coordinator aborts it.",
    "Commit more often (fewer records per transaction), check transaction.timeout.ms, and look for a producer "
    "that hangs between its sends and commitTransaction.",
    (Threshold("threshold", 60, "seconds", "a transaction open at least this long (or still open at the end of the capture)"),),
)


def transactional_ids(exchange: Exchange) -> list[str]:
    """The transactional ids an AddPartitionsToTxn (any version) or AddOffsetsToTxn request opens or extends."""
    request = fields(exchange.request)
    if request is None:
        return []
    named = [request.get("TransactionalId"), request.get("V3AndBelowTransactionalId")]
    named += [t.get("TransactionalId") for t in each(request, "Transactions")]
    return [t for t in named if isinstance(t, str)]


class Client:
    """One producing client: its batches and records, how close its requests came, its InitProducerId attempts."""

    __slots__ = (
        "produced",
        "batches",
        "records",
        "requests",
        "close",
        "first_ts",
        "last_ts",
        "init",
        "refused",
        "refusals",
        "started",
        "after",
    )

    def __init__(self, ts: int, produced: Trail) -> None:
        self.produced = produced
        """Its Produce requests: tiny batches' evidence."""
        self.batches = self.records = self.requests = self.close = 0
        self.first_ts = self.last_ts = ts
        self.init: Trail | None = None
        """Its refused InitProducerId requests."""
        self.refused = False
        self.refusals: dict[int, int] = {}
        self.started = False
        """An InitProducerId of it was answered with a producer id."""
        self.after: Trail | None = None
        """Its Produce requests with producer id -1 after a refusal."""


class Producers(Family):
    RULES = (
        THROTTLED,
        UNKNOWN_TOPIC,
        NOT_LEADER,
        INIT_REFUSED,
        NOT_IDEMPOTENT,
        DUPLICATE,
        SEQUENCE_REFUSED,
        TINY_BATCHES,
        TOO_LARGE,
        ACKS_ZERO,
        ABORTED,
        LONG_TRANSACTION,
    )

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.throttled = self.trail("response.ThrottleTimeMs > 0")
        self.throttled_by: dict[tuple[str, str], int] = {}
        self.unknown = self.trail("api in {Metadata, Produce} and error == UNKNOWN_TOPIC_OR_PARTITION")
        self.metadata_after = 0
        self.not_leader = self.trail("error == NOT_LEADER_OR_FOLLOWER")
        self.duplicate = self.trail()
        self.resent = 0
        self.refused = self.trail("api == Produce and error in {DUPLICATE_SEQUENCE_NUMBER, OUT_OF_ORDER_SEQUENCE_NUMBER}")
        self.refused_codes: dict[int, int] = {}
        self.sequences: dict[tuple, int] = {}
        self.producers: dict[str, Client] = {}
        self.too_large = self.trail("api == Produce and error in {MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE}")
        self.acks_zero = self.trail("api == Produce and request.Acks == 0")
        self.ends = [0, 0]
        """EndTxn requests: [committed, aborted]."""
        self.aborted = self.trail("api == EndTxn and request.Committed == false")
        self.open: dict[str, Exchange] = {}
        """Transactional id -> the exchange that opened its current transaction."""
        self.long = self.trail()
        self.longest = 0
        self.last_ts = 0
        self.clients_kept = Kept(KEEP_CLIENTS, "producing client ids: exchanges not followed per client")
        self.throttles_kept = Kept(KEEP_GROUPS, "throttled client and broker pairs: throttles not told per client")
        self.transactions_kept = Kept(KEEP_GROUPS, "open transactions: transactions not timed")
        self.kept += [self.clients_kept, self.throttles_kept, self.transactions_kept]

    def _client(self, exchange: Exchange) -> Client:
        name = exchange.client_id or f"connection {exchange.connection.id}"
        client = self.producers.get(name)
        if client is None:  # past the bound, a client of the moment: followed for this exchange only, never told
            client = Client(exchange.ts, self.trail(f"api == Produce and {who(name)}"))
            if self.clients_kept.admits(name):
                self.producers[name] = client
        return client

    def exchange(self, exchange: Exchange) -> None:
        response = fields(exchange.response)
        if response is not None:
            throttle = response.get("ThrottleTimeMs")
            if isinstance(throttle, int) and throttle > 0:
                self.throttled.add(exchange)
                who = (exchange.client_id or "?", broker(exchange))
                if self.throttles_kept.admits(who):
                    self.throttled_by[who] = max(self.throttled_by.get(who, 0), throttle)
        answer = codes(exchange.response)
        if ErrorCode.NOT_LEADER_OR_FOLLOWER in answer:
            self.not_leader.add(exchange)
            self.claim(exchange, NOT_LEADER, "NOT_LEADER_OR_FOLLOWER")
        key = exchange.api_key
        self.last_ts = max(self.last_ts, exchange.ts)
        if key in (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN):
            for transaction in transactional_ids(exchange):
                if transaction not in self.open and self.transactions_kept.admits(transaction):
                    self.open[transaction] = exchange
        if key == ApiKey.METADATA:
            if self.unknown.count:
                self.metadata_after += 1
            for topic in each(response, "Topics"):
                if topic.get("ErrorCode") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    self.unknown.add(exchange, None, topic_of(topic))
                    self.claim(exchange, UNKNOWN_TOPIC, "UNKNOWN_TOPIC_OR_PARTITION")
        elif key == ApiKey.PRODUCE:
            self._produce(exchange, response)
        elif key == ApiKey.INIT_PRODUCER_ID:
            self._init(exchange, response, answer)
        elif key == ApiKey.END_TXN:
            request = fields(exchange.request)
            if request is not None:
                opened = self.open.pop(request.get("TransactionalId"), None)
                self.transactions_kept.release(request.get("TransactionalId"))
                if opened is not None:
                    self._transaction(opened, exchange.ts, exchange)
                committed = bool(request.get("Committed"))
                self.ends[not committed] += 1
                if not committed:
                    self.aborted.add(exchange)

    def _init(self, exchange: Exchange, response: Struct | None, answer: list[int]) -> None:
        client = self._client(exchange)
        if answer:
            client.refused = True
            client.init = client.init or self.trail()
            client.init.add(exchange)
            for c in answer:
                client.refusals[c] = client.refusals.get(c, 0) + 1
            if self.producers.get(exchange.client_id or f"connection {exchange.connection.id}") is client:  # else never told
                self.claim(exchange, INIT_REFUSED)
        elif response is not None and isinstance(response.get("ProducerId"), int) and response.get("ProducerId") >= 0:
            client.started = True

    def _produce(self, exchange: Exchange, response: Struct | None) -> None:
        request = fields(exchange.request)
        if request is None:
            return
        if request.get("Acks") == 0:
            self.acks_zero.add(exchange)
        client = self._client(exchange)
        client.produced.add(exchange)
        close = exchange.ts - client.last_ts <= self.threshold(TINY_BATCHES, "close_ms") * 1e6 and client.requests
        client.requests += 1
        client.close += bool(close)
        client.last_ts = exchange.ts
        for topic in each(response, "Responses"):
            name = topic_of(topic)
            for partition in each(topic, "PartitionResponses"):
                code, index = partition.get("ErrorCode"), partition.get("Index")
                if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    self.unknown.add(exchange, None, name, index)
                    self.claim(exchange, UNKNOWN_TOPIC, "UNKNOWN_TOPIC_OR_PARTITION")
                elif code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
                    self.too_large.add(exchange, None, name, index)
                    self.claim(exchange, TOO_LARGE, error_name(code))
                elif code in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                    self.refused.add(exchange, None, name, index)
                    self.refused_codes[code] = self.refused_codes.get(code, 0) + 1
                    self.claim(exchange, SEQUENCE_REFUSED, error_name(code))
        body = getattr(exchange.request, "body", None)
        unnumbered: list[tuple[str | None, int | None]] = []  # (topic, partition)
        for placed in getattr(body, "records", ()):
            for batch in placed.records.batches:
                client.batches += 1
                client.records += batch.record_count if isinstance(batch, RecordBatch) else 1
                if not isinstance(batch, RecordBatch):
                    continue
                if batch.producer_id >= 0 and batch.base_sequence >= 0:
                    if self._again(exchange, placed.topic, placed.partition, batch):
                        self.resent += 1
                        self.duplicate.add(exchange, None, placed.topic, placed.partition)
                elif batch.producer_id < 0:
                    unnumbered.append((placed.topic, placed.partition))
        if unnumbered and client.refused:
            client.after = client.after or self.trail()
            for place in unnumbered:
                client.after.add(exchange, None, *place)

    def _transaction(self, opened: Exchange, end: int, closing: Exchange | None) -> None:
        if end - opened.ts >= self.threshold(LONG_TRANSACTION) * SECOND:
            self.longest = max(self.longest, end - opened.ts)
            self.long.add(opened)
            if closing is not None:
                self.long.add(closing)

    def _again(self, exchange: Exchange, topic: str | None, partition: int | None, batch: RecordBatch) -> bool:
        """Whether an earlier Produce request carried this batch (same producer id, epoch, base sequence)."""
        key = (batch.producer_id, batch.producer_epoch, batch.base_sequence, topic, partition)
        if key in self.sequences:
            return self.sequences[key] != exchange.id
        if len(self.sequences) >= KEEP_SEQUENCES:
            del self.sequences[next(iter(self.sequences))]
        self.sequences[key] = exchange.id
        return False

    def findings(self) -> Iterator[Finding]:
        if self.throttled:
            worst = ", ".join(f"{c} by {b} up to {ms} ms" for (c, b), ms in sorted(self.throttled_by.items(), key=lambda i: -i[1])[:3])
            yield THROTTLED.finding(f"{plural(self.throttled.told, 'response')} throttled: {worst}", self.throttled.evidence())
        if self.unknown and self.unknown.count >= self.threshold(UNKNOWN_TOPIC):
            topics = ", ".join(sorted({t for t, _ in self.unknown.partitions})) or "?"
            yield UNKNOWN_TOPIC.finding(
                f"{plural(self.unknown.told, 'answer')} UNKNOWN_TOPIC_OR_PARTITION for {topics} "
                f"({plural(self.metadata_after, 'Metadata request')} after the first)",
                self.unknown.evidence(),
            )
        if self.not_leader and self.not_leader.count >= self.threshold(NOT_LEADER):
            yield NOT_LEADER.finding(
                f"{plural(self.not_leader.told, 'exchange')} answered NOT_LEADER_OR_FOLLOWER", self.not_leader.evidence()
            )
        yield from self._init_findings()
        if self.duplicate and self.resent >= self.threshold(DUPLICATE):
            yield DUPLICATE.finding(
                f"{plural(self.duplicate.told, 'Produce request')} sent again {plural(self.resent, 'batch', 'batches')} an earlier "
                "request carried",
                self.duplicate.evidence(),
            )
        if self.refused:
            told = ", ".join(f"{error_name(c)}×{n}" for c, n in sorted(self.refused_codes.items()))
            yield SEQUENCE_REFUSED.finding(
                f"{plural(self.refused.told, 'Produce request')} refused by sequence number: {told}", self.refused.evidence()
            )
        yield from self._tiny()
        if self.too_large and self.too_large.count >= self.threshold(TOO_LARGE):
            yield TOO_LARGE.finding(f"{plural(self.too_large.told, 'Produce request')} refused as too large", self.too_large.evidence())
        if self.acks_zero and self.acks_zero.count >= self.threshold(ACKS_ZERO):
            yield ACKS_ZERO.finding(f"{plural(self.acks_zero.told, 'Produce request')} with acks=0", self.acks_zero.evidence())
        for opened in self.open.values():  # still open when the capture ended
            self._transaction(opened, self.last_ts, None)
        self.open.clear()
        if self.long:
            yield LONG_TRANSACTION.finding(
                f"{plural(self.long.told, 'exchange')} opened or ended transactions open up to {span(self.longest)}", self.long.evidence()
            )
        committed, aborted = self.ends
        if aborted >= self.threshold(ABORTED) and self.aborted:
            yield ABORTED.finding(
                f"{plural(self.aborted.told, 'EndTxn request')} aborted its transaction, of "
                f"{plural(committed + aborted, 'transaction')} ended ({100 * aborted / (committed + aborted):.0f} %)",
                self.aborted.evidence(),
            )

    def _init_findings(self) -> Iterator[Finding]:
        for name, client in sorted(self.producers.items()):
            if client.init is None or not client.init:
                continue
            refusals = ", ".join(f"{error_name(c)}×{n}" for c, n in sorted(client.refusals.items()))
            if client.started:
                yield INIT_REFUSED.finding(
                    f"{plural(client.init.told, 'InitProducerId request')} by {name} refused ({refusals}); a later one got a producer id",
                    client.init.evidence(),
                    "info",
                )
                continue
            then = (
                f"it went on producing with producer id -1 ({plural(client.after.told, 'Produce request')})"
                if client.after
                else "it sent no records after"
                if not client.batches
                else "it went on producing"
            )
            yield INIT_REFUSED.finding(
                f"{plural(client.init.told, 'InitProducerId request')} by {name} refused ({refusals}): it never got a producer id, "
                f"and {then}",
                client.init.evidence(),
            )
            if client.after:
                yield NOT_IDEMPOTENT.finding(
                    f"{plural(client.after.told, 'Produce request')} by {name} with producer id -1 after its InitProducerId was refused",
                    client.after.evidence(),
                )

    def _tiny(self) -> Iterator[Finding]:
        for name, client in sorted(self.producers.items()):
            batches, records = client.batches, client.records
            if batches < self.threshold(TINY_BATCHES, "batches") or records > self.threshold(TINY_BATCHES) * batches:
                continue
            if client.close * 2 < client.requests:  # most requests waited for the one before: no linger batches them
                continue
            seconds = max((client.last_ts - client.first_ts) / SECOND, 1e-9)
            rate = records / seconds
            severity: Severity = "warning" if rate >= self.threshold(TINY_BATCHES, "rate") else "info"
            if client.produced:
                yield TINY_BATCHES.finding(
                    f"{plural(client.produced.told, 'Produce request')} by {name}: {records / batches:.1f} records per batch at "
                    f"{rate:.0f} records/s, {client.close} sent within {self.threshold(TINY_BATCHES, 'close_ms'):g} ms of the one before",
                    client.produced.evidence(),
                    severity,
                )
