"""A records field written again with its keys, values and header values replaced: every batch as it was otherwise
(offsets, timestamps, producer ids and sequences, attributes, transaction markers), compressed with its own codec,
its CRC computed anew.

A v2 record's timestamp is written as its delta from the batch's base timestamp (a LogAppendTime batch's records
read as its max timestamp, whatever their deltas). A compressed legacy wrapper's inner offsets are written so that
they read back as the same absolute offsets (magic 1 counts them back from the wrapper's offset). A partial batch at
the end of a Fetch response keeps its offset and size, which say it runs past the end, and zeros for the rest.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from kdissect.records.codecs import CODEC_IDS
from kdissect.records.encode import Draft, compress, encode_batch, encode_message
from kdissect.records.values import LOG_APPEND_TIME, KafkaRecord, LegacyMessage, Record, RecordBatch, RecordSet

Fill = Callable[[bytes | None, str], bytes | None]
"""What replaces a key, a value or a header value (its kind: "key", "value" or "header")."""
Internal = Callable[[KafkaRecord, bytes | None], "tuple[bytes, bytes | None] | None"]
"""The key and value of a record of one of Kafka's own topics written again from what they were read as (its reading
and its value's bytes); None when they cannot be, and the record is filled like any other."""
MESSAGE_HEAD = 17
"""A log entry's offset, size and the bytes up to its magic: a shorter tail is partial whatever it holds."""
_ENTRY = struct.Struct(">qi")


class Unwritable(Exception):
    """The records cannot be written again faithfully (some were never decoded, or a batch was damaged)."""


def anonymized_records(records: RecordSet, fill: Fill, internal: Internal | None = None) -> bytes:
    """The field's bytes with every data record's key, value and header values replaced by `fill`; a record of one of
    Kafka's own topics that read by its schemas written again by `internal` instead."""
    if records.not_shown or any(d.severity == "error" for d in records.diagnostics):
        raise Unwritable("records not decoded whole")
    if internal is not None:
        fill = _with_internal(fill, internal)
    out = bytearray()
    for batch in records.batches:
        out += _batch(batch, fill) if isinstance(batch, RecordBatch) else _message(batch, batch.offset, fill)
    return bytes(out) + _partial(records)


def _partial(records: RecordSet) -> bytes:
    """A stand-in for the partial batch at the end, as long as it was: a size that runs past the field's end, and
    zeros (shorter than a message header, it is partial whatever it holds)."""
    if records.truncated < MESSAGE_HEAD:
        return bytes(records.truncated)
    return _ENTRY.pack(0, records.truncated) + bytes(records.truncated - _ENTRY.size)


def _batch(batch: RecordBatch, fill: Fill) -> bytes:
    if len(batch.records) != batch.record_count:
        raise Unwritable("a batch's records were not all decoded")
    drafts = [_draft(record, batch) if batch.control else _filled(record, batch, fill) for record in batch.records]
    return encode_batch(
        drafts,
        codec=batch.codec,
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        transactional=batch.transactional,
        control=batch.control,
        log_append_time=batch.timestamp_type == LOG_APPEND_TIME,
        delete_horizon=batch.has_delete_horizon,
        base_timestamp=batch.base_timestamp,
        max_timestamp=batch.max_timestamp,
        last_offset_delta=batch.last_offset_delta,
    )


def _draft(record: Record, batch: RecordBatch) -> Draft:
    """A control record (a transaction marker) as it was: it holds no data of the owner's."""
    timestamp = batch.base_timestamp + record.timestamp_delta
    return Draft(record.key, record.value, record.headers, timestamp, record.offset_delta, record.attributes)


class _Filler:
    """`fill` that writes a record of Kafka's own topics again by `internal` when it can: `key` is asked first, and
    answers for the value too."""

    def __init__(self, fill: Fill, internal: Internal) -> None:
        self.fill = fill
        self.internal = internal
        self.value: tuple[bool, bytes | None] = (False, None)

    def key(self, record: Record | LegacyMessage) -> bytes | None:
        written = self.internal(record.reading, record.value) if record.reading is not None else None
        if written is None:
            self.value = (False, None)
            return self.fill(record.key, "key")
        self.value = (True, written[1])
        return written[0]

    def __call__(self, data: bytes | None, kind: str) -> bytes | None:
        if kind == "value" and self.value[0]:
            return self.value[1]
        return self.fill(data, kind)


def _with_internal(fill: Fill, internal: Internal) -> Fill:
    return _Filler(fill, internal)


def _key(record: Record | LegacyMessage, fill: Fill) -> bytes | None:
    return fill.key(record) if isinstance(fill, _Filler) else fill(record.key, "key")


def _filled(record: Record, batch: RecordBatch, fill: Fill) -> Draft:
    headers = tuple((key, fill(value, "header")) for key, value in record.headers)
    timestamp = batch.base_timestamp + record.timestamp_delta
    key = _key(record, fill)
    return Draft(key, fill(record.value, "value"), headers, timestamp, record.offset_delta, record.attributes)


def _message(message: LegacyMessage, offset: int, fill: Fill) -> bytes:
    """A legacy message at `offset` (as its entry writes it); a compressed one with its inner set written again."""
    timestamp = message.timestamp if message.timestamp is not None else -1
    if message.codec == "none":
        key = _key(message, fill)
        value = fill(message.value, "value")
        return encode_message(offset, magic=message.magic, key=key, value=value, timestamp=timestamp, attributes=message.attributes)
    if not message.messages:
        raise Unwritable("a compressed message set was not opened")
    first = message.messages[0].offset
    inner = b"".join(_message(m, m.offset - first if message.magic else m.offset, fill) for m in message.messages)
    value = compress(CODEC_IDS[message.codec], inner)
    key = fill(message.key, "key")
    return encode_message(offset, magic=message.magic, key=key, value=value, timestamp=timestamp, attributes=message.attributes)
