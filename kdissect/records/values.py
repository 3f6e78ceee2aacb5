"""What a records field decodes to: batches (v2) or messages (v0/v1), their records, and the diagnostics.

Timestamps stay ints in milliseconds since the epoch, as on the wire; `format_timestamp` is for views.
Sizes and spans are in bytes; a span is (start, end) within the bytes it was decoded from: the records blob for
top-level batches and messages, the decompressed payload of its wrapper for an inner message.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import final

from kdissect.diagnostic import Diagnostic
from kdissect.frozen import fast_constructor
from kdissect.schema.tree import Struct

Header = tuple[str | bytes, bytes | None]
"""A record header: the key is str, or bytes when it is not valid UTF-8."""

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True, slots=True)
class Control:
    """The key of a control record and its value as its schema reads it (`schema` names the spec)."""

    version: int
    type: int
    name: str
    schema: str | None
    value: Struct | None = None


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    """A record of one of Kafka's own topics (__consumer_offsets, __transaction_state, ...) read by its schemas: its
    kind, the fields of its key, and its value's version and fields (null in a tombstone, which deletes the key).
    `key` and `value` are as far as they read; a diagnostic says when that was not to the end."""

    record: str
    """The record type's name: OffsetCommit, GroupMetadata, TransactionLog, ShareSnapshot, ..."""
    type: int
    key: Struct | None
    value: Struct | None


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a v2 batch, with its offset and timestamp made absolute.

    Under LogAppendTime the timestamp is the batch's max timestamp, as Kafka's consumers see it.
    """

    offset: int
    timestamp: int
    offset_delta: int
    timestamp_delta: int
    attributes: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    control: Control | None = None
    reading: KafkaRecord | None = None
    """What the key and value hold, for a record of one of Kafka's own topics (records/internal.py)."""


@final  # no subclass: views tell a batch from a legacy message by `type(batch) is RecordBatch`
@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A v2 record batch (magic 2), every header field as sent."""

    span: tuple[int, int]
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    crc_valid: bool
    attributes: int
    codec: str
    timestamp_type: str
    transactional: bool
    control: bool
    has_delete_horizon: bool
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    compressed_size: int
    """Bytes of the records section as sent (after the 61-byte header)."""
    uncompressed_size: int
    """Bytes of the records section once decompressed (what was decoded, when the cap cut it)."""
    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """A legacy message (magic 0 or 1) with its log entry's offset; a compressed one wraps `messages`.

    Inner offsets are absolute: magic 1 writes them relative to the wrapper, whose offset is the last inner one's.
    Under LogAppendTime an inner message takes its wrapper's timestamp, as Kafka's consumers see it.
    """

    span: tuple[int, int]
    offset: int
    message_size: int
    crc: int
    crc_valid: bool
    magic: int
    attributes: int
    codec: str
    timestamp: int | None
    timestamp_type: str | None
    key: bytes | None
    value: bytes | None
    compressed_size: int = 0
    """Bytes of the wrapped message set as sent (the value), for a compressed message."""
    uncompressed_size: int = 0
    """Bytes of the wrapped message set once decompressed."""
    messages: tuple[LegacyMessage, ...] = ()
    reading: KafkaRecord | None = None
    """As a Record's: __consumer_offsets was written in message sets before Kafka 0.11."""

    @property
    def headers(self) -> tuple[Header, ...]:
        """Legacy messages have none; here so a LegacyMessage reads like a Record."""
        return ()


new_record = fast_constructor(Record)
new_legacy_message = fast_constructor(LegacyMessage)


@dataclass(frozen=True, slots=True)
class RecordSet:
    """Everything in one records field: batches and messages in wire order, and what was odd about them."""

    batches: tuple[RecordBatch | LegacyMessage, ...]
    diagnostics: tuple[Diagnostic, ...]
    size: int
    truncated: int = 0
    """Bytes of a partial batch at the end (a Fetch response cut at its size limit); not decoded."""
    not_shown: int = 0
    """Records counted but not built, past the record budget (by the batches' headers; a legacy message
    counts one): totals add them to what `records()` yields."""

    def records(self) -> Iterator[Record | LegacyMessage]:
        """Every record in order: v2 records, and legacy messages with compressed wrappers opened."""
        for batch in self.batches:
            if isinstance(batch, RecordBatch):
                yield from batch.records
            else:
                yield from _leaves(batch)

    def data_records(self) -> Iterator[Record | LegacyMessage]:
        """The records a consumer sees: control records (transaction markers) left out."""
        for record in self.records():
            if not (isinstance(record, Record) and record.control is not None):
                yield record

    @property
    def data_count(self) -> int:
        """How many records a consumer sees (transaction markers left out), those past the record budget included;
        counted without a generator per record where the field holds v2 batches (only a control batch's records are
        markers)."""
        count = self.not_shown
        for batch in self.batches:
            if not isinstance(batch, RecordBatch):  # legacy messages: their compressed wrappers opened
                return self.not_shown + sum(1 for _ in self.data_records())
            count += sum(1 for r in batch.records if r.control is None) if batch.control else len(batch.records)
        return count


def _leaves(message: LegacyMessage) -> Iterator[LegacyMessage]:
    if message.codec == "none":
        yield message
    for inner in message.messages:
        yield from _leaves(inner)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def format_timestamp(ms: int | None) -> str:
    """ISO-8601 UTC with milliseconds; -1 (Kafka's "no timestamp") and unrepresentable values say so."""
    if ms is None or ms == -1:
        return "none"
    try:
        t = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} (out of range)"
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{t.microsecond // 1000:03d}Z"
