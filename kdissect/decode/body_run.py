"""What one run of a body's compiled decoder collects while it reads: one object per run, never shared.

The compiled decoders call two hooks as they go: a records field's bytes to decode, and an array with more elements
than are kept. What those calls gather for one message (the decompression budget its records draw on, the arrays
cut, the records' diagnostics, which of the frame's holes a records field was told of) lives here, made fresh for
each run, so a decoder that starts another run inside its own (the ApiVersions fallback, an orphan's guess) cannot
mix their state.
"""

from __future__ import annotations

from typing import Any

from kdissect.diagnostic import Diagnostic
from kdissect.limits import Limits
from kdissect.records.context import Budget, earned
from kdissect.records.decode import decode_records
from kdissect.records.values import RecordSet

Holes = tuple[tuple[int, int], ...]


class BodyRun:
    """One message's decoding: made with the records the capture still allows and the frame's holes."""

    __slots__ = ("limits", "records_left", "frame_size", "holes", "budget", "granted", "cuts", "found", "covered", "starts")

    def __init__(self, limits: Limits, records_left: int, frame_size: int, holes: Holes = ()) -> None:
        self.limits = limits
        self.records_left = records_left
        self.frame_size = frame_size
        """What the message's decompression budget is earned with (`records.context.earned`)."""
        self.holes = holes
        """The frame's holes, in frame offsets: records fields are told where they fall."""
        self.budget: Budget | None = None
        """Made when the first records field is met: every records field of the message draws on it."""
        self.granted = 0
        self.cuts: list[tuple[str, int]] = []
        """Arrays that had more elements than were kept: (field, count)."""
        self.found: list[tuple[int, RecordSet]] = []
        """Records fields whose decoding had something to say, with where they start in the frame."""
        self.covered: list[tuple[int, int]] = []
        """Records fields that held a hole: their readers knew, so those missing bytes were not misread."""
        self.starts: dict[int, int] = {}
        """Where each records field decoded starts in the frame, by the id of its RecordSet: what is said about its
        records later (those of Kafka's own topics, read once their topic is known) is located by it."""

    def records(self, buf: Any, start: int, end: int) -> RecordSet:
        """The records hook: decode a records field's bytes against the message's budget."""
        if self.budget is None:
            self.budget = Budget(earned(self.limits, self.frame_size), min(self.limits.max_records_exchange, self.records_left))
            self.granted = self.budget.records
        holes: Holes = ()
        if self.holes:
            holes = tuple((max(lo, start) - start, min(hi, end) - start) for lo, hi in self.holes if lo < end and start < hi)
            if holes:
                self.covered.append((start, end))
        records = decode_records(buf[start:end], limits=self.limits, budget=self.budget, holes=holes)
        if records.diagnostics:
            self.found.append((start, records))
        self.starts[id(records)] = start
        return records

    def cut(self, field: str, count: int) -> None:
        """The cut hook: an array kept only in part."""
        self.cuts.append((field, count))

    @property
    def records_built(self) -> int:
        """Records this run built, which the capture's allowance loses."""
        return self.granted - self.budget.records if self.budget is not None else 0

    def records_diagnostics(self) -> list[Diagnostic]:
        """The record decoder's diagnostics, located in the frame."""
        return [d for start, records in self.found for d in in_frame(start, records.diagnostics)]

    def cut_diagnostics(self, start: int) -> list[Diagnostic]:
        told = f"elements, the first {self.limits.max_array_elements} kept (max_array_elements)"
        return [Diagnostic("body.array-cut", f"{field}: {count} {told}", "warning", "frame", start) for field, count in self.cuts]


def in_frame(start: int, diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics of a records field that starts at `start` in its frame, their batch offsets made frame offsets."""
    out = []
    for d in diagnostics:
        offset = start + d.offset if d.scope == "batch" and d.offset is not None else d.offset
        scope = "frame" if d.scope == "batch" else d.scope
        out.append(Diagnostic(d.code, d.message, d.severity, scope, offset, d.path))
    return out
