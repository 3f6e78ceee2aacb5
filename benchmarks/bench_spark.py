"""The Spark job against the single-process CLI on the same ~100 MB of captures: local[1], local[2], and
`kdissect read --json`, as times, CPU times and ratios.

    python benchmarks/bench_spark.py --mb 100               # generate the captures (once) and run all three
    python benchmarks/bench_spark.py --mb 100 --repeat 3    # three rounds, the order reversed every other round
    python benchmarks/bench_spark.py --only local[2]        # one of them
    python benchmarks/bench_spark.py --only local[1] --conf spark.driver.memory=2g   # try a Spark setting

The captures are the project's own (captures/*.pcap, Ethernet ones) copied many times into two files, each
copy with its own client addresses and times, so there are many connections from two "brokers": real Kafka
traffic, nothing synthetic in its bytes. They are written under benchmarks/data/ (git-ignored), not committed.

Each Spark run is a fresh process. Its time is cut into the fixed start-up (the JVM and the SparkSession, then
a first Python task: what any job pays before its first byte) and the job (from listing the captures to the
tables written), and each stage of the job is given its CPU time (user+sys, from /proc) by process: the Python
workers, the JVM, the driver's Python. On a machine others are using, wall times move with their load (each
line says the load average); CPU times move much less, and their sum over the job is what two cores share:
`local[2]` cannot take less than half of it. `--warm` also runs the job again in the warm JVM. The CLI is
`kdissect read --json FILE > /dev/null` for each file, one after the other, as a user with one process would
run it. Spark is started with --split-size 16 MiB here so that each file is cut into ranges (the default is 64 MiB).
"""

from __future__ import annotations

import argparse
import glob
import heapq
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "benchmarks", "data", "spark")
SPLIT = 16 << 20
sys.path.insert(0, ROOT)
ENV = {**os.environ, "PYTHONPATH": ROOT}
"""This worktree's kdissect, in the children and in Spark's Python workers (which inherit PYTHONPATH)."""


def generate(mb: int, files: int = 2) -> list[str]:
    """~`mb` MB of captures in `files` files under benchmarks/data/spark; reused when already there."""
    from kdissect.capture import open_capture
    from kdissect.capture.writer import PcapWriter
    from kdissect.testing.craft import conversation_copy

    os.makedirs(DATA, exist_ok=True)
    names = [os.path.join(DATA, f"broker{j}-{mb}mb.pcap") for j in range(files)]
    if all(os.path.exists(n) for n in names):
        return names
    sources = []
    for path in sorted(glob.glob(os.path.join(ROOT, "captures", "*.pcap"))):
        with open_capture(path) as capture:
            packets = list(capture.packets())
        if packets and all(p.linktype == 1 for p in packets):
            sources.append(packets)
    per_copy = sum(len(p.data) + 16 for packets in sources for p in packets)
    copies = max(1, (mb << 20) // per_copy // files)
    t0 = 1_790_000_000_000_000_000
    for j, name in enumerate(names):
        broker = bytes([10, 99, j, 1])
        with open(name + ".part", "wb") as f:
            writer = PcapWriter(f, 1, nanosecond=True)
            for k in range(copies):
                start = t0 + k * 12_000_000_000
                streams = [conversation_copy(packets, j * copies + k, broker, packets[0].ts, start) for packets in sources]
                writer.write_all(heapq.merge(*streams, key=lambda p: p.ts))
        os.replace(name + ".part", name)
    return names


def count_packets(paths: list[str]) -> int:
    from kdissect.capture import open_capture

    total = 0
    for path in paths:
        with open_capture(path) as capture:
            total += sum(1 for _ in capture.packets())
    return total


def run_cli(paths: list[str]) -> dict:
    """`kdissect read --json` on each file in turn; its wall time and CPU time (user+sys of the processes)."""
    before = os.times()
    started = time.perf_counter()
    for path in paths:
        with open(os.devnull, "w") as sink:
            command = [sys.executable, "-c", "from kdissect.cli import main; main()", "read", "--json", "--quiet", path]
            done = subprocess.run(command, stdout=sink, stderr=subprocess.PIPE, text=True, env=ENV)
            if done.returncode not in (0, 1):  # 1: decoded, but the capture is damaged (the copies keep the originals' gaps)
                raise SystemExit(f"kdissect read failed on {path} (exit status {done.returncode}): {done.stderr[-2000:]}")
    after = os.times()
    return {
        "wall": time.perf_counter() - started,
        "cpu": after.children_user + after.children_system - before.children_user - before.children_system,
    }


TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_by_kind(root: int) -> dict[str, float]:
    """CPU seconds (user+sys) so far of the processes under `root`: the driver (`root` itself), the JVM, and
    the Python workers (with the ones already ended, which their parent has reaped)."""
    parents: dict[int, int] = {}
    times: dict[int, tuple[str, float, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        pid = int(entry)
        parents[pid] = int(fields[1])
        own = (int(fields[11]) + int(fields[12])) / TICK
        reaped = (int(fields[13]) + int(fields[14])) / TICK
        times[pid] = (name, own, reaped)
    out = {"driver": 0.0, "jvm": 0.0, "python": 0.0}
    for pid, (name, own, reaped) in times.items():
        p, depth = pid, 0
        while p in parents and p != root and p > 1:
            p, depth = parents[p], depth + 1
        if p != root:
            continue
        if pid == root:
            out["driver"] += own
        elif name == "java":
            out["jvm"] += own
            out["python"] += reaped  # the JVM's children that ended: Python daemons and workers
        else:
            out["python"] += own + reaped
    return out


def child(master: str, paths: list[str], out: str, warm: bool, conf: dict[str, str]) -> None:
    """One Spark run in this fresh process: its times and CPU by stage as JSON on the last line of stdout."""
    me = os.getpid()
    marks: list[tuple[str, float, dict]] = []

    def mark(name: str) -> None:
        marks.append((name, time.perf_counter(), cpu_by_kind(me)))

    mark("begin")
    from kdissect.pipeline.job import run
    from kdissect.pipeline.session import start

    spark = start(master, conf)
    mark("session")  # the JVM and the SparkSession
    spark.sparkContext.parallelize([0], 1).map(lambda x: x + 1).collect()
    mark("first task")  # a Python worker started and answering

    def progress(line: str) -> None:
        for prefix, name in (
            ("planning", "list"),
            ("dissecting", "plan"),
            ("writing exchanges", "dissect"),
            ("writing records", "exchanges"),
            ("writing diagnostics", "records"),
        ):
            if line.startswith(prefix):
                mark(name)

    totals = run(spark, paths, os.path.join(out, "t"), split_size=SPLIT, progress=progress)
    mark("diagnostics")
    report = {"packets": totals.packets, "exchanges": totals.exchanges, "records": totals.records, "ranges": totals.ranges}
    report["stages"] = totals.stages
    written = {name: [f for _, _, f in os.walk(os.path.join(out, "t", name))] for name in ("exchanges", "records", "diagnostics")}
    report["files"] = {name: sum(1 for f in files for x in f if not x.startswith((".", "_"))) for name, files in written.items()}
    report["directories"] = {name: sum(1 for f in files if any(not x.startswith((".", "_")) for x in f)) for name, files in written.items()}
    tracker = spark.sparkContext.statusTracker()
    jobs = [tracker.getJobInfo(job) for job in sorted(tracker.getJobIdsForGroup(None))]
    report["tasks"] = [[tracker.getStageInfo(stage).numTasks for stage in sorted(job.stageIds)] for job in jobs if job]
    if warm:
        again = run(spark, paths, os.path.join(out, "again"), split_size=SPLIT)
        mark("warm")
        report["warm_stages"] = again.stages
    spark.stop()
    mark("stopped")
    report["marks"] = [
        (name, t - marks[i][1], {k: v - marks[i][2][k] for k, v in cpu.items()}) for i, (name, t, cpu) in enumerate(marks[1:])
    ]
    print(json.dumps(report))


def run_spark(master: str, paths: list[str], warm: bool, conf: list[str]) -> dict:
    out = tempfile.mkdtemp(prefix="kdissect-bench-")
    try:
        args = [
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            master,
            "--out",
            out,
            *(["--warm"] if warm else []),
            *(f"--conf={c}" for c in conf),
            *paths,
        ]
        result = subprocess.run(args, capture_output=True, text=True, check=False, env=ENV, cwd=ROOT)
        if result.returncode:
            raise SystemExit(f"{master} failed:\n{result.stderr[-3000:]}")
        report = json.loads(result.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(out, ignore_errors=True)
    marks = {name: (seconds, cpu) for name, seconds, cpu in report["marks"]}
    report["fixed"] = marks["session"][0] + marks["first task"][0]
    job = [m for m in report["marks"] if m[0] not in ("session", "first task", "warm", "stopped")]
    report["job"] = sum(m[1] for m in job)
    report["cpu"] = {kind: sum(m[2][kind] for m in job) for kind in ("driver", "jvm", "python")}
    report["run"] = report["fixed"] + report["job"]
    if "warm" in marks:
        report["warm"] = marks["warm"][0]
    return report


def _load() -> str:
    return "load " + "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100, help="size of the capture set (default 100)")
    parser.add_argument("--only", choices=["cli", "local[1]", "local[2]"], action="append")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, the order reversed every other round")
    parser.add_argument("--warm", action="store_true", help="also run each job a second time in its warm JVM")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting for the runs (to try one)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.paths, args.out, args.warm, dict(c.split("=", 1) for c in args.conf))
        return
    which = args.only or ["cli", "local[1]", "local[2]"]
    paths = generate(args.mb)
    size = sum(os.path.getsize(p) for p in paths)
    packets = count_packets(paths)
    print(f"{len(paths)} files, {size / 1e6:.1f} MB, {packets:,} packets; machine: {os.cpu_count()} cores")
    results: dict[str, list[dict]] = {name: [] for name in which}
    for round_ in range(args.repeat):
        for name in which if round_ % 2 == 0 else list(reversed(which)):
            load = _load()
            if name == "cli":
                r = run_cli(paths)
                print(f"  cli        {r['wall']:6.1f} s  cpu {r['cpu']:6.1f} s   {packets / r['wall']:8,.0f} packets/s   [{load}]")
            else:
                r = run_spark(name, paths, args.warm, args.conf)
                assert r["packets"] == packets, (r["packets"], packets)
                cpu = r["cpu"]
                rate = f"{packets / r['job']:,.0f} packets/s"
                print(
                    f"  {name:10} {r['run']:6.1f} s  = fixed {r['fixed']:.1f} s + job {r['job']:.1f} s ({rate});"
                    f" job cpu: python {cpu['python']:.1f} s, jvm {cpu['jvm']:.1f} s, driver {cpu['driver']:.1f} s   [{load}]"
                )
                for stage, seconds, used in r["marks"]:
                    cpus = ", ".join(f"{kind} {used[kind]:5.1f}" for kind in ("python", "jvm", "driver"))
                    print(f"  {'':10}   {stage:18} {seconds:6.1f} s   cpu: {cpus}")
                print(f"  {'':10}   files written: {r['files']} in directories {r['directories']}")
                print(f"  {'':10}   tasks of each job's stages, in order: {r['tasks']}")
                if "warm" in r:
                    print(f"  {'':10}   the same job again, warm: {r['warm']:.1f} s")
            results[name].append(r)
    median = lambda rs, key: statistics.median(r[key] for r in rs)
    print("medians:")
    if "cli" in results:
        base = median(results["cli"], "wall")
        base_cpu = median(results["cli"], "cpu")
        print(f"  cli: {base:.1f} s, cpu {base_cpu:.1f} s")
    for master in ("local[1]", "local[2]"):
        if master in results:
            rs = results[master]
            cpu = statistics.median(sum(r["cpu"].values()) for r in rs)
            line = (
                f"  {master}: whole run {median(rs, 'run'):.1f} s, fixed start-up {median(rs, 'fixed'):.1f} s,"
                f" job {median(rs, 'job'):.1f} s, job cpu {cpu:.1f} s"
            )
            if "cli" in results:
                line += (
                    f"; × the CLI: whole run {median(rs, 'run') / base:.2f}, job {median(rs, 'job') / base:.2f},"
                    f" job cpu {cpu / base_cpu:.2f}"
                )
            print(line)
    if "local[1]" in results and "local[2]" in results:
        one, two = results["local[1]"], results["local[2]"]
        print(
            f"  local[1] / local[2] (speed-up of 2 cores): job {median(one, 'job') / median(two, 'job'):.2f},"
            f" whole run {median(one, 'run') / median(two, 'run'):.2f}"
        )
    for master in ("local[2]",):
        if master in results:
            cpu = statistics.median(sum(r["cpu"].values()) for r in results[master])
            print(f"  {master}'s job cannot take less than its cpu time over two cores: {cpu / 2:.1f} s (at a load average of 0)")


if __name__ == "__main__":
    main()
