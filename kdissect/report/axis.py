"""One time axis of a fixed number of buckets for every timeline of a report, filled while the capture is read.

The capture's span is known only at its end, so the buckets start narrow and double in width whenever an event falls
past the last one: every series folds its buckets in pairs. An event before the first bucket (a request that started
before the first exchange to complete) moves the origin back and the series with it. Memory is the buckets times
the series, whatever the capture's length; a bucket's value is a sum or the most of what fell in it, both of which
fold exactly.
"""

from __future__ import annotations

BUCKETS = 720
"""Buckets on the axis; after the last doubling at least half of them are in use."""
FIRST_WIDTH = 1_000_000
"""Nanoseconds a bucket covers at first: 1 ms."""
EMPTY = -1
"""The value of a bucket of a `most` series that nothing fell in (the values it keeps are never negative)."""


class Series:
    """One line of a timeline: a value per bucket, the sum of what fell in it or, when `most`, the largest."""

    __slots__ = ("values", "most")

    def __init__(self, most: bool = False) -> None:
        self.most = most
        self.values: list[int] = [EMPTY if most else 0] * BUCKETS

    def add(self, bucket: int, value: int) -> None:
        self.values[bucket] += value

    def keep(self, bucket: int, value: int) -> None:
        """For a `most` series: the bucket keeps the larger value."""
        if value > self.values[bucket]:
            self.values[bucket] = value

    def fold(self) -> None:
        """Pairs of buckets into one, in place (the list stays the same object)."""
        v, empty = self.values, EMPTY if self.most else 0
        half = BUCKETS // 2
        if self.most:
            v[:half] = [max(v[2 * i], v[2 * i + 1]) for i in range(half)]
        else:
            v[:half] = [v[2 * i] + v[2 * i + 1] for i in range(half)]
        v[half:] = [empty] * (BUCKETS - half)

    def shift(self, by: int) -> None:
        """Every bucket `by` later; the axis has made sure the last `by` are empty."""
        self.values[:] = [EMPTY if self.most else 0] * by + self.values[: BUCKETS - by]

    def used(self, count: int) -> list[int | None]:
        """The first `count` buckets, an empty one of a `most` series as None."""
        if not self.most:
            counted: list[int | None] = list(self.values[:count])
            return counted
        return [None if value == EMPTY else value for value in self.values[:count]]

    def total(self) -> int:
        return sum(self.values) if not self.most else max(self.values)


class Axis:
    """Nanosecond times to bucket numbers, for every series made with `series()`."""

    __slots__ = ("origin", "width", "count", "_series")

    def __init__(self) -> None:
        self.origin: int | None = None
        """The first bucket's start, ns since the epoch; None until the first event."""
        self.width = FIRST_WIDTH
        self.count = 0
        """Buckets in use: one past the last that anything fell in."""
        self._series: list[Series] = []

    def series(self, most: bool = False) -> Series:
        """A new line on this axis (empty: it may be made at any time, its buckets are the axis's)."""
        made = Series(most)
        self._series.append(made)
        return made

    def at(self, ts: int) -> int:
        """The bucket of time `ts`, the axis widened or moved back to hold it."""
        origin = self.origin
        if origin is None:
            origin = self.origin = ts - ts % self.width
        bucket = (ts - origin) // self.width
        if 0 <= bucket < BUCKETS:
            if bucket >= self.count:
                self.count = bucket + 1
            return bucket
        return self._grown(ts)

    def _grown(self, ts: int) -> int:
        while True:
            assert self.origin is not None
            bucket = (ts - self.origin) // self.width
            if bucket >= BUCKETS or (bucket < 0 and self.count - bucket > BUCKETS):
                self._fold()
            elif bucket < 0:
                for series in self._series:
                    series.shift(-bucket)
                self.origin += bucket * self.width
                self.count -= bucket
                return 0
            else:
                self.count = max(self.count, bucket + 1)
                return bucket

    def _fold(self) -> None:
        for series in self._series:
            series.fold()
        self.width *= 2
        self.count = (self.count + 1) // 2

    def find(self, ts: int) -> int | None:
        """The bucket of time `ts` as the axis is, without moving it; None when it is not on the axis."""
        if self.origin is None:
            return None
        bucket = (ts - self.origin) // self.width
        return bucket if 0 <= bucket < self.count else None

    def start(self, bucket: int) -> int:
        assert self.origin is not None
        return self.origin + bucket * self.width
