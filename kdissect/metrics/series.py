"""The tap's counters, histograms and gauges, and the snapshots the exporters write.

One `Family` per metric holds its series by label values (a tuple in the order of the metric's attributes), each
with when it was created and last measured. A family holds at most `most` series: past it, new label sets are
folded into one series whose every label is `other`. `sweep` drops the series idle since a time; a counter that
comes back starts again from 0, which Prometheus' rate() and OpenTelemetry's start time both read as a reset.

A `Snapshot` is immutable: made on the capture loop's thread, it can be written on another (the HTTP server's, the
OTLP pusher's) while the loop goes on measuring.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from kdissect.metrics.budget import OTHER
from kdissect.metrics.definitions import DURATION_BUCKETS, Metric

Labels = tuple[str, ...]


class Series:
    __slots__ = ("value", "created", "last")

    def __init__(self, created: int) -> None:
        self.value: float = 0
        self.created = created
        self.last = created


class HistogramSeries(Series):
    __slots__ = ("counts", "count", "min", "max")

    def __init__(self, created: int, buckets: int) -> None:
        super().__init__(created)
        self.counts = [0] * (buckets + 1)
        """Per bucket, not cumulative; the last is past the largest bound."""
        self.count = 0
        self.min = float("inf")
        self.max = float("-inf")


@dataclass(frozen=True, slots=True)
class HistogramPoint:
    counts: tuple[int, ...]
    """Per bucket (not cumulative), one more than `bounds`: the last is past the largest bound."""
    sum: float
    count: int
    bounds: tuple[float, ...]
    min: float
    max: float


@dataclass(frozen=True, slots=True)
class Point:
    labels: Labels
    value: float | HistogramPoint
    created: int
    """When the series started (ns): its counters count from there."""


@dataclass(frozen=True, slots=True)
class FamilyPoints:
    metric: Metric
    points: tuple[Point, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    ts: int
    """When it was taken (ns since the epoch: the capture's clock)."""
    families: tuple[FamilyPoints, ...]

    def family(self, name: str) -> FamilyPoints | None:
        return next((f for f in self.families if f.metric.name == name), None)


class Family:
    """The series of one metric."""

    __slots__ = ("metric", "most", "series", "folded", "evicted", "_other")

    def __init__(self, metric: Metric, most: int) -> None:
        self.metric = metric
        self.most = most
        self.series: dict[Labels, Series] = {}
        self.folded = 0
        """Measurements folded into the all-`other` series because the family was full."""
        self.evicted = 0
        self._other = (OTHER,) * len(metric.attributes)

    def _new(self, now: int) -> Series:
        return Series(now)

    def _at(self, labels: Labels, now: int) -> Series:
        series = self.series.get(labels)
        if series is None:
            if len(self.series) >= self.most and labels != self._other:
                self.folded += 1
                return self._at(self._other, now)
            series = self.series[labels] = self._new(now)
        series.last = now
        return series

    def add(self, labels: Labels, value: float, now: int) -> None:
        """A counter's increment."""
        self._at(labels, now).value += value

    def set(self, labels: Labels, value: float, now: int) -> None:
        """A gauge's value (or a counter's total, when the count is kept elsewhere: packets, drops)."""
        self._at(labels, now).value = value

    def observe(self, labels: Labels, value: float, now: int) -> None:
        raise TypeError(f"{self.metric.name} is a {self.metric.kind}, not a histogram")

    def forget(self, labels: Labels) -> None:
        self.series.pop(labels, None)

    def sweep(self, before: int) -> int:
        idle = [labels for labels, series in self.series.items() if series.last < before]
        for labels in idle:
            del self.series[labels]
        self.evicted += len(idle)
        return len(idle)

    def points(self) -> FamilyPoints:
        return FamilyPoints(self.metric, tuple(Point(labels, s.value, s.created) for labels, s in self.series.items()))


class Histogram(Family):
    __slots__ = ("bounds",)

    def __init__(self, metric: Metric, most: int, bounds: tuple[float, ...] = DURATION_BUCKETS) -> None:
        super().__init__(metric, most)
        self.bounds = bounds

    def _new(self, now: int) -> Series:
        return HistogramSeries(now, len(self.bounds))

    def observe(self, labels: Labels, value: float, now: int) -> None:
        series = self._at(labels, now)
        assert isinstance(series, HistogramSeries)
        series.counts[bisect.bisect_left(self.bounds, value)] += 1
        series.value += value
        series.count += 1
        if value < series.min:
            series.min = value
        if value > series.max:
            series.max = value

    def points(self) -> FamilyPoints:
        bounds = self.bounds
        return FamilyPoints(
            self.metric,
            tuple(
                Point(labels, HistogramPoint(tuple(s.counts), s.value, s.count, bounds, s.min, s.max), s.created)
                for labels, s in self.series.items()
                if isinstance(s, HistogramSeries)
            ),
        )


def family(metric: Metric, most: int) -> Family:
    return Histogram(metric, most) if metric.kind == "histogram" else Family(metric, most)
