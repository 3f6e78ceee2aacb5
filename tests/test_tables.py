"""`kdissect tables`: the Spark job's tables without a JVM (pipeline/local.py).

The two engines are compared row by row in tests/test_pipeline.py (it needs Spark); here, without Spark: the
findings table says what `kdissect doctor` says of every capture, with its evidence as the tables' identifiers;
the records table's directions are `kdissect records`' own; the command's mistakes are one line; a capture shared
by several processes (`--jobs`) gives the tables of one, and Ctrl-C or a killed worker leaves no tables.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pyarrow.dataset as ds
import pytest

from kdissect.capture import open_capture
from kdissect.commands import jobs
from kdissect.decode.streamed import exchange_records
from kdissect.dissector import Options, make_dissector
from kdissect.doctor.engine import Doctor
from kdissect.events import Exchange
from kdissect.pipeline import parquet_out, rows
from kdissect.pipeline.config import values_of
from kdissect.pipeline.job import Totals
from kdissect.pipeline.local import LocalJob, captures_of
from tests.test_jobs import gone
from tests.test_pipeline import ALL, FILTER, assert_same_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT = sorted(glob.glob(os.path.join(ROOT, "captures", "*.pcap*")))
SHIM = "import sys; from kdissect.cli import main; main(sys.argv[1:])"


def kdissect(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SHIM, *map(str, args)], capture_output=True, timeout=120, check=False, cwd=ROOT)


def read_table(out: str, name: str) -> list[dict]:
    return ds.dataset(os.path.join(out, name), format="parquet", partitioning="hive").to_table().to_pylist()


@pytest.fixture(scope="module")
def every_capture(tmp_path_factory) -> str:
    paths, _ = captures_of([os.path.join(ROOT, "captures")])
    out = str(tmp_path_factory.mktemp("tables") / "out")
    LocalJob(paths, out, {"ports": [9092]}).run()
    return out


@functools.cache
def cli_events(path: str) -> list:
    with open_capture(path) as capture:
        dissector = make_dissector(Options())
        capture.secrets_to(dissector.add_tls_keylog)  # as the CLI does: a pcapng's own TLS secrets
        return list(dissector.run(capture.packets()))


PER_TOPIC = "values."
"""The values family keys its findings by topic, and a connection key's dissector knows only the topic ids its own
connections named (Fetch v13+ names topics by id): the tables' findings of it differ from the CLI's where a topic is
named on another connection (docs/pipeline.md says so)."""


def test_the_findings_table_says_what_kdissect_doctor_says_of_every_capture(every_capture):
    got: dict[str, Counter] = {}
    for row in read_table(every_capture, "findings"):
        if row["finding"].startswith(PER_TOPIC):
            continue
        key = (row["finding"], row["severity"], row["title"], row["evidence_count"], row["evidence_filter"])
        got.setdefault(row["capture"], Counter())[key + (tuple(row["exchange_ids"]),)] += 1
    judged = 0
    for path in PROJECT:
        events = cli_events(path)
        doctor = Doctor(values=values_of({}))  # values read as the engines read them: no schema learnt from the capture
        for event in events:
            doctor.add(event)
        stable = {e.id: rows.exchange_id(e) for e in events if isinstance(e, Exchange)}
        want = Counter(
            (f.id, f.severity, f.title, f.evidence.count, f.evidence.filter, tuple(stable[n] for n in f.evidence.exchanges))
            for f in doctor.findings()
            if not f.id.startswith(PER_TOPIC)
        )
        assert got.get(path, Counter()) == want, path
        judged += bool(want)
    assert judged > len(PROJECT) // 2  # most captures have something to say


def test_record_directions_are_those_of_kdissect_records(every_capture):
    records = read_table(every_capture, "records")
    got = Counter((r["capture"], r["direction"], r["partition"], r["key"], r["value"]) for r in records if not r["control"])
    want: Counter = Counter()
    for path in PROJECT:
        for event in cli_events(path):
            if isinstance(event, Exchange):
                for item in exchange_records(event):
                    r = item.record
                    want[(path, item.direction, item.partition, r.key, r.value)] += 1
    assert {d for _, d, *_ in got} == {"produce", "fetch"}
    assert got == want


def test_the_command_writes_four_tables_and_says_what_it_read(tmp_path):
    path = os.path.join(ROOT, "captures", "consumer-group-kafka-python.pcap")
    done = kdissect("tables", path, "--out", tmp_path / "t", "--quiet")
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert "kdissect tables" in done.stdout.decode()
    assert sorted(os.listdir(tmp_path / "t")) == ["diagnostics", "exchanges", "findings", "records"]
    exchanges = read_table(str(tmp_path / "t"), "exchanges")
    assert len(exchanges) == sum(isinstance(e, Exchange) for e in cli_events(path))
    folders = {os.path.basename(os.path.dirname(f)) for f in glob.glob(str(tmp_path / "t" / "exchanges" / "*" / "*" / "*.parquet"))}
    assert folders == {f"api={r['api']}" for r in exchanges}


def one_error_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("kdissect: error: "), done.stderr
    return lines[0]


def test_mistakes_are_one_line_and_leave_no_tables(tmp_path):
    path = os.path.join(ROOT, "captures", "consumer-group-kafka-python.pcap")
    (tmp_path / "out" / "findings").mkdir(parents=True)
    assert "findings exists already" in one_error_line(kdissect("tables", path, "--out", tmp_path / "out"))
    assert "not a pcap or pcapng capture" in one_error_line(kdissect("tables", os.path.join(ROOT, "README.md"), "--out", tmp_path / "x"))
    assert "cannot be filtered on id" in one_error_line(kdissect("tables", path, "--out", tmp_path / "y", "-Y", "id == 3"))
    assert "writes to a local directory" in one_error_line(kdissect("tables", path, "--out", "s3a://bucket/t"))
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


# -- several processes: --jobs ---------------------------------------------------------------------------------


@functools.cache
def one_process(tmp: str, filter: str | None) -> tuple[str, Totals]:
    """Every capture, the project's and the public ones, in one process: the tables and the totals."""
    out = os.path.join(tmp, f"one-{filter is not None}")
    return out, LocalJob(dict(enumerate(ALL)), out, {"ports": [9092], "filter": filter}).run()


@pytest.mark.parametrize(("n", "filter"), [(2, None), (3, None), (2, FILTER)])
def test_several_processes_write_the_rows_and_findings_of_one(tmp_path_factory, tmp_path, monkeypatch, n, filter):
    """Each capture is shared by `n` processes by connection key, however small (the threshold forced to 0): the
    same rows, findings, partition directories and totals as one process; with a filter too (the workers decode
    only the bodies it keeps, as Spark's tasks do)."""
    one, totals_of_one = one_process(str(tmp_path_factory.getbasetemp()), filter)
    monkeypatch.setattr(jobs, "SPLIT_BYTES", 0)
    out = str(tmp_path / "out")
    config = {"ports": [9092], "filter": filter}
    totals = LocalJob(dict(enumerate(ALL)), out, config, splits=lambda path: jobs.splits(path, n)).run()
    assert totals == dataclasses.replace(totals_of_one, seconds=totals.seconds)
    for name in ("exchanges", "records", "diagnostics", "findings"):
        assert assert_same_table(one, out, name) > 0, name
    files = [os.path.basename(f) for f in glob.glob(os.path.join(out, "exchanges", "*", "*", "part-*.parquet"))]
    assert {tuple(f.removesuffix(".parquet").split("-")[3:]) for f in files} == {(), *((str(k),) for k in range(1, n))}


def test_small_captures_dealt_whole_to_processes_make_the_tables_of_one(tmp_path_factory, tmp_path):
    """Captures below the split threshold (every one here) are dealt out whole to the processes, by size, each the
    doctor of its own: the same rows, findings and totals as one process, and every process writes files."""
    one, totals_of_one = one_process(str(tmp_path_factory.getbasetemp()), None)
    out = str(tmp_path / "out")
    totals = LocalJob(
        dict(enumerate(ALL)), out, {"ports": [9092], "filter": None}, splits=lambda path: jobs.splits(path, 3), processes=3
    ).run()
    assert totals == dataclasses.replace(totals_of_one, seconds=totals.seconds)
    for name in ("exchanges", "records", "diagnostics", "findings"):
        assert assert_same_table(one, out, name) > 0, name
    files = [
        os.path.basename(f)
        for f in glob.glob(os.path.join(out, "*", "*", "part-*.parquet")) + glob.glob(os.path.join(out, "*", "*", "*", "part-*.parquet"))
    ]
    assert {tuple(f.removesuffix(".parquet").split("-")[2:]) for f in files} == {(), ("w1",), ("w2",)}


def kdissect_running(*args) -> subprocess.Popen:
    """`kdissect` started in a process group of its own, as a terminal starts a command."""
    command = [sys.executable, "-c", SHIM, *map(str, args)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, start_new_session=True)


def workers_of(process: subprocess.Popen) -> list[int]:
    """The worker processes `process` has forked, once it has (or none, if it ended first)."""
    while process.poll() is None:
        children = open(f"/proc/{process.pid}/task/{process.pid}/children").read().split()
        if children:
            return [int(pid) for pid in children]
        time.sleep(0.02)
    return []


def test_ctrl_c_stops_every_process_and_leaves_no_tables(many_connections, tmp_path):
    """A terminal's Ctrl-C reaches the whole group: the first process ends the workers and removes the tables."""
    assert many_connections.stat().st_size >= jobs.SPLIT_BYTES
    process = kdissect_running("tables", many_connections, "--out", tmp_path / "t", "--jobs", "2", "--quiet")
    assert workers_of(process)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.decode().splitlines() == [f"kdissect: interrupted (SIGINT): no tables were left under {tmp_path / 't'}"]
    assert os.listdir(tmp_path / "t") == []
    assert gone(process.pid)


def test_a_killed_worker_is_one_line_and_leaves_no_tables(many_connections, tmp_path):
    process = kdissect_running("tables", many_connections, "--out", tmp_path / "t", "--jobs", "2", "--quiet")
    (worker,) = workers_of(process)
    os.kill(worker, signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    assert err.decode().splitlines() == [
        f"kdissect: a worker process was killed by SIGKILL while reading {many_connections}: no tables were left under {tmp_path / 't'}"
    ]
    assert os.listdir(tmp_path / "t") == []
    assert gone(process.pid)


def test_jobs_below_0_is_one_line(tmp_path):
    path = os.path.join(ROOT, "captures", "consumer-group-kafka-python.pcap")
    assert "--jobs -1: give a number of processes" in one_error_line(kdissect("tables", path, "--out", tmp_path / "t", "--jobs", "-1"))


def test_rows_held_by_the_byte_make_the_same_tables(tmp_path, monkeypatch):
    """Rows become an Arrow batch once they hold `rows.BATCH_BYTES` of data, and a table's directories hold at most
    `parquet_out.HELD_BYTES` before the fullest is written (rows held by the thousand made a capture of large values
    take gigabytes). With both at one byte every exchange is a batch of its own, written at once: the same tables."""
    names = ("large-values-mtu1500.pcap", "many-records-mtu1500.pcap", "produce-transactions.pcap", "doctor-truncated-responses.pcap")
    captures = {k: os.path.join(ROOT, "captures", name) for k, name in enumerate(names)}
    config = {"ports": [9092]}
    whole = LocalJob(captures, str(tmp_path / "whole"), config).run()
    monkeypatch.setattr(rows, "BATCH_BYTES", 1)
    monkeypatch.setattr(parquet_out, "HELD_BYTES", 1)
    bytewise = LocalJob(captures, str(tmp_path / "bytewise"), config).run()
    assert bytewise == dataclasses.replace(whole, seconds=bytewise.seconds)
    for name in ("exchanges", "records", "diagnostics", "findings"):
        assert assert_same_table(str(tmp_path / "whole"), str(tmp_path / "bytewise"), name) > 0, name
