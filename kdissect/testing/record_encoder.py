"""Record bytes only tests, fuzzing and benchmarks need: control records, message sets, nested wrappers.

The encoders of batches, records and messages live in the product (`kdissect.records.encode`); these build on them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from kdissect.records.batch import TIMESTAMP_TYPE_BIT
from kdissect.records.codecs import CODEC_IDS, NONE
from kdissect.records.encode import Draft, compress, encode_message
from kdissect.schema import CONTROL_RECORD_TYPES

ABORT, COMMIT = (next(t for t, (name, _) in CONTROL_RECORD_TYPES.items() if name == n) for n in ("ABORT", "COMMIT"))


def control_record(ctype: int, value: bytes | None, *, version: int = 0, timestamp: int = 0) -> Draft:
    return Draft(struct.pack(">hh", version, ctype), value, (), timestamp)


def end_txn_marker(commit: bool, coordinator_epoch: int, *, version: int = 0, timestamp: int = 0) -> Draft:
    """The single record of a COMMIT or ABORT control batch."""
    value = struct.pack(">hi", 0, coordinator_epoch)
    return control_record(COMMIT if commit else ABORT, value, version=version, timestamp=timestamp)


def encode_message_set(
    records: Iterable[Draft],
    *,
    magic: int,
    codec: str = "none",
    base_offset: int = 0,
    log_append_time: bool = False,
    wrapper_timestamp: int | None = None,
    legacy_lz4: bool = False,
) -> bytes:
    """Messages at base_offset, base_offset + 1, ...; compressed, they go in one wrapper as Kafka's brokers store them.

    A magic 1 wrapper holds relative offsets 0..n-1 and carries the last absolute offset; a magic 0 wrapper holds
    absolute ones. A LogAppendTime wrapper gets `wrapper_timestamp` (default: the largest inner timestamp).
    """
    drafts = list(records)
    ts_bit = TIMESTAMP_TYPE_BIT if log_append_time and magic else 0
    codec_id = CODEC_IDS[codec]
    if codec_id == NONE:
        return b"".join(
            encode_message(base_offset + i, magic=magic, key=d.key, value=d.value, timestamp=d.timestamp, attributes=ts_bit)
            for i, d in enumerate(drafts)
        )
    first = 0 if magic else base_offset
    inner = b"".join(encode_message(first + i, magic=magic, key=d.key, value=d.value, timestamp=d.timestamp) for i, d in enumerate(drafts))
    if wrapper_timestamp is None:
        wrapper_timestamp = max((d.timestamp for d in drafts), default=-1)
    return encode_message(
        base_offset + len(drafts) - 1,
        magic=magic,
        value=compress(codec_id, inner, legacy_lz4=legacy_lz4),
        timestamp=wrapper_timestamp,
        attributes=codec_id | ts_bit,
    )


def nested_fan_out(fanout: int, depth: int, codec: str = "gzip") -> bytes:
    """A compressed v1 wrapper whose message set is `fanout` copies of a compressed wrapper, `depth` levels down to
    `fanout` one-byte messages: fanout**depth messages in a few KB (Kafka never nests wrappers; the bytes can)."""
    codec_id = CODEC_IDS[codec]
    inner = b"".join(encode_message(i, magic=1, value=b"v") for i in range(fanout))
    for _ in range(depth):
        wrapper = encode_message(fanout - 1, magic=1, value=compress(codec_id, inner), attributes=codec_id)
        inner = wrapper * fanout
    return wrapper
