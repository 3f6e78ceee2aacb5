"""`kdissect live --metrics` scraped by a real Prometheus (Debian's `prometheus` package) while real traffic flows.

A recorded capture of librdkafka clients against tansu is played by tcpreplay, at its recorded pace, onto a veth pair
in a private network namespace (rig/replay.py); `kdissect live` captures the pair's other end and serves its
metrics on the namespace's loopback, where a Prometheus started by the test (its own config and data directory,
stopped by its PID) scrapes it every second. The test then asks Prometheus' HTTP API, as a dashboard would, and
holds the answers against what is known of the traffic without kdissect's live path: the capture's manifest
(records per topic and partition), the rig's own reader (rig/pcapinfo.py: requests per API and version), the
file read by `kdissect read`'s core (errors by name) and the packet count of the file. The same tap pushes over
OTLP/HTTP (`--otlp`) every second to a receiver in the namespace, and its newest complete push must say what
Prometheus says. Takes about 25 seconds.

Needs root, iproute2, ethtool, tcpreplay and prometheus (Debian: apt-get install iproute2 ethtool tcpreplay
prometheus); skipped, saying which is missing, otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kdissect.capture import open_capture
from kdissect.dissector import Options, file_dissector
from kdissect.filter import compile_filter
from kdissect.metrics import definitions as m
from kdissect.schema import BUILTIN
from rig.pcapinfo import api_name, summarize
from rig.replay import ReplayNs, inside, missing, replay_ns, tcpreplay

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "captures" / "consumer-group-confluent.pcap"
TAP = "127.0.0.1:9465"
PROMETHEUS = "127.0.0.1:9090"
"""Both on the namespace's own loopback: fixed ports are free in a namespace made for the test."""
OTLP = "127.0.0.1:4318"
RECEIVER = """
import http.server, itertools, os, pathlib, sys
out, count = pathlib.Path(sys.argv[1]), itertools.count()
class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        name = out / f"{next(count):06d}.pb"
        name.with_suffix(".part").write_bytes(body)
        os.rename(name.with_suffix(".part"), name)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), Receiver)
(out / "ready").touch()
server.serve_forever()
"""
"""An OTLP/HTTP receiver in the namespace, each request's body kept as a file (no OpenTelemetry Collector installs
from PyPI, Debian or npm here; the bodies are decoded with opentelemetry-proto, as a Collector's receiver would)."""
GET = "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
"""Run inside the namespace to reach its loopback (the test itself is outside)."""


def lacking() -> str | None:
    return missing() or (None if shutil.which("prometheus") else "prometheus is not installed (apt-get install prometheus)")


pytestmark = pytest.mark.skipif(lacking() is not None, reason=lacking() or "")


def get(ns: ReplayNs, url: str) -> str:
    return subprocess.run(inside(ns.name, [sys.executable, "-c", GET, url]), capture_output=True, text=True, timeout=30).stdout


def query(ns: ReplayNs, promql: str, path: str = "query", **params: str) -> list[dict]:
    """Prometheus' answer to `promql` (its HTTP API), the result list; [] while it has nothing."""
    from urllib.parse import urlencode

    text = get(ns, f"http://{PROMETHEUS}/api/v1/{path}?{urlencode({'query': promql, **params})}")
    answer = json.loads(text) if text else {}
    return answer.get("data", {}).get("result", []) if answer.get("status") == "success" else []


def summed(ns: ReplayNs, metric: m.Metric, *by: str) -> Counter:
    """`sum by (...)` of a metric's newest values, keyed by the label values (Prometheus' names for the attributes)."""
    labels = [m.prometheus_label(a) for a in by]
    name = metric.prometheus + ("_count" if metric.kind == "histogram" else "")
    out: Counter = Counter()
    for row in query(ns, f"sum by ({', '.join(labels)}) ({name})"):
        out[tuple(row["metric"].get(label, "") for label in labels)] += round(float(row["value"][1]))
    return out


def scalar(ns: ReplayNs, metric: m.Metric) -> float | None:
    rows = query(ns, f"sum({metric.prometheus})")
    return float(rows[0]["value"][1]) if rows else None


def started(argv: list[str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)


def stop(process: subprocess.Popen) -> None:
    """By its PID (`ip netns exec` execs the program itself): SIGTERM, then SIGKILL if it has not gone in 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def wait_for(check, seconds: float, what: str, logs: list[Path]):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    pytest.fail(f"{what} within {seconds:.0f} s; logs:\n" + "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in logs))


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[tuple[ReplayNs, list[Path], Path]]:
    """The namespace with the tap, Prometheus and an OTLP receiver running in it; all stopped, and the namespace
    deleted, after."""
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        f"scrape_configs:\n  - job_name: kdissect\n    static_configs:\n      - targets: ['{TAP}']\n"
    )
    logs = [tmp_path / "kdissect.log", tmp_path / "prometheus.log", tmp_path / "receiver.log"]
    pushed = tmp_path / "otlp"
    pushed.mkdir()
    with replay_ns(f"m{time.monotonic_ns() % 100000}") as ns:
        receiver = started(inside(ns.name, [sys.executable, "-c", RECEIVER, str(pushed), OTLP.rpartition(":")[2]]), logs[2])
        wait_for(lambda: (pushed / "ready").exists(), 30, "the OTLP receiver did not start", logs)
        env_python = [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])"]
        live = ["live", "-i", ns.capture, "--metrics", TAP, "--otlp", f"http://{OTLP}", "--otlp-interval", "1"]
        tap = started(inside(ns.name, [*env_python, *live]), logs[0])
        prometheus = started(
            inside(
                ns.name,
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'data'}",
                    f"--web.listen-address={PROMETHEUS}",
                    "--log.level=warn",
                ],
            ),
            logs[1],
        )
        try:
            wait_for(lambda: "listening on" in logs[0].read_text(), 30, "kdissect live did not start listening", logs)
            wait_for(lambda: get(ns, f"http://{PROMETHEUS}/-/ready").strip(), 30, "Prometheus was not ready", logs)
            wait_for(lambda: scalar(ns, m.PACKETS) == 0, 30, "Prometheus did not scrape the tap", logs)
            yield ns, logs, pushed
        finally:
            stop(prometheus)
            stop(tap)
            stop(receiver)


def pushed_values(payload: bytes, metric: m.Metric, *by: str) -> Counter:
    """A metric's values in one OTLP request, summed by the attributes `by` (a histogram's count)."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    sent = ExportMetricsServiceRequest.FromString(payload)
    out: Counter = Counter()
    for found in (x for rm in sent.resource_metrics for sm in rm.scope_metrics for x in sm.metrics if x.name == metric.name):
        for point in getattr(found, found.WhichOneof("data")).data_points:
            attributes = {a.key: a.value.string_value or str(a.value.int_value) for a in point.attributes}
            value = point.count if metric.kind == "histogram" else getattr(point, point.WhichOneof("value"))
            out[tuple(attributes.get(a, "") for a in by)] += round(value)
    return out


def test_prometheus_scrapes_and_otlp_receives_what_the_traffic_was(rig: tuple[ReplayNs, list[Path], Path]) -> None:
    ns, logs, pushed = rig
    with open_capture(CAPTURE) as source:
        packets = list(source.packets())
        exchanges = [e for e in file_dissector(source, Options()).run(iter(packets)) if hasattr(e, "status")]
    began = time.time()
    tcpreplay(ns, [str(CAPTURE)])  # its recorded pace: about 11 s, scraped every second
    wait_for(lambda: scalar(ns, m.PACKETS) == len(packets), 20, f"Prometheus did not see the {len(packets)} packets", logs)

    # scraped while the traffic flowed, not once at the end: the packet count rose through values in between
    seen = query(ns, m.PACKETS.prometheus, "query_range", start=f"{began:.3f}", end=f"{time.time():.3f}", step="1")
    rising = {float(v) for row in seen for _, v in row["values"]}
    assert len(rising - {0.0, float(len(packets))}) >= 2, rising
    assert scalar(ns, m.DROPS) == 0

    lines = [json.loads(line) for line in CAPTURE.with_suffix(".manifest.jsonl").read_text().splitlines()]
    produced = Counter((x["topic"], str(x["partition"])) for x in lines if x["kind"] == "produced")
    assert +summed(ns, m.SENT, m.TOPIC, m.PARTITION) == produced
    consumed = Counter((x["topic"], str(x["partition"])) for x in lines if x["kind"] == "consumed")
    fetched = summed(ns, m.CONSUMED, m.TOPIC, m.PARTITION)
    assert set(+fetched) == set(consumed) and all(fetched[k] >= n for k, n in consumed.items())  # a retried fetch is twice on the wire

    # every answered request: one the capture leaves without an answer is counted by live when its connection ends
    # (both sides closed, or idle past --metrics-idle) or the session does; here member A's last Fetch, on a
    # connection member A closed but the broker had not yet when the capture ended
    info = summarize(str(CAPTURE), lines[0]["broker"]["port"])
    waiting = Counter((key, version) for key, version, _ in info.unanswered + info.unanswered_at_close)
    assert waiting  # the test would not see the difference otherwise
    expected: Counter = Counter()
    for (key, version), n in (info.requests - waiting).items():
        expected[(re.sub(r"[^a-z]", "", api_name(key).lower()), str(version))] += n
    answered: Counter = Counter()
    for (api, version, status), n in summed(ns, m.REQUESTS, m.API, m.VERSION, m.STATUS).items():
        answered[(api, version)] += n if status != "unanswered" else 0
    requests = +answered
    assert {(re.sub(r"[^a-z]", "", a.lower()), v): n for (a, v), n in requests.items()} == expected
    assert sum(summed(ns, m.SERVICE).values()) + sum(summed(ns, m.LONG_POLL).values()) <= sum(requests.values())

    errors = summed(ns, m.ERRORS, m.ERROR)
    assert errors  # the rebalances answer JoinGroup and Heartbeat with REBALANCE_IN_PROGRESS and the like
    for (name,), count in errors.items():
        assert sum(compile_filter([("-Y", f"error == {name}")], BUILTIN).matches(e) for e in exchanges) == count, name
    assert sum(summed(ns, m.REBALANCES).values()) >= 2

    # the same metrics pushed over OTLP/HTTP every second: the newest push that has every packet says the same
    def complete() -> bytes | None:
        for path in sorted(pushed.glob("*.pb"), reverse=True):
            payload = path.read_bytes()
            if sum(pushed_values(payload, m.PACKETS).values()) == len(packets):
                return payload
        return None

    payload = wait_for(complete, 20, "no OTLP push with every packet", logs)
    assert pushed_values(payload, m.SENT, m.TOPIC, m.PARTITION) == summed(ns, m.SENT, m.TOPIC, m.PARTITION)
    assert pushed_values(payload, m.REQUESTS, m.API, m.VERSION, m.STATUS) == summed(ns, m.REQUESTS, m.API, m.VERSION, m.STATUS)
    assert pushed_values(payload, m.SERVICE, m.API) == summed(ns, m.SERVICE, m.API)
    assert pushed_values(payload, m.ERRORS, m.ERROR) == errors
