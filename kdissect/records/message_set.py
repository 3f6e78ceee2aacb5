"""Legacy message sets (magic 0 and 1): log entries of [offset, size, message], a compressed message wrapping a set.

Kafka never nests compressed wrappers, but the bytes can; depth is bounded by `limits.max_nesting`.
"""

from __future__ import annotations

import struct

from kdissect.diagnostic import Scope
from kdissect.records.codecs import CODEC_NAMES, NONE
from kdissect.records.context import Context
from kdissect.records.crc import crc32
from kdissect.records.values import CREATE_TIME, LOG_APPEND_TIME, LegacyMessage, new_legacy_message

ENTRY = struct.Struct(">qi")
"""Offset and size: the log entry framing shared by every magic, v2 batches included."""
V0 = struct.Struct(">qiIbb")
V1 = struct.Struct(">qiIbbq")
MIN_SIZE = {0: V0.size - 12 + 8, 1: V1.size - 12 + 8}
"""Smallest message size field per magic: CRC, magic, attributes, [timestamp], key and value lengths."""
_I32 = struct.Struct(">i")
TIMESTAMP_TYPE_BIT = 0x08


def decode_message(
    buf: bytes,
    pos: int,
    end: int,
    path: str,
    ctx: Context,
    scope: Scope = "batch",
    depth: int = 0,
    shift: int = 0,
    append_ts: int | None = None,
) -> LegacyMessage:
    """The message in buf[pos:end] (size checked by the caller against MIN_SIZE).

    `shift` turns a magic 1 inner offset absolute; `append_ts` is a LogAppendTime wrapper's timestamp.
    """
    magic = buf[pos + 16]
    if magic == 0:
        offset, size, crc, magic, attributes = V0.unpack_from(buf, pos)
        timestamp = timestamp_type = None
        p = pos + V0.size
    else:
        offset, size, crc, magic, attributes, timestamp = V1.unpack_from(buf, pos)
        timestamp_type = LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME
        if append_ts is not None:
            timestamp = append_ts
        p = pos + V1.size
    crc_valid = crc32(memoryview(buf)[pos + 16 : end]) == crc
    if not crc_valid:
        ctx.report("messageset.crc-mismatch", f"CRC-32 {crc:#010x} does not match the message's bytes", "error", scope, pos, path)
    (n,) = _I32.unpack_from(buf, p)
    p += 4
    if n == -1:
        key = None
    elif 0 <= n <= end - 4 - p:
        key = buf[p : p + n]
        p += n
    else:
        ctx.report("messageset.bad-length", f"key length {n} with {end - p} bytes left", "error", scope, p - 4, path)
        key = None
        p = end - 4
    (n,) = _I32.unpack_from(buf, p)
    p += 4
    if n == -1:
        value = None
    elif 0 <= n <= end - p:
        value = buf[p : p + n]
        p += n
    else:
        ctx.report("messageset.bad-length", f"value length {n} with {end - p} bytes left", "error", scope, p - 4, path)
        value = None
        p = end
    if p < end:
        ctx.report("messageset.trailing-bytes", f"{end - p} bytes after the value", "warning", scope, p, path)
    codec = attributes & 0x07
    inner: tuple[LegacyMessage, ...] = ()
    compressed_size = uncompressed_size = 0
    if codec != NONE and value is not None:
        compressed_size = len(value)
        if depth >= ctx.limits.max_nesting:
            ctx.report(
                "messageset.too-deep",
                f"compressed message nested {depth + 1} deep, past the limit of {ctx.limits.max_nesting}; not opened",
                "error",
                scope,
                pos,
                path,
            )
        else:
            data, over = ctx.inflate(codec, value, scope, pos, path)
            uncompressed_size = len(data)
            inner_append_ts = timestamp if timestamp_type == LOG_APPEND_TIME else None
            inner = tuple(decode_inner_set(data, offset + shift, magic, path, ctx, depth + 1, over, inner_append_ts))
    elif codec != NONE:
        ctx.report("messageset.null-wrapper", "compressed message with a null value", "error", scope, pos, path)
    return new_legacy_message(
        (pos, end),
        offset + shift,
        size,
        crc,
        crc_valid,
        magic,
        attributes,
        CODEC_NAMES[codec],
        timestamp,
        timestamp_type,
        key,
        value,
        compressed_size,
        uncompressed_size,
        inner,
    )


def decode_inner_set(
    data: bytes, wrapper_offset: int, wrapper_magic: int, path: str, ctx: Context, depth: int, cut: bool, append_ts: int | None
) -> list[LegacyMessage]:
    """The message set inside a compressed wrapper; magic 1 inner offsets count back from the wrapper's offset."""
    entries: list[tuple[int, int]] = []
    allowed = ctx.allowed()
    counted = last_offset = 0
    pos = 0
    n = len(data)
    while pos < n:
        if n - pos < 17:
            if not cut:
                ctx.report("messageset.truncated", f"{n - pos} bytes left, less than a message header", "error", "record", pos, path)
            break
        offset, size = ENTRY.unpack_from(data, pos)
        magic = data[pos + 16]
        end = pos + 12 + size
        if magic not in MIN_SIZE:
            ctx.report("messageset.bad-magic", f"magic {magic} inside a compressed message", "error", "record", pos, path)
            break
        if size < MIN_SIZE[magic]:
            ctx.report("messageset.bad-length", f"message size {size}, below {MIN_SIZE[magic]}", "error", "record", pos, path)
            break
        if end > n:
            if not cut:
                ctx.report("messageset.truncated", f"message of {size} bytes cut at {n - pos - 12}", "error", "record", pos, path)
            break
        if len(entries) < allowed:
            entries.append((pos, end))
        else:
            counted += 1
        last_offset = offset
        pos = end
    if counted:
        ctx.skipped("messages", counted, counted, allowed, "record", entries[-1][1] if entries else 0, path)
    ctx.budget.records -= len(entries)
    shift = wrapper_offset - last_offset if wrapper_magic > 0 else 0
    return [
        decode_message(data, start, end, f"{path}.message[{i}]", ctx, "record", depth, shift, append_ts)
        for i, (start, end) in enumerate(entries)
    ]
