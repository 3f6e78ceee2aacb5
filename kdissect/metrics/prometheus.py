"""Snapshots as Prometheus metric families (prometheus_client's), and as an OpenMetrics file with timestamps.

The names are `Metric.prometheus`, the labels the attributes with dots made underscores; a label the tap left
empty (no topic for a request that names several) is left out, as Prometheus treats an empty label as absent.
Counters carry their start (`_created`), so a series that was let go when idle and came back reads as a reset.

`read FILE --metrics OUT.prom` writes every snapshot of the capture into one file: each series' points in time
order, each with its timestamp, as OpenMetrics allows for backfilling (`promtool tsdb create-blocks-from
openmetrics OUT.prom DIR` makes Prometheus blocks of it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import IO

from prometheus_client.metrics_core import Metric as Family
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.utils import floatToGoString

from kdissect.metrics.definitions import Metric, prometheus_label
from kdissect.metrics.series import HistogramPoint, Point, Snapshot

SUFFIX_UNITS = ("seconds", "bytes")
"""The units OpenMetrics is told of: those the names end with."""


def _family(metric: Metric) -> tuple[Family, str]:
    name = metric.prometheus
    base = name.removesuffix("_total") if metric.kind == "counter" else name
    unit = next((u for u in SUFFIX_UNITS if base.endswith("_" + u)), "")
    return Family(base, metric.description, metric.kind, unit), base


def _add(family: Family, base: str, metric: Metric, point: Point, ts: float | None) -> None:
    labels = {prometheus_label(a): v for a, v in zip(metric.attributes, point.labels) if v}
    value = point.value
    if isinstance(value, HistogramPoint):
        total = 0
        for bound, count in zip((*value.bounds, math.inf), value.counts):
            total += count
            family.add_sample(f"{base}_bucket", {**labels, "le": floatToGoString(bound)}, total, ts)
        family.add_sample(f"{base}_count", labels, value.count, ts)
        family.add_sample(f"{base}_sum", labels, value.sum, ts)
        family.add_sample(f"{base}_created", labels, point.created / 1e9, ts)
    elif metric.kind == "counter":
        family.add_sample(f"{base}_total", labels, value, ts)
        family.add_sample(f"{base}_created", labels, point.created / 1e9, ts)
    else:
        family.add_sample(base, labels, value, ts)


def families(snapshot: Snapshot) -> Iterator[Family]:
    """One snapshot as metric families without timestamps: what a scrape reads (Prometheus stamps it)."""
    for points in snapshot.families:
        family, base = _family(points.metric)
        for point in points.points:
            _add(family, base, points.metric, point, None)
        yield family


def timeline(snapshots: Iterable[Snapshot]) -> Iterator[Family]:
    """Many snapshots as metric families with timestamps: each series' points together, oldest first."""
    by_metric: dict[str, tuple[Metric, dict[tuple[str, ...], list[tuple[int, Point]]]]] = {}
    for snapshot in snapshots:
        for points in snapshot.families:
            series = by_metric.setdefault(points.metric.name, (points.metric, {}))[1]
            for point in points.points:
                series.setdefault(point.labels, []).append((snapshot.ts, point))
    for metric, series in by_metric.values():
        family, base = _family(metric)
        for timed in series.values():
            for ts, point in timed:
                _add(family, base, metric, point, ts / 1e9)
        yield family


class _Families:
    """A collector of fixed families: what `generate_latest` takes."""

    def __init__(self, made: Iterable[Family]) -> None:
        self._made = made

    def collect(self) -> Iterable[Family]:
        return self._made


def write(snapshots: Iterable[Snapshot], stream: IO[bytes]) -> None:
    """The OpenMetrics text of `snapshots` (with timestamps), ended by `# EOF`."""
    stream.write(generate_latest(_Families(timeline(snapshots))))
