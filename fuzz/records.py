"""Layer 5, records: any bytes as a `records` field (v2 batches, v0/v1 message sets, every codec).

Contract: `decode_records` never raises and never reports `records.internal-error`; every diagnostic has an
offset and a path; decompression stays under both caps; every value renders as JSON.
"""

from __future__ import annotations

from fuzz.common import Broken, check_diagnostics, fuzz_limits, instrumented, main

with instrumented():
    from kdissect.records import Budget, decode_records
    from kdissect.records.values import LegacyMessage, RecordBatch
    from kdissect.views.json_lines import value_json

LIMITS = fuzz_limits()


def _decompressed(entry) -> int:
    if isinstance(entry, RecordBatch):
        return entry.uncompressed_size if entry.codec != "none" else 0
    return entry.uncompressed_size + sum(_decompressed(m) for m in entry.messages)


def one_input(data: bytes) -> None:
    budget = Budget(LIMITS.max_decompressed_exchange)
    records = decode_records(data, limits=LIMITS, budget=budget)
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
    value_json(records)


if __name__ == "__main__":
    main(one_input)
