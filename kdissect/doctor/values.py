"""What records' values say about their producers (docs/values.md): a record without framing on a topic whose other
records are framed (the one a registry deserializer fails on), schemas no source knows, a topic's schema changing
mid-capture (a deploy), values that do not decode with their schema, and topics that mix formats.

Produced and fetched records both count; a record seen both ways (produced, then fetched in the same capture) counts
once, by its topic, partition and offset. The producer of a record is the client id of the Produce request that
carried it; a record only fetched was produced before the capture, by a client it cannot name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone

from kdissect.decode.streamed import StreamedRecord, exchange_records
from kdissect.doctor.clients import Clients
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import KEEP, KEEP_CLIENTS, KEEP_WAITING_ALL, Kept, Scope, Trail, plural
from kdissect.events import Exchange
from kdissect.values.framing import FRAMINGS
from kdissect.values.reader import SCHEMAS_TOPIC, UNKNOWN, ValueReader, plain_format

UNFRAMED = Rule(
    "values.unframed",
    "error",
    "Records without a registry's framing on a topic whose other records are framed: consumers with a registry deserializer fail on them.",
    "A registry deserializer (Confluent's, Apicurio's) reads a magic byte and a schema id before each value. A record "
    "written without them, by a producer without the serializer, stops every such consumer at its offset: Java's "
    "KafkaAvroDeserializer throws 'Unknown magic byte!', confluent-kafka-python 'Invalid magic byte', and a consumer "
    "that does not skip it retries the same offset forever (a poison pill).",
    "Find the producer by its client id (the evidence) and give it the registry serializer, or move its records to a "
    "topic of their own. Consumers can get past the offsets with a dead-letter or error handler "
    "(ErrorHandlingDeserializer in Spring Kafka, errors.tolerance in Kafka Connect) or by seeking beyond them.",
    (Threshold("threshold", 1, "framed records", "a topic with at least this many framed values, and one without framing"),),
)
UNKNOWN_SCHEMA = Rule(
    "values.schema-unknown",
    "warning",
    "Values framed with schema ids that no source knows.",
    "The value names its schema by id, but neither --schemas, --schema-registry nor the capture (the registry's HTTP "
    "answers, the _schemas topic) told kdissect that schema, so the value cannot be read. A consumer's registry "
    "may not know it either: a producer registered it in another registry or environment, or it was deleted.",
    "Give kdissect the schemas (--schemas DIR, --schema-registry URL, or capture the registry's port beside the "
    "brokers'); if consumers fail too, check which registry the producer writes to (schema.registry.url).",
    (Threshold("threshold", 1, "values", "at least this many values naming unknown schemas"),),
)
CHANGED = Rule(
    "values.schema-changed",
    "info",
    "A topic's schema changed during the capture: a producer began writing with a new schema id (a deploy).",
    "Producers register a schema when they first serialize with it; a new id on a topic means a producer now "
    "writes a new version. Consumers read it with the new schema from the registry; those that cannot (a reader "
    "schema that is not compatible) start failing at that offset.",
    "Check that the change was meant (a deploy, at the time and by the client the title names) and that the "
    "subject's compatibility (BACKWARD by default) holds for every consumer.",
    (Threshold("threshold", 1, "changes", "at least this many changes of a topic's schema id"),),
)
MALFORMED = Rule(
    "values.malformed",
    "error",
    "Values that do not decode with the schema their framing names.",
    "The bytes after the framing do not read as the schema says: cut short, written with another schema under the "
    "same id, corrupted, or (JSON Schema) a value the schema does not allow. Consumers fail on them as on a poison "
    "pill; kdissect says where in the value the bytes stop making sense.",
    "Open the evidence with kdissect show to see the offset and the schema; find the producer by its client id.",
    (Threshold("threshold", 1, "values", "at least this many values that do not decode"),),
)
MIXED = Rule(
    "values.mixed-formats",
    "warning",
    "Topics whose values come in several formats.",
    "One topic carries values in several serializations (Avro and JSON Schema, or JSON beside plain text): every "
    "consumer must read them all, and a change of producer library changed the format without a new topic.",
    "Keep one format per topic: the evidence names the producers of each.",
    (Threshold("threshold", 2, "formats", "a topic with at least this many value formats"),),
)
PLAIN_KINDS = {"text": "plain", "bytes": "plain"}
"""Text and bytes are one format here: values no serializer framed or a format reads."""
BROKEN = frozenset({"value.malformed", "value.schema-mismatch", "value.bad-indexes", "value.trailing-bytes"})
"""Diagnostics that say a value does not match its schema."""


@dataclass
class TopicValues:
    """What one topic's values were seen as."""

    trail: Trail
    """Every exchange carrying the topic's values: a mix of formats is shown by them."""
    framed: int = 0
    unframed: Trail | None = None
    unframed_count: int = 0
    offsets: list[tuple[int | None, int]] = field(default_factory=list)
    """The first unframed records, (partition, offset)."""
    unframed_by: list[str] = field(default_factory=list)
    """The client ids that produced unframed records."""
    formats: dict[str, int] = field(default_factory=dict)
    framed_formats: set[str] = field(default_factory=set)
    last: tuple[object, str] | None = None
    """The schema of the latest framed value: (the schema, or its ref when unknown; how the title names it)."""
    changes: list[tuple[str, str, int, str | None]] = field(default_factory=list)
    """(from, to, time in ns, client id) for each change of the value schema, in capture order."""


class Values(Family):
    RULES = (UNFRAMED, UNKNOWN_SCHEMA, CHANGED, MALFORMED, MIXED)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.reader = ValueReader()
        """The run's reader (the engine gives the one of --schemas, --schema-registry and the capture)."""
        self.topics: dict[str, TopicValues] = {}
        self.topics_kept = Kept(KEEP_CLIENTS, "topics: records not followed per topic")
        self.seen_kept = Kept(KEEP_WAITING_ALL, "records: records not told apart from a copy seen before")
        self.seen: set[tuple[str | None, int | None, int]] = self.seen_kept.keys
        """Records already counted, by topic, partition and offset; past KEEP_WAITING_ALL a record fetched after
        it was produced counts twice."""
        self.kept = [self.topics_kept, self.seen_kept]
        self.unknown = self.trail()
        self.unknown_ids: list[int | str] = []
        self.malformed = self.trail()
        self.malformed_codes: dict[str, int] = {}
        self.changed = self.trail()
        self.counts = {"unknown": 0, "malformed": 0}

    def exchange(self, exchange: Exchange) -> None:
        for item in exchange_records(exchange, values=self.reader, skip=self._counted):
            record = item.record
            if record.value is None:
                continue
            where = (item.topic, item.partition, record.offset)
            if record.offset >= 0:
                if where in self.seen:
                    continue
                self.seen_kept.admits(where)
            self._value(exchange, item)

    def _counted(self, topic: str | None, partition: int | None, offset: int, value: bytes | None) -> bool:
        """A record `exchange` passes over: a null value, or one counted already (its value is then not read); never
        one of the `_schemas` topic, whose reading teaches the reader its schema."""
        return topic != SCHEMAS_TOPIC and (value is None or offset >= 0 and (topic, partition, offset) in self.seen)

    def _value(self, exchange: Exchange, item: StreamedRecord) -> None:
        decoded = item.decoded[1]
        if decoded is not None and decoded.plain:
            decoded = None
        name = item.topic or "?"
        topic = self.topics.get(name)
        if topic is None:
            if not self.topics_kept.admits(name):
                return
            topic = self.topics[name] = TopicValues(self.trail())
        self._note(topic.trail, exchange, item)
        framed = decoded is not None and decoded.framing in FRAMINGS
        fmt = decoded.format if decoded is not None else plain_format(item.record.value or b"")
        topic.formats[fmt] = topic.formats.get(fmt, 0) + 1
        producer = exchange.client_id if item.direction == "produce" else None
        if framed:
            topic.framed += 1
            topic.framed_formats.add(fmt)
            assert decoded is not None
            schema_id = decoded.schema_id
            schema = decoded.schema
            now = (
                (schema, schema.name + (f" (id {schema.id})" if schema.id is not None else ""))
                if schema
                else (decoded.ref, str(decoded.ref))
            )
            if topic.last is None or topic.last[0] is not now[0] and topic.last[0] != now[0]:
                if topic.last is not None:
                    topic.changes.append((topic.last[1], now[1], exchange.ts, producer))
                    self._note(self.changed, exchange, item)
                topic.last = now
            if decoded.format == UNKNOWN:
                self.counts["unknown"] += 1
                self._note(self.unknown, exchange, item)
                if schema_id is not None and schema_id not in self.unknown_ids and len(self.unknown_ids) < KEEP:
                    self.unknown_ids.append(schema_id)
        else:
            if topic.unframed is None:
                topic.unframed = self.trail()
            topic.unframed_count += 1
            self._note(topic.unframed, exchange, item)
            if len(topic.offsets) < KEEP:
                topic.offsets.append((item.partition, item.record.offset))
            if producer and producer not in topic.unframed_by and len(topic.unframed_by) < KEEP:
                topic.unframed_by.append(producer)
        for d in decoded.diagnostics if decoded is not None else ():
            if d.code in BROKEN:
                self.counts["malformed"] += 1
                self._note(self.malformed, exchange, item)
                self.malformed_codes[d.code] = self.malformed_codes.get(d.code, 0) + 1
                break

    @staticmethod
    def _note(trail: Trail, exchange: Exchange, item: StreamedRecord) -> None:
        """A trail counts an exchange once however many of its records it is given; titles count records too."""
        trail.add(exchange, topic=item.topic, partition=item.partition)

    def findings(self) -> Iterator[Finding]:
        for name, topic in sorted(self.topics.items()):
            unframed = topic.unframed
            if unframed and topic.framed >= self.threshold(UNFRAMED):
                offsets = ", ".join(f"{p}@{o}" if o >= 0 else f"{p}@?" for p, o in topic.offsets)
                who = f", produced by {', '.join(topic.unframed_by)}" if topic.unframed_by else ", produced before the capture"
                yield UNFRAMED.finding(
                    f"{plural(unframed.told, 'exchange')} carried {plural(topic.unframed_count, 'record')} of {name} without "
                    f"framing among {topic.framed} framed (partition@offset {offsets}){who}",
                    unframed.evidence(),
                )
        unknown = self.counts["unknown"]
        if self.unknown and unknown >= self.threshold(UNKNOWN_SCHEMA):
            ids = ", ".join(str(i) for i in self.unknown_ids)
            verb = "names a schema" if unknown == 1 else "name schemas"
            yield UNKNOWN_SCHEMA.finding(
                f"{plural(self.unknown.told, 'exchange')} carried {plural(unknown, 'value')} that {verb} no source knows: {ids}",
                self.unknown.evidence(),
            )
        changes = [(name, change) for name, topic in sorted(self.topics.items()) for change in topic.changes]
        if self.changed and len(changes) >= self.threshold(CHANGED):
            told = "; ".join(
                f"{name}: {old} → {new} at {_clock(ts)}" + (f" by {client}" if client else "")
                for name, (old, new, ts, client) in changes[:KEEP]
            )
            yield CHANGED.finding(
                f"{plural(self.changed.told, 'exchange')} changed a topic's schema ({plural(len(changes), 'change')}): {told}",
                self.changed.evidence(),
            )
        broken = self.counts["malformed"]
        if self.malformed and broken >= self.threshold(MALFORMED):
            codes = ", ".join(f"{n} {code}" for code, n in sorted(self.malformed_codes.items()))
            verb = "does not decode with its schema" if broken == 1 else "do not decode with their schema"
            yield MALFORMED.finding(
                f"{plural(self.malformed.told, 'exchange')} carried {plural(broken, 'value')} that {verb} ({codes})",
                self.malformed.evidence(),
            )
        for name, topic in sorted(self.topics.items()):
            formats = topic.framed_formats if topic.framed else topic.formats  # unframed among framed: UNFRAMED's
            mixed = {PLAIN_KINDS.get(f, f) for f in formats} - {UNKNOWN}
            if topic.trail and len(mixed) >= self.threshold(MIXED):
                counts = ", ".join(f"{n} {fmt}" for fmt, n in sorted(topic.formats.items(), key=lambda kv: -kv[1]))
                yield MIXED.finding(
                    f"{plural(topic.trail.told, 'exchange')} carried values of {name} in {len(topic.formats)} formats ({counts})",
                    topic.trail.evidence(),
                )


def _clock(ts: int) -> str:
    """A change's moment in a title: UTC, to the millisecond."""
    moment = datetime.fromtimestamp(ts / 1e9, timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
