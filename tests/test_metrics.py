"""The tap (kdissect/metrics/) over real captures: what it counts against the captures' manifests and the rig's own
reader (rig/pcapinfo.py, which shares no code with kdissect), its bounds (top-N labels, series per metric, idle
eviction), text from the wire in labels, the OpenMetrics file against Prometheus' own promtool, and OTLP payloads
sent by the OpenTelemetry SDK's exporter and read back with opentelemetry-proto.

The live endpoint scraped by a real Prometheus is tests/test_metrics_live.py.
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from kdissect.capture import open_capture
from kdissect.dissector import Options, file_dissector
from kdissect.filter import compile_filter
from kdissect.metrics import definitions as m
from kdissect.metrics.budget import OTHER
from kdissect.metrics.series import HistogramPoint, Snapshot
from kdissect.metrics.tap import SECOND, Tap, TapSettings
from kdissect.schema import BUILTIN
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response
from rig.pcapinfo import api_name, summarize

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
DOCS = ROOT / "docs" / "metrics.md"


def tapped(path: Path, settings: TapSettings = TapSettings(), wanted=None) -> tuple[Tap, Snapshot]:
    """A capture's events through a tap, as `read --metrics` feeds it; its last window closed."""
    tap = Tap(settings, wanted) if wanted is not None else Tap(settings)
    with open_capture(path) as source:
        dissector = file_dissector(source, Options())
        for packet in source.packets():
            for event in dissector.feed(packet):
                tap.add(event)
        for event in dissector.finish():
            tap.add(event)
    tap.close_window(tap.now)
    return tap, tap.snapshot()


def crafted_tap(packets: list, settings: TapSettings = TapSettings()) -> tuple[Tap, Snapshot]:
    from kdissect.dissector import make_dissector

    tap = Tap(settings)
    dissector = make_dissector(Options())
    for packet in packets:
        for event in dissector.feed(packet):
            tap.add(event)
    for event in dissector.finish():
        tap.add(event)
    return tap, tap.snapshot()


def values(snapshot: Snapshot, metric: m.Metric, *by: str) -> Counter:
    """A metric's values summed by the attributes `by` (a histogram's count)."""
    family = snapshot.family(metric.name)
    assert family is not None
    at = [metric.attributes.index(a) for a in by]
    out: Counter = Counter()
    for point in family.points:
        value = point.value.count if isinstance(point.value, HistogramPoint) else point.value
        out[tuple(point.labels[i] for i in at)] += value
    return out


def manifest(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.with_suffix(".manifest.jsonl").read_text().splitlines()]


# -- what it counts -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["consumer-group-confluent", "many-records-mtu1500", "client-kafka-python", "doctor-lag"])
def test_records_produced_and_consumed_per_topic_match_the_manifest(name: str) -> None:
    path = CAPTURES / f"{name}.pcap"
    lines = manifest(path)
    _, snapshot = tapped(path)
    produced = Counter((line["topic"], str(line["partition"])) for line in lines if line["kind"] == "produced")
    sent = values(snapshot, m.SENT, m.TOPIC, m.PARTITION)
    assert +sent == produced
    consumed = {(line["topic"], str(line["partition"])) for line in lines if line["kind"] == "consumed"}
    fetched = values(snapshot, m.CONSUMED, m.TOPIC, m.PARTITION)
    assert set(+fetched) == consumed  # a record a consumer was sent twice (a retried fetch) is on the wire twice
    assert all(fetched[key] >= n for key, n in Counter((x["topic"], str(x["partition"])) for x in lines if x["kind"] == "consumed").items())


@pytest.mark.parametrize("name", ["consumer-group-confluent", "doctor-missing-topic", "produce-transactions", "healthy-kafkajs"])
def test_requests_per_api_match_an_independent_reader(name: str) -> None:
    path = CAPTURES / f"{name}.pcap"
    port = manifest(path)[0]["broker"]["port"]
    expected = Counter()
    for (key, version), n in summarize(str(path), port).requests.items():
        expected[(api_name(key), str(version))] += n
    _, snapshot = tapped(path)
    counted = values(snapshot, m.REQUESTS, m.API, m.VERSION)
    assert {(re.sub(r"[^a-z]", "", a.lower()), v): n for (a, v), n in counted.items()} == {
        (re.sub(r"[^a-z]", "", a.lower()), v): n for (a, v), n in expected.items()
    }


def test_errors_by_error_type_count_what_the_filter_counts() -> None:
    """Each error name once per response that holds it: the exchanges `-Y 'error == NAME'` selects."""
    path = CAPTURES / "doctor-missing-topic.pcap"
    _, snapshot = tapped(path)
    errors = values(snapshot, m.ERRORS, m.ERROR)
    assert errors[("UNKNOWN_TOPIC_OR_PARTITION",)] > 0
    with open_capture(path) as source:
        exchanges = [e for e in file_dissector(source, Options()).run(source.packets()) if hasattr(e, "status")]
    for name, count in errors.items():
        wanted = compile_filter([("-Y", f"error == {name[0]}")], BUILTIN)
        assert sum(wanted.matches(e) for e in exchanges) == count


def test_long_polls_are_apart_from_the_brokers_time() -> None:
    """healthy-long-poll-telemetry: the Fetches that waited out MaxWaitMs are the doctor's long polls, and they are
    not in the service time; every answered Fetch is in one of the two."""
    path = CAPTURES / "healthy-long-poll-telemetry.pcap"
    tap, snapshot = tapped(path, TapSettings(window=3600))
    assert tap.report is not None
    long_polls = sum(f.evidence.count for f in tap.report.findings if f.id == "consumer.long-poll")
    polled = values(snapshot, m.LONG_POLL, m.API)[("Fetch",)]
    assert polled == long_polls > 0
    served = values(snapshot, m.SERVICE, m.API)[("Fetch",)]
    answered = values(snapshot, m.REQUESTS, m.API, m.STATUS)
    assert served + polled == answered[("Fetch", "ok")] + answered[("Fetch", "error")]
    queued = values(snapshot, m.QUEUE, m.API)
    assert queued[("Fetch",)] == served + polled


def test_lag_rebalances_and_findings() -> None:
    tap, snapshot = tapped(CAPTURES / "doctor-rebalance-storm.pcap", TapSettings(window=3600))
    generations = {g for _, group in tap.doctor.rebalances.groups.items() for g in group.generations}
    assert tap.report is not None and {f.id for f in tap.report.findings} >= {"group.rebalance-storm"}
    rebalances = values(snapshot, m.REBALANCES, m.GROUP)
    assert sum(rebalances.values()) >= 1
    findings = values(snapshot, m.FINDINGS, m.FINDING, m.SEVERITY)
    storm = next(f for f in tap.report.findings if f.id == "group.rebalance-storm")
    assert findings[("group.rebalance-storm", "warning")] == storm.evidence.count
    assert generations is not None

    _, lagging = tapped(CAPTURES / "doctor-lag.pcap")
    lag = values(lagging, m.LAG, m.TOPIC)
    assert lag[("laggy",)] >= 100  # the manifest's expect line: lag on laggy grows past the doctor's threshold
    assert values(lagging, m.GROUP_LAG, m.TOPIC)[("laggy",)] >= 0


def test_rebalances_count_every_generation_once() -> None:
    """Every generation a JoinGroup response announced, as `stats` lists the group's generations."""
    from kdissect.views.stats import Stats

    path = CAPTURES / "doctor-members-come-and-go.pcap"
    stats = Stats()
    with open_capture(path) as source:
        for event in file_dissector(source, Options()).run(source.packets()):
            if hasattr(event, "status"):
                stats.add(event)
    groups = dict(stats.tables())["groups"]
    _, snapshot = tapped(path)
    counted = values(snapshot, m.REBALANCES, m.GROUP)
    assert {name: n for (name,), n in counted.items()} == {g["group"]: len(g["generations"]) for g in groups}
    generation = values(snapshot, m.GENERATION, m.GROUP)
    assert {name: n for (name,), n in generation.items()} == {g["group"]: max(g["generations"]) for g in groups}


def test_the_client_inventory() -> None:
    """Software as ApiVersions v3 names it, the versions of each API used, and the connections closed by the end."""
    _, snapshot = tapped(CAPTURES / "client-confluent.pcap")
    inventory = values(snapshot, m.CLIENTS, m.SOFTWARE_NAME, m.SOFTWARE_VERSION)
    assert set(inventory) == {("confluent-kafka-python", "2.16.1-rdkafka-2.16.0")}
    assert sum(inventory.values()) == 0  # every connection of the capture was closed by its end
    versions = values(snapshot, m.API_VERSIONS, m.CLIENT_ID, m.API)
    assert versions[("kdrig-producer", "Produce")] == 10 or any(api == "Produce" for _, api in versions)
    relations = values(snapshot, m.PRODUCER_TOPIC, m.CLIENT_ID, m.TOPIC)
    assert relations and all(v == 1 for v in relations.values())


# -- bounds ------------------------------------------------------------------------------------------------------


def _clients(count: int, throttle_ms: int = 0) -> list:
    """One connection per client id, each an ApiVersions v2 answered (with ThrottleTimeMs)."""
    clock = Clock(step=10_000)
    packets: list = []
    for k in range(count):
        conv = Conversation(client=f"10.1.{k // 250}.{k % 250 + 1}", clock=clock)
        packets += conv.handshake()
        body = encode_body(18, 2, "request", {})
        packets += conv.send(CLIENT, request(18, 2, 1, body, client_id=f"client-{k:03d}"))
        answer = encode_body(18, 2, "response", {"ErrorCode": 0, "ApiKeys": [], "ThrottleTimeMs": throttle_ms})
        packets += conv.send(SERVER, response(1, answer))
        packets += conv.close()
    return packets


def test_top_n_client_ids_the_rest_as_other_told_once() -> None:
    tap, snapshot = crafted_tap(_clients(30), TapSettings(top=5))
    by_client = values(snapshot, m.REQUESTS, m.CLIENT_ID)
    assert len(by_client) == 6 and by_client[(OTHER,)] == 25
    told = list(tap.told())
    assert len([line for line in told if "client ids" in line]) == 1 and not list(tap.told())
    overflow = values(snapshot, m.OVERFLOW, m.LABEL)
    assert overflow[("client ids",)] >= 25


def test_a_full_metric_folds_new_series_into_one_labelled_other() -> None:
    tap, snapshot = crafted_tap(_clients(12), TapSettings(most=4))
    family = snapshot.family(m.REQUESTS.name)
    assert family is not None and len(family.points) == 5  # 4, and the all-`other` one
    assert any(all(label == OTHER for label in p.labels) for p in family.points)
    assert any("holds 4 series" in line for line in tap.told())


def test_idle_series_and_names_are_let_go_and_come_back_from_zero() -> None:
    tap, first = crafted_tap(_clients(3), TapSettings(top=3, idle=60))
    assert len(first.family(m.REQUESTS.name).points) == 3  # type: ignore[union-attr]
    later = tap.now + 3600 * SECOND
    tap.tick(tap.now)
    tap.tick(later)  # past the sweep's turn and the idle time
    empty = tap.snapshot(later)
    assert not empty.family(m.REQUESTS.name).points  # type: ignore[union-attr]
    assert len(tap.client_ids) == 0 and values(empty, m.EVICTED)[()] > 0


def test_throttle_time_is_counted_in_seconds() -> None:
    _, snapshot = crafted_tap(_clients(2, throttle_ms=250))
    assert values(snapshot, m.THROTTLE)[()] == pytest.approx(0.5)
    assert values(snapshot, m.THROTTLED)[()] == 2


def test_text_from_the_wire_is_escaped_in_labels(tmp_path: Path) -> None:
    """hostile-strings-kafka-python's client ids and topics hold control characters: the exposition names them with
    visible escapes, never the raw characters."""
    out = tmp_path / "hostile.prom"
    done = kdissect("read", CAPTURES / "hostile-strings-kafka-python.pcap", "-q", "--metrics", out)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "\\\\x1b" in text or "\\\\u202e" in text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u202e]", text)


def test_a_display_filter_restricts_what_is_measured() -> None:
    path = CAPTURES / "consumer-group-confluent.pcap"
    wanted = compile_filter([("-Y", "api == Produce")], BUILTIN)
    _, snapshot = tapped(path, wanted=wanted)
    assert set(values(snapshot, m.REQUESTS, m.API)) == {("Produce",)}


# -- the file, the docs, OTLP ---------------------------------------------------------------------------------------


def kdissect(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_read_writes_snapshots_with_timestamps_that_promtool_backfills(tmp_path: Path) -> None:
    out = tmp_path / "storm.prom"
    done = kdissect("read", CAPTURES / "doctor-rebalance-storm.pcap", "-q", "--metrics", out, "--metrics-interval", "10")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.endswith("# EOF\n")
    points = [
        (float(stamp), float(value))
        for value, stamp in re.findall(r"^kafka_consumer_group_rebalances_total\{[^}]*\} (\S+) (\S+)$", text, re.MULTILINE)
    ]
    assert len(points) >= 5 and points == sorted(points)  # a point every 10 s of the 51 s capture, oldest first, never going back
    if shutil.which("promtool") is None:
        pytest.skip("promtool (Debian's prometheus package) is not installed")
    made = subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(out), str(tmp_path / "tsdb")], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    assert "NUM SAMPLES" in made.stdout


def test_docs_list_every_metric_with_its_names_and_attributes() -> None:
    text = DOCS.read_text()
    for metric in m.METRICS:
        assert f"`{metric.prometheus}`" in text and f"`{metric.name}`" in text, metric.name
        row = next(line for line in text.splitlines() if f"`{metric.prometheus}`" in line)
        for attribute in metric.attributes:
            assert f"`{m.prometheus_label(attribute)}`" in row or f"`{attribute}`" in row, (metric.name, attribute)


class _Sink(http.server.BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:
        self.received.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_otlp_pushes_what_prometheus_reads() -> None:
    """The SDK's OTLP/HTTP exporter sends a snapshot; opentelemetry-proto reads it back (no OpenTelemetry Collector
    installs from PyPI, Debian or npm here): every counter's sum and histogram's count is the snapshot's."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    from kdissect.metrics.otlp import Pusher

    _, snapshot = tapped(CAPTURES / "consumer-group-confluent.pcap")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    _Sink.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    told: list[str] = []
    try:
        pusher = Pusher(f"http://127.0.0.1:{server.server_port}", {"service.name": "kdissect"}, told)
        pusher.close(snapshot)
    finally:
        server.shutdown()
        server.server_close()
    assert pusher.pushed == 1 and not told and len(_Sink.received) == 1
    sent = ExportMetricsServiceRequest.FromString(_Sink.received[0])
    metrics = {metric.name: metric for rm in sent.resource_metrics for sm in rm.scope_metrics for metric in sm.metrics}
    for metric in (m.REQUESTS, m.SENT, m.CONSUMED, m.REBALANCES):
        points = metrics[metric.name].sum.data_points
        assert metrics[metric.name].sum.is_monotonic
        assert sum(getattr(p, p.WhichOneof("value")) for p in points) == sum(values(snapshot, metric).values()), metric.name
    histogram = metrics[m.SERVICE.name].histogram
    assert sum(p.count for p in histogram.data_points) == sum(values(snapshot, m.SERVICE).values())
    point = histogram.data_points[0]
    assert list(point.explicit_bounds) == list(m.DURATION_BUCKETS) and sum(point.bucket_counts) == point.count
    attributes = {a.key for a in metrics[m.SENT.name].sum.data_points[0].attributes}
    assert attributes == set(m.SENT.attributes)  # OpenTelemetry's own names: messaging.destination.name, ...
