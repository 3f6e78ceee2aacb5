"""Layer 5, records: any bytes as a `records` field (v2 batches, v0/v1 message sets, every codec).

Each input is decoded whole, and again with a hole cut in it (zeros where the capture would have lost bytes, and
the decoder told where), as a records field of a frame with a lost segment is. Contract: `decode_records` never
raises and never reports `records.internal-error`; every diagnostic has an offset and a path; no batch decoded
after a hole overlaps it; decompression stays under both caps; every value renders as JSON.
"""

from __future__ import annotations

from fuzz.common import Broken, check_diagnostics, fuzz_limits, instrumented, main

with instrumented():
    from kdissect.records import Budget, decode_records
    from kdissect.records.values import LegacyMessage, RecordBatch
    from kdissect.views.json_lines import records_json

LIMITS = fuzz_limits()


def _decompressed(entry) -> int:
    if isinstance(entry, RecordBatch):
        return entry.uncompressed_size if entry.codec != "none" else 0
    return entry.uncompressed_size + sum(_decompressed(m) for m in entry.messages)


def one_input(data: bytes) -> None:
    check(data, ())
    if len(data) > 32:
        start = data[-1] * len(data) // 256
        end = min(len(data), start + 1 + data[-2] * len(data) // 512)
        check(data[:start] + bytes(end - start) + data[end:], ((start, end),))


def check(data: bytes, holes: tuple[tuple[int, int], ...]) -> None:
    budget = Budget(LIMITS.max_decompressed_exchange)
    records = decode_records(data, limits=LIMITS, budget=budget, holes=holes)
    for entry in records.batches:
        if any(lo < entry.span[1] and entry.span[0] < hi for lo, hi in holes):
            raise Broken(f"a batch at {entry.span} overlaps a hole at {holes}")
    check_diagnostics(records.diagnostics, "records")
    for d in records.diagnostics:
        if d.offset is None or not d.path:
            raise Broken(f"records diagnostic without a location: {d!r}")
    total = sum(_decompressed(b) for b in records.batches)
    if total > LIMITS.max_decompressed_exchange or budget.remaining < 0:
        raise Broken(f"{total} bytes decompressed past the exchange cap")
    for entry in records.batches:
        if isinstance(entry, LegacyMessage) or entry.codec == "none":
            continue
        if entry.uncompressed_size > LIMITS.max_decompressed_batch:
            raise Broken(f"a batch decompressed to {entry.uncompressed_size} bytes")
    for _ in records.records():
        pass
    records_json(records)


if __name__ == "__main__":
    main(one_input)
