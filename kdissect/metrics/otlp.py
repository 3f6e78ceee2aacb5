"""`--otlp URL`: the same metrics pushed over OTLP/HTTP with the OpenTelemetry SDK's exporter.

Every `interval` seconds the capture loop hands a snapshot to `Pusher.offer`; a thread turns it into the SDK's
`MetricsData` (cumulative sums, histograms and gauges, each series with its start time) and the SDK's
`OTLPMetricExporter` sends it as protobuf. The loop never waits on the network: while a push is still going, a newer
snapshot replaces the one waiting, and what was replaced is counted (`skipped`). A collector that does not answer
costs the exporter's timeout on the pushing thread, and a line on standard error the first time.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from kdissect.metrics.series import HistogramPoint, Snapshot

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricsData

PATH = "/v1/metrics"
"""OTLP/HTTP's path for metrics, added to a URL that names none (http://collector:4318)."""
TIMEOUT = 10.0


class OtlpError(ValueError):
    """A URL that cannot be pushed to, or an SDK that is not installed; one line for the user."""


def endpoint(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OtlpError(f"--otlp {url}: give the collector's OTLP/HTTP URL, such as http://127.0.0.1:4318")
    return url if parts.path not in ("", "/") else url.rstrip("/") + PATH


def metrics_data(snapshot: Snapshot, resource: dict[str, str]) -> MetricsData:
    """A snapshot as the SDK's `MetricsData`: what its OTLP exporters send."""
    from opentelemetry.sdk.metrics.export import (
        AggregationTemporality,
        Gauge,
        Histogram,
        HistogramDataPoint,
        Metric,
        MetricsData,
        NumberDataPoint,
        ResourceMetrics,
        ScopeMetrics,
        Sum,
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from kdissect import __version__

    cumulative = AggregationTemporality.CUMULATIVE
    now = snapshot.ts
    metrics = []
    for family in snapshot.families:
        definition = family.metric
        if not family.points:
            continue
        data: Sum | Gauge | Histogram
        if definition.kind == "histogram":
            points = []
            for point in family.points:
                value = point.value
                assert isinstance(value, HistogramPoint)
                attributes = dict(zip(definition.attributes, point.labels))
                points.append(
                    HistogramDataPoint(
                        attributes, point.created, now, value.count, value.sum, value.counts, value.bounds, value.min, value.max
                    )
                )
            data = Histogram(points, cumulative)
        else:
            numbers = [
                NumberDataPoint(dict(zip(definition.attributes, p.labels)), p.created, now, p.value)  # type: ignore[arg-type]  # a counter's or gauge's point holds a number: HistogramPoint is a histogram's
                for p in family.points
            ]
            data = Sum(numbers, cumulative, True) if definition.kind == "counter" else Gauge(numbers)
        metrics.append(Metric(definition.name, definition.description, definition.unit, data))
    scope = ScopeMetrics(InstrumentationScope("kdissect", __version__), metrics, "")
    return MetricsData([ResourceMetrics(Resource.create(resource), [scope], "")])


class Pusher:
    """Pushes the snapshots it is offered, one at a time, on its own thread."""

    def __init__(self, url: str, resource: dict[str, str], told: list[str]) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        except ImportError as exc:
            raise OtlpError(f"--otlp needs the OpenTelemetry SDK ({exc.name} is missing): pip install 'kdissect[otlp]'") from None
        self.url = endpoint(url)
        self.resource = resource
        self.exporter = OTLPMetricExporter(endpoint=self.url, timeout=TIMEOUT)
        self.told = told
        """Where the first failure's line goes (the caller prints it)."""
        self.pushed = self.failed = self.skipped = 0
        self._waiting: queue.Queue[Snapshot | None] = queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=self._run, name="kdissect-otlp", daemon=True)
        self._thread.start()

    def offer(self, snapshot: Snapshot) -> None:
        try:
            self._waiting.put_nowait(snapshot)
        except queue.Full:
            try:
                self._waiting.get_nowait()
                self.skipped += 1
            except queue.Empty:
                pass
            self._waiting.put_nowait(snapshot)

    def _run(self) -> None:
        from opentelemetry.sdk.metrics.export import MetricExportResult

        while True:
            snapshot = self._waiting.get()
            if snapshot is None:
                return
            try:
                result = self.exporter.export(metrics_data(snapshot, self.resource))
            except Exception as exc:  # the exporter's own failures are results; anything else must not end the tap
                result, reason = MetricExportResult.FAILURE, str(exc)
            else:
                reason = "the collector refused it or did not answer"
            if result is MetricExportResult.SUCCESS:
                self.pushed += 1
            else:
                self.failed += 1
                if self.failed == 1:
                    self.told.append(f"--otlp: pushing to {self.url} failed ({reason}); trying again at each interval")

    def close(self, last: Snapshot | None, wait: float = TIMEOUT) -> None:
        """Push `last` (the session's end), then stop."""
        if last is not None:
            self.offer(last)
        try:
            self._waiting.put(None, timeout=wait)
        except queue.Full:
            pass
        self._thread.join(wait)
        self.exporter.shutdown()
