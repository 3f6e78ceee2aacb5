"""The entry point: one `records` field's bytes in, a RecordSet out, whatever the bytes are.

Each log entry starts with offset (int64) and size (int32) whatever its format; the magic byte at offset 16
says which format follows, so v2 batches and v0/v1 messages may alternate in one blob. The loop mirrors
Kafka's own reader: a tail too short for its size is a partial batch (Fetch responses are cut at a byte limit,
so that is normal); a size below any message's is corruption, and nothing after it can be framed.

Where the capture lost bytes inside the field (`holes`), the entries a hole touches are lost and decoding
resumes at the next batch that verifies itself after it (records/salvage.py); a `records.lost` diagnostic says
what the hole cost.
"""

from __future__ import annotations

import struct

from kdissect.limits import DEFAULT_LIMITS, Limits
from kdissect.records.batch import HEADER_SIZE, MIN_LENGTH, decode_batch
from kdissect.records.context import Budget, Context
from kdissect.records.message_set import ENTRY, MIN_SIZE, decode_message
from kdissect.records.salvage import resume_after
from kdissect.records.values import LegacyMessage, RecordBatch, RecordSet

Holes = tuple[tuple[int, int], ...]

_HEADER_UP_TO_MAGIC = 17
RECORD_COUNT = struct.Struct(">i")
"""A v2 batch's record count, the last field of its header."""


def decode_records(
    data: bytes | bytearray | memoryview, *, limits: Limits = DEFAULT_LIMITS, budget: Budget | None = None, holes: Holes = ()
) -> RecordSet:
    """Decode a records field. Never raises: what cannot be decoded is described by diagnostics.

    `holes` are the (start, end) spans of `data` the capture does not hold (zeros stand in for them), in order.

    Offsets of diagnostics with scope "batch" count from the start of `data`; with scope "record" they count
    within the decompressed payload of the innermost compressed batch or message on their `path`. Pass one
    `budget` to all records fields of a request or response; without one, this call gets the whole exchange
    allowance.
    """
    buf = data if type(data) is bytes else bytes(data)
    ctx = Context(limits, budget if budget is not None else Budget(limits.max_decompressed_exchange, limits.max_records_exchange))
    batches: list[RecordBatch | LegacyMessage] = []
    truncated = 0
    try:
        truncated = _entries(buf, ctx, batches, holes)
    except Exception as e:  # a bug must cost one field, not the whole capture
        ctx.report("records.internal-error", f"{type(e).__name__}: {e}", "error", "batch", None, f"batch[{len(batches)}]")
    return RecordSet(tuple(batches), tuple(ctx.diagnostics), len(buf), truncated, ctx.not_shown)


def _entries(buf: bytes, ctx: Context, batches: list, holes: Holes) -> int:
    """Append each batch or message to `batches`; return the size of a partial tail."""
    n = len(buf)
    pos = 0
    index = 0
    hole = holes[0][0] if holes else n + _HEADER_UP_TO_MAGIC
    """Where the next hole starts: an entry reaching past it is lost."""
    while pos < n:
        path = f"batch[{index}]"
        left = n - pos
        if pos + _HEADER_UP_TO_MAGIC > hole or (hole < n and pos + 12 + ENTRY.unpack_from(buf, pos)[1] > hole):
            pos = _salvage(buf, pos, holes, batches, ctx, path)
            hole = next((lo for lo, _ in holes if lo >= pos), n + _HEADER_UP_TO_MAGIC)
            continue
        if left < _HEADER_UP_TO_MAGIC:
            return _partial(pos, left, ctx, path)
        _, size = ENTRY.unpack_from(buf, pos)
        end = pos + 12 + size
        if size < MIN_SIZE[0]:
            ctx.report("batch.bad-length", f"size {size}; the last {left} bytes cannot be framed", "error", "batch", pos, path)
            return 0
        if end > n:
            return _partial(pos, left, ctx, path)
        if ctx.budget.records <= 0:
            return _count_rest(buf, pos, index, ctx)
        ctx.budget.records -= 1
        magic = buf[pos + 16]
        if magic == 2:
            if size < MIN_LENGTH:
                ctx.report("batch.bad-length", f"batch length {size}, below {MIN_LENGTH}; skipped", "error", "batch", pos, path)
            else:
                batches.append(decode_batch(buf, pos, end, path, ctx))
        elif magic in MIN_SIZE:
            if size < MIN_SIZE[magic]:
                message = f"message size {size}, below {MIN_SIZE[magic]}; skipped"
                ctx.report("messageset.bad-length", message, "error", "batch", pos, path)
            else:
                batches.append(decode_message(buf, pos, end, path, ctx))
        else:
            ctx.report("batch.bad-magic", f"magic {magic}; {size + 12} bytes skipped", "error", "batch", pos, path)
        pos = end
        index += 1
    return 0


def _count_rest(buf: bytes, pos: int, index: int, ctx: Context) -> int:
    """The record budget is spent: frame the remaining entries by their sizes, count them, build nothing."""
    n, start, counted, records, tail = len(buf), pos, 0, 0, 0
    while pos < n:
        if n - pos < _HEADER_UP_TO_MAGIC:
            tail = n - pos
            break
        _, size = ENTRY.unpack_from(buf, pos)
        if size < MIN_SIZE[0]:
            break
        if pos + 12 + size > n:
            tail = n - pos
            break
        records += RECORD_COUNT.unpack_from(buf, pos + HEADER_SIZE - 4)[0] if buf[pos + 16] == 2 and size >= MIN_LENGTH else 1
        pos += 12 + size
        counted += 1
    ctx.skipped("batches or messages", counted, records, index, "batch", start, f"batch[{index}]")
    return tail


def _salvage(buf: bytes, pos: int, holes: Holes, batches: list, ctx: Context, path: str) -> int:
    """The entry at `pos` runs into a hole: say what is lost, and return where decoding resumes."""
    last = batches[-1] if batches else None
    last_offset = None if last is None else last.base_offset + last.last_offset_delta if isinstance(last, RecordBatch) else last.offset
    resume, lost = resume_after(buf, pos, holes, last_offset)
    ctx.report("records.lost", lost.describe(), "error", "batch", pos, path)
    return resume


def _partial(pos: int, left: int, ctx: Context, path: str) -> int:
    ctx.report(
        "batch.truncated",
        f"the last {left} bytes are a partial batch (normal at the end of a Fetch response)",
        "note",
        "batch",
        pos,
        path,
    )
    return left
