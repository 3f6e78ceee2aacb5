"""State shared while one records field decodes: limits, the exchange's decompression budget, diagnostics."""

from __future__ import annotations

from kdissect.diagnostic import Diagnostic, Scope, Severity
from kdissect.limits import DEFAULT_LIMITS, Limits
from kdissect.records.codecs import CODEC_NAMES, Buffer, decompress


class Budget:
    """Decompressed bytes, and records (batches and legacy messages included) built, still allowed for one request
    or response.

    Make one per message (`Budget(earned(limits, frame_bytes), limits.max_records_exchange)`) and pass it to every
    `decode_records` call for that message's records fields, so their batches draw on one total.
    """

    __slots__ = ("remaining", "records")

    def __init__(self, total: int, records: int = DEFAULT_LIMITS.max_records_exchange):
        self.remaining = total
        self.records = records


def earned(limits: Limits, frame_bytes: int) -> int:
    """The decompressed bytes one request or response of `frame_bytes` may produce: one batch's worth, and
    `max_decompressed_ratio` per byte of the frame beyond it, within `max_decompressed_exchange`."""
    return min(limits.max_decompressed_exchange, limits.max_decompressed_batch + limits.max_decompressed_ratio * frame_bytes)


class Context:
    __slots__ = ("limits", "budget", "diagnostics", "not_shown")

    def __init__(self, limits: Limits, budget: Budget):
        self.limits = limits
        self.budget = budget
        self.diagnostics: list[Diagnostic] = []
        self.not_shown = 0
        """Records counted, not built (`RecordSet.not_shown`)."""

    def report(self, code: str, message: str, severity: Severity, scope: Scope, offset: int | None, path: str) -> None:
        self.diagnostics.append(Diagnostic(code, message, severity, scope, offset, path))

    def allowed(self) -> int:
        """Records one batch or wrapper may still build."""
        return max(0, min(self.limits.max_records_batch, self.budget.records))

    def skipped(self, kind: str, count: int, records: int, shown: int, scope: Scope, offset: int, path: str) -> None:
        """Say that `count` records (or batches, or messages, holding `records` records) were counted, not built."""
        limits = self.limits
        self.not_shown += records
        self.report(
            "records.not-shown",
            f"{count} {kind} counted, not decoded, after {shown}: past the record budget (max_records_batch "
            f"{limits.max_records_batch}, max_records_exchange {limits.max_records_exchange}, "
            f"max_records_capture {limits.max_records_capture})",
            "warning",
            scope,
            offset,
            path,
        )

    def inflate(self, codec: int, payload: Buffer, scope: Scope, offset: int, path: str) -> tuple[bytes, bool]:
        """Decompress one batch's or wrapper's payload under both caps: (bytes, whether a cap cut them)."""
        per_batch = self.limits.max_decompressed_batch
        remaining = self.budget.remaining
        cap = min(per_batch, remaining)
        data, over, problems = decompress(codec, payload, cap)
        self.budget.remaining = remaining - len(data)
        for code, severity, message in problems:
            self.report(code, message, severity, scope, offset, path)
        if over:
            which = f"the per-batch cap of {per_batch}" if cap == per_batch else f"the {remaining} bytes left of the exchange's budget"
            self.report(
                "codec.bomb",
                f"{CODEC_NAMES[codec]} payload of {len(payload)} bytes decompresses past {which}; decoded the first {len(data)} bytes",
                "error",
                scope,
                offset,
                path,
            )
        return data, over
