"""Record batches v2 (magic 2): the 61-byte header, the CRC-32C, the codec, and the records.

The record loop is the hot path of a Fetch-heavy capture: it inlines short varints and reads straight
out of the blob (or the decompressed payload) with no object per field.
"""

from __future__ import annotations

import struct
from dataclasses import replace

from kdissect.diagnostic import Scope
from kdissect.records.codecs import CODEC_NAMES, NONE, Problem
from kdissect.records.context import Context
from kdissect.records.control import decode_control
from kdissect.records.crc import crc32c
from kdissect.records.values import CREATE_TIME, LOG_APPEND_TIME, Header, Record, RecordBatch, new_record
from kdissect.wire import WireError, read_varint, read_varlong

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size
MIN_LENGTH = HEADER_SIZE - 12
"""Smallest batch length field: the header after base offset and length, no records."""
CRC_START = 21
"""The CRC covers attributes to the end: everything after base offset, length, leader epoch, magic, CRC."""

TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

_MIN_RECORD = 6
"""attributes, timestamp delta, offset delta, key length, value length, header count: one byte each at least."""


def decode_batch(buf: bytes, pos: int, end: int, path: str, ctx: Context) -> RecordBatch:
    """The batch in buf[pos:end]; the caller has checked that its length fits and is at least MIN_LENGTH."""
    (
        base_offset,
        length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = HEADER.unpack_from(buf, pos)
    crc_valid = crc32c(memoryview(buf)[pos + CRC_START : end]) == crc
    if not crc_valid:
        ctx.report("batch.crc-mismatch", f"CRC-32C {crc:#010x} does not match the batch's bytes", "error", "batch", pos, path)
    codec = attributes & 0x07
    log_append = bool(attributes & TIMESTAMP_TYPE_BIT)
    control = bool(attributes & CONTROL_BIT)
    start = pos + HEADER_SIZE
    compressed_size = end - start

    over = False
    allowed = ctx.allowed()
    append_ts = max_ts if log_append else None
    if codec == NONE:
        records = decode_v2_records(buf, start, end, base_offset, base_ts, append_ts, "batch", path, ctx, limit=allowed)
        uncompressed_size = compressed_size
    elif not allowed:  # no record would be built: the payload is not even decompressed
        records, uncompressed_size = [], 0
    else:
        data, over = ctx.inflate(codec, memoryview(buf)[start:end], "batch", start, path)
        uncompressed_size = len(data)
        records = decode_v2_records(data, 0, len(data), base_offset, base_ts, append_ts, "record", path, ctx, cut=over, limit=allowed)
    ctx.budget.records -= len(records)
    if len(records) == allowed and count > allowed:
        ctx.skipped("records", count - allowed, count - allowed, allowed, "batch", pos, path)
    elif len(records) != count and not over:
        ctx.report(
            "batch.record-count-mismatch",
            f"header says {count} records, decoded {len(records)}",
            "warning",
            "batch",
            pos,
            path,
        )
    if control:
        records = _with_control(records, path, pos, ctx)
    return RecordBatch(
        (pos, end),
        base_offset,
        length,
        leader_epoch,
        magic,
        crc,
        crc_valid,
        attributes,
        CODEC_NAMES[codec],
        LOG_APPEND_TIME if log_append else CREATE_TIME,
        bool(attributes & TRANSACTIONAL_BIT),
        control,
        bool(attributes & DELETE_HORIZON_BIT),
        last_offset_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
        compressed_size,
        uncompressed_size,
        tuple(records),
    )


def _with_control(records: list[Record], path: str, pos: int, ctx: Context) -> list[Record]:
    out = []
    for i, record in enumerate(records):
        control, problem = decode_control(record.key, record.value)
        if problem:
            ctx.report("control.malformed", problem, "warning", "batch", pos, f"{path}.record[{i}]")
        out.append(replace(record, control=control))
    return out


def decode_v2_records(
    buf: bytes,
    p: int,
    end: int,
    base_offset: int,
    base_ts: int,
    append_ts: int | None,
    scope: Scope,
    path: str,
    ctx: Context,
    cut: bool = False,
    limit: int = -1,
) -> list[Record]:
    """Records in buf[p:end], as far as they go, and no more than `limit` of them (-1: no limit). `cut` says a cap
    cut the bytes: a partial last record is expected.

    The hot loop of a Fetch-heavy capture: no object per field, values sliced straight out of `buf`. A slice never
    stops before its start (`max(p, rend)` past a bad length): compiled by mypyc, that is a SystemError, not b"".
    """
    records: list[Record] = []
    headers: tuple[Header, ...]
    append = records.append
    new = new_record
    varint = read_varint
    index = 0
    while p < end and index != limit:
        start = p
        try:
            length, p = varint(buf, p)
            rend = p + length
            if length < _MIN_RECORD or rend > end:
                if rend > end and cut:
                    break
                code = "record.truncated" if rend > end else "record.bad-length"
                ctx.report(code, f"record length {length}, {end - p} bytes left", "error", scope, start, f"{path}.record[{index}]")
                break
            attributes = buf[p]
            ts_delta, p = read_varlong(buf, p + 1)
            offset_delta, p = varint(buf, p)
            n, p = varint(buf, p)
            if n < 0:
                key = None
            else:
                key = buf[p : p + n if p + n <= rend else max(p, rend)]  # a length past the record copies no more than it
                p += n
            n, p = varint(buf, p)
            if n < 0:
                value = None
            else:
                value = buf[p : p + n if p + n <= rend else max(p, rend)]
                p += n
            if buf[p] == 0:
                headers = ()
                p += 1
            else:
                headers, p, problem = _headers(buf, p, rend)
                if problem:
                    code, severity, message = problem
                    ctx.report(code, message, severity, scope, start, f"{path}.record[{index}]")
        except WireError as e:
            ctx.report("varint.too-long", str(e), "error", scope, e.offset, f"{path}.record[{index}]")
            break
        except IndexError:
            if not cut:
                message = f"a varint runs past the end at {end}"
                ctx.report("varint.truncated", message, "error", scope, start, f"{path}.record[{index}]")
            break
        if p != rend:
            ctx.report(
                "record.bad-length",
                f"fields end at {p}, the record's length says {rend}",
                "error",
                scope,
                start,
                f"{path}.record[{index}]",
            )
            p = rend
        append(
            new(
                base_offset + offset_delta,
                base_ts + ts_delta if append_ts is None else append_ts,
                offset_delta,
                ts_delta,
                attributes,
                key,
                value,
                headers,
                None,
            )
        )
        index += 1
    return records


def _headers(buf: bytes, p: int, rend: int) -> tuple[tuple[Header, ...], int, Problem | None]:
    """The header count and headers at p: (headers, position after them, a problem or None).

    A count that cannot fit before the record's end is refused whole; a key that is not UTF-8 stays bytes.
    """
    count, p = read_varint(buf, p)
    if count < 0 or count * 2 > rend - p:
        return (), rend, ("record.bad-header-count", "error", f"{count} headers in {rend - p} bytes")
    headers: list[Header] = []
    problem: Problem | None = None
    for _ in range(count):
        n, p = read_varint(buf, p)
        if n < 0:
            return tuple(headers), rend, ("record.bad-header-key", "error", f"header key length {n}")
        raw = buf[p : p + n if p + n <= rend else max(p, rend)]
        p += n
        key: str | bytes
        try:
            key = raw.decode()
        except UnicodeDecodeError:
            problem = ("record.header-key-not-utf8", "warning", f"header key {raw!r} is not UTF-8; kept as bytes")
            key = raw
        n, p = read_varint(buf, p)
        if n < 0:
            value = None
        else:
            value = buf[p : p + n if p + n <= rend else max(p, rend)]
            p += n
        headers.append((key, value))
    return tuple(headers), p, problem
