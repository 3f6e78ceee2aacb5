"""The parts of one stream a cut keeps, and where each kept byte lands once the rest is gone."""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate


class Spans:
    """Kept [start, end) stream offsets of one direction, merged where they touch, in order.

    Exchanges arrive roughly in stream order, so a span usually extends or follows the last one; `freeze` then
    readies the lookups a rewriting pass makes per packet (a bisect each)."""

    __slots__ = ("starts", "ends", "_before")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self._before: list[int] = []
        """Kept bytes before each span: where its first byte lands in the rewritten stream."""

    def add(self, start: int, end: int) -> None:
        if start >= end:
            return
        starts, ends = self.starts, self.ends
        if not starts or start > ends[-1]:
            starts.append(start)
            ends.append(end)
            return
        at = bisect_right(starts, start)
        lo = at - 1 if at and ends[at - 1] >= start else at
        hi = at
        while hi < len(starts) and starts[hi] <= end:
            hi += 1
        if lo < hi:
            start, end = min(start, starts[lo]), max(end, ends[hi - 1])
        starts[lo:hi], ends[lo:hi] = [start], [end]

    def freeze(self) -> None:
        self._before = [0, *accumulate(e - s for s, e in zip(self.starts, self.ends))]

    def kept(self, start: int, end: int) -> list[tuple[int, int]]:
        """The kept parts of [start, end), in order."""
        starts, ends = self.starts, self.ends
        at = max(0, bisect_right(starts, start) - 1)
        out = []
        while at < len(starts) and starts[at] < end:
            lo, hi = max(start, starts[at]), min(end, ends[at])
            if lo < hi:
                out.append((lo, hi))
            at += 1
        return out

    def moved(self, offset: int) -> int:
        """Where `offset` lands in the stream of kept bytes alone: how many kept bytes come before it."""
        at = bisect_right(self.starts, offset) - 1
        if at < 0:
            return 0
        return self._before[at] + min(offset, self.ends[at]) - self.starts[at]

    def covers(self, offset: int) -> bool:
        at = bisect_right(self.starts, offset) - 1
        return at >= 0 and offset < self.ends[at]

    def __bool__(self) -> bool:
        return bool(self.starts)
