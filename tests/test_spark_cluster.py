"""`kdissect spark` on a real Spark standalone cluster: a master and two workers on 127.0.0.1, started from pyspark's
own launcher by scripts/spark-standalone.sh (as a user would) and stopped by process id. The tables it writes
are those `kdissect tables` writes on one machine, row by row, and both workers ran executors.

About a minute on two busy cores: the JVMs start, then one job."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import time

import pytest
from test_pipeline import assert_same_table

from kdissect.pipeline.local import LocalJob, captures_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "spark-standalone.sh")
CAPTURES = [
    os.path.join(ROOT, "captures", n) for n in ("consumer-group-confluent.pcap", "admin-confluent.pcap", "produce-transactions.pcap")
]
SHIM = "import sys; from kdissect.cli import main; main(sys.argv[1:])"


@pytest.fixture
def cluster(spark_ready, tmp_path):
    """The master's URL, and the folder of the cluster's logs; the cluster is stopped afterwards, by process id."""
    folder = str(tmp_path / "cluster")
    env = {**os.environ, "PYTHON": sys.executable}
    started = subprocess.run([SCRIPT, "start", folder, "2"], capture_output=True, timeout=180, check=False, env=env)
    try:
        assert started.returncode == 0, started.stderr.decode()
        yield started.stdout.decode().strip(), folder
    finally:
        pids = [int(open(p).read()) for p in glob.glob(os.path.join(folder, "*.pid"))]
        subprocess.run([SCRIPT, "stop", folder], timeout=60, check=False)
        assert pids and not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    for _ in range(100):  # a JVM takes a moment to end after SIGTERM
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.1)
    return True


def test_a_standalone_cluster_writes_the_tables_of_one_machine(cluster, tmp_path):
    url, folder = cluster
    out = tmp_path / "spark"
    done = subprocess.run(
        [sys.executable, "-c", SHIM, "spark", *CAPTURES, "--out", str(out), "--master", url, "--quiet"],
        capture_output=True,
        timeout=300,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    for log in sorted(glob.glob(os.path.join(folder, "worker-*.log"))):
        assert "Asked to launch executor" in open(log).read(), log  # both workers worked
    local = str(tmp_path / "local")
    LocalJob(captures_of(CAPTURES)[0], local, {"ports": [9092]}).run()
    counts = {name: assert_same_table(str(out), local, name) for name in ("exchanges", "records", "diagnostics", "findings")}
    assert counts["exchanges"] > 100 and counts["records"] > 0 and counts["findings"] > 0
