"""Producers and quotas: throttling, produce to partitions without a leader or topics that do not exist,
duplicate and out-of-order sends, tiny batches, oversized ones, acks=0, aborted transactions."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.facts import broker, each, fields, topic_of
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import Scope, Trail, made, plural, span
from kdissect.events import Exchange
from kdissect.records.values import RecordBatch
from kdissect.schema import ApiKey, ErrorCode
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
    (Threshold("threshold", 0, "ms", "a ThrottleTimeMs above this"),),
)
UNKNOWN_TOPIC = Rule(
    "producer.unknown-topic",
    "warning",
    "Requests for topics or partitions the cluster does not have.",
    "UNKNOWN_TOPIC_OR_PARTITION in Metadata or Produce means the topic does not exist (or not yet on this "
    "broker). A producer keeps asking for metadata and holds its records until delivery.timeout.ms / "
    "message.timeout.ms, then fails them.",
    "Create the topic, or allow auto creation on the broker (auto.create.topics.enable) and the client "
    "(allow.auto.create.topics); check the topic name for typos.",
    (Threshold("threshold", 1, "answers", "at least this many topics answered UNKNOWN_TOPIC_OR_PARTITION"),),
)
NOT_LEADER = Rule(
    "producer.not-leader",
    "warning",
    "Requests sent to a broker that is not the partition's leader.",
    "NOT_LEADER_OR_FOLLOWER means the client's metadata is stale: leadership moved (a broker restarted, a "
    "reassignment, preferred-leader election). The client refreshes metadata and retries; many of them mean "
    "unstable leadership.",
    "Look at broker restarts and ISR changes in the same window; metadata.max.age.ms on the client.",
    (Threshold("threshold", 1, "answers", "at least this many partitions answered NOT_LEADER_OR_FOLLOWER"),),
)
DUPLICATE = Rule(
    "producer.duplicate-send",
    "warning",
    "Idempotent producers sent the same batch twice, or out of order.",
    "An idempotent producer numbers its batches (producer id, epoch, base sequence). The same numbers twice on "
    "the wire are a retry after a timeout: the broker drops the copy (DUPLICATE_SEQUENCE_NUMBER) so nothing is "
    "written twice, but the producer waited a full request.timeout.ms. OUT_OF_ORDER_SEQUENCE_NUMBER means "
    "batches were lost in between and the producer must reset.",
    "Compare request.timeout.ms with the Produce latencies of the broker; look for network stalls; "
    "max.in.flight.requests.per.connection ≤ 5 for idempotence.",
    (Threshold("threshold", 1, "batches", "at least this many batches sent again or refused for their sequence"),),
)
TINY_BATCHES = Rule(
    "producer.tiny-batches",
    "info",
    "Producers send batches of very few records.",
    "Each Produce request carries one batch per partition; batches of one or two records cost a request, a "
    "log append and a replication round each, and compress badly. Throughput is then bound by requests, not bytes.",
    "Raise linger.ms (5 to 50 ms) so that records wait for company, and batch.size if batches fill up; "
    "librdkafka: linger.ms / queue.buffering.max.ms, batch.num.messages.",
    (
        Threshold("threshold", 2, "records per batch", "an average of at most this many records per batch"),
        Threshold("batches", 100, "batches", "from a client that sent at least this many batches"),
    ),
)
TOO_LARGE = Rule(
    "producer.too-large",
    "error",
    "Batches refused as too large.",
    "MESSAGE_TOO_LARGE or RECORD_LIST_TOO_LARGE: a batch exceeds the topic's max.message.bytes (or the broker's "
    "message.max.bytes). The producer fails these records; they are not written.",
    "Raise max.message.bytes on the topic (and replica.fetch.max.bytes / fetch sizes to match), lower the "
    "producer's batch.size / max.request.size, or compress.",
    (Threshold("threshold", 1, "answers", "at least this many partitions refused"),),
)
ACKS_ZERO = Rule(
    "producer.acks-zero",
    "info",
    "Produce requests with acks=0: nobody learns whether they were written.",
    "With acks=0 the broker sends no response: a record lost to a leader change, a full disk or a refused "
    "batch is lost silently, and the producer's retries never happen.",
    "Use acks=all (with enable.idempotence) unless losing records is acceptable.",
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


class Producers(Family):
    RULES = (THROTTLED, UNKNOWN_TOPIC, NOT_LEADER, DUPLICATE, TINY_BATCHES, TOO_LARGE, ACKS_ZERO, ABORTED, LONG_TRANSACTION)

    def __init__(self, settings: Settings, scope: Scope) -> None:
        super().__init__(settings, scope)
        self.throttled = Trail(self.scope)
        self.throttled_by: dict[tuple[str, str], int] = {}
        self.unknown = Trail(self.scope)
        self.metadata_after: int = 0
        self.not_leader = Trail(self.scope)
        self.duplicate = Trail(self.scope)
        self.sequences: dict[tuple, int] = {}
        self.batches: dict[str, list[int]] = {}
        """client id -> [batches, records] of its Produce requests."""
        self.tiny: dict[str, Trail] = {}
        self.too_large = Trail(self.scope)
        self.acks_zero = Trail(self.scope)
        self.ends = [0, 0]
        """EndTxn requests: [committed, aborted]."""
        self.aborted = Trail(self.scope)
        self.open: dict[str, Exchange] = {}
        """Transactional id -> the exchange that opened its current transaction."""
        self.long = Trail(self.scope)
        self.longest = 0
        self.last_ts = 0

    def exchange(self, exchange: Exchange) -> None:
        response = fields(exchange.response)
        if response is not None:
            throttle = response.get("ThrottleTimeMs")
            if isinstance(throttle, int) and throttle > self.threshold(THROTTLED):
                self.throttled.add(exchange)
                who = (exchange.client_id or "?", broker(exchange))
                self.throttled_by[who] = max(self.throttled_by.get(who, 0), throttle)
        key = exchange.api_key
        self.last_ts = max(self.last_ts, exchange.ts)
        if key in (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN):
            for transaction in transactional_ids(exchange):
                self.open.setdefault(transaction, exchange)
        if key == ApiKey.METADATA:
            if self.unknown.count:
                self.metadata_after += 1
            for topic in each(response, "Topics"):
                if topic.get("ErrorCode") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    self.unknown.add(exchange, None, topic_of(topic))
        elif key == ApiKey.PRODUCE:
            self._produce(exchange, response)
        elif key == ApiKey.END_TXN:
            request = fields(exchange.request)
            if request is not None:
                opened = self.open.pop(request.get("TransactionalId"), None)
                if opened is not None:
                    self._transaction(opened, exchange.ts, exchange)
                committed = bool(request.get("Committed"))
                self.ends[not committed] += 1
                if not committed:
                    self.aborted.add(exchange)

    def _produce(self, exchange: Exchange, response: Struct | None) -> None:
        request = fields(exchange.request)
        if request is None:
            return
        if request.get("Acks") == 0:
            self.acks_zero.add(exchange)
        repeated: set[tuple[str | None, int | None]] = set()
        """Partitions whose batch was sent before, or refused for its sequence: one count each."""
        for topic in each(response, "Responses"):
            name = topic_of(topic)
            for partition in each(topic, "PartitionResponses"):
                code, index = partition.get("ErrorCode"), partition.get("Index")
                if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    self.unknown.add(exchange, None, name, index)
                elif code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    self.not_leader.add(exchange, None, name, index)
                elif code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
                    self.too_large.add(exchange, None, name, index)
                elif code in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                    repeated.add((name, index))
        body = getattr(exchange.request, "body", None)
        counts = self.batches.setdefault(exchange.client_id or "?", [0, 0])
        for placed in getattr(body, "records", ()):
            for batch in placed.records.batches:
                counts[0] += 1
                counts[1] += batch.record_count if isinstance(batch, RecordBatch) else 1
                if isinstance(batch, RecordBatch) and batch.producer_id >= 0 and batch.base_sequence >= 0:
                    if self._again(exchange, placed.topic, placed.partition, batch):
                        repeated.add((placed.topic, placed.partition))
        for topic_name, index in repeated:
            self.duplicate.add(exchange, None, topic_name, index)
        if counts[0] >= self.threshold(TINY_BATCHES, "batches") and counts[1] <= self.threshold(TINY_BATCHES) * counts[0]:
            made(self.tiny, exchange.client_id or "?", Trail, self.scope).add(exchange)

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
            yield THROTTLED.finding(f"{plural(self.throttled.count, 'response')} throttled: {worst}", self.throttled.evidence())
        if self.unknown and self.unknown.count >= self.threshold(UNKNOWN_TOPIC):
            topics = ", ".join(sorted({t for t, _ in self.unknown.partitions})) or "?"
            yield UNKNOWN_TOPIC.finding(
                f"{plural(self.unknown.count, 'answer')} UNKNOWN_TOPIC_OR_PARTITION for {topics} "
                f"({plural(self.metadata_after, 'Metadata request')} after the first)",
                self.unknown.evidence(),
            )
        if self.not_leader and self.not_leader.count >= self.threshold(NOT_LEADER):
            yield NOT_LEADER.finding(
                f"{plural(self.not_leader.count, 'partition')} answered NOT_LEADER_OR_FOLLOWER", self.not_leader.evidence()
            )
        if self.duplicate and self.duplicate.count >= self.threshold(DUPLICATE):
            yield DUPLICATE.finding(
                f"{plural(self.duplicate.count, 'batch', 'batches')} sent again or refused for their sequence number",
                self.duplicate.evidence(),
            )
        for client, trail in sorted(self.tiny.items()):
            batches, records = self.batches[client]
            if trail:
                yield TINY_BATCHES.finding(
                    f"{client}: {records / batches:.1f} records per batch over {plural(batches, 'batch', 'batches')}", trail.evidence()
                )
        if self.too_large and self.too_large.count >= self.threshold(TOO_LARGE):
            yield TOO_LARGE.finding(f"{plural(self.too_large.count, 'batch', 'batches')} refused as too large", self.too_large.evidence())
        if self.acks_zero and self.acks_zero.count >= self.threshold(ACKS_ZERO):
            yield ACKS_ZERO.finding(f"{plural(self.acks_zero.count, 'Produce request')} with acks=0", self.acks_zero.evidence())
        for opened in self.open.values():  # still open when the capture ended
            self._transaction(opened, self.last_ts, None)
        self.open.clear()
        if self.long:
            yield LONG_TRANSACTION.finding(f"transactions open up to {span(self.longest)}", self.long.evidence())
        committed, aborted = self.ends
        if aborted >= self.threshold(ABORTED):
            yield ABORTED.finding(
                f"{aborted} of {plural(committed + aborted, 'transaction')} aborted ({100 * aborted / (committed + aborted):.0f} %)",
                self.aborted.evidence(),
            )
