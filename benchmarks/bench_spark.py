"""The Spark job against the single-process CLI on the same ~100 MB of captures: local[1], local[2], and
`kdissect read --json`, reported as packets per second and as ratios to the CLI.

    python benchmarks/bench_spark.py                  # generate the captures (once) and run all three
    python benchmarks/bench_spark.py --mb 20          # a smaller set
    python benchmarks/bench_spark.py --only local[2]  # one of them

The captures are the project's own (captures/*.pcap, Ethernet ones) copied many times into two files, each
copy with its own client addresses and times, so there are many connections from two "brokers": real Kafka
traffic, nothing synthetic in its bytes. They are written under benchmarks/data/ (git-ignored), not committed.

Each Spark run is a fresh process, timed three ways: the whole run (Spark's start included), the job alone
(from the session being up to the tables being written), and the same job run again in the same process, once
the JVM and the Python workers are warm: what a large job's throughput tends to. The CLI is `kdissect read --json FILE > /dev/null`
for each file, one after the other, as a user with one process would run it. Spark is started with
--split-size 16 MiB here so that each file is cut into ranges (the default is 64 MiB).
"""

from __future__ import annotations

import argparse
import glob
import heapq
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "benchmarks", "data", "spark")
SPLIT = 16 << 20


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


def run_cli(paths: list[str]) -> float:
    started = time.perf_counter()
    for path in paths:
        with open(os.devnull, "w") as sink:
            subprocess.run(
                [sys.executable, "-c", "from kdissect.cli import main; main()", "read", "--json", "--quiet", path], stdout=sink, check=True
            )
    return time.perf_counter() - started


def run_spark_child(master: str, paths: list[str]) -> dict:
    """Run the job in a fresh process; its times come back as JSON on the last line."""
    out = tempfile.mkdtemp(prefix="kdissect-bench-")
    try:
        code = (
            "import json,sys,time\n"
            "t=time.perf_counter()\n"
            "from kdissect.pipeline.session import start\n"
            "from kdissect.pipeline.job import run\n"
            f"spark=start({master!r})\n"
            "up=time.perf_counter()\n"
            f"totals=run(spark,{paths!r},{os.path.join(out, 't')!r},split_size={SPLIT})\n"
            "done=time.perf_counter()\n"
            f"again=run(spark,{paths!r},{os.path.join(out, 'again')!r},split_size={SPLIT})\n"
            "warm=time.perf_counter()-done\n"
            "spark.stop()\n"
            "print(json.dumps({'start':up-t,'job':done-up,'warm':warm,'stages':totals.stages,'warm_stages':again.stages,"
            "'packets':totals.packets,'exchanges':totals.exchanges,'records':totals.records,'ranges':totals.ranges}))\n"
        )
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if result.returncode:
            raise SystemExit(f"{master} failed:\n{result.stderr[-3000:]}")
        report = json.loads(result.stdout.strip().splitlines()[-1])
        report["wall"] = wall
        return report
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100, help="size of the capture set (default 100)")
    parser.add_argument("--only", choices=["cli", "local[1]", "local[2]"], action="append")
    args = parser.parse_args()
    which = args.only or ["cli", "local[1]", "local[2]"]
    paths = generate(args.mb)
    size = sum(os.path.getsize(p) for p in paths)
    packets = count_packets(paths)
    print(f"{len(paths)} files, {size / 1e6:.1f} MB, {packets:,} packets; machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    results = {}
    if "cli" in which:
        seconds = run_cli(paths)
        results["cli"] = {"wall": seconds, "job": seconds}
        print(f"  cli        {seconds:7.1f} s   {packets / seconds:9,.0f} packets/s")
    for master in ("local[1]", "local[2]"):
        if master not in which:
            continue
        r = run_spark_child(master, paths)
        r["wall"] -= r["warm"]  # the child ran the job twice: the first run is the one a user waits for
        results[master] = r
        assert r["packets"] == packets, (r["packets"], packets)
        stages = ", ".join(f"{name} {s:.1f}" for name, s in r["stages"])
        warm = ", ".join(f"{name} {s:.1f}" for name, s in r["warm_stages"])
        print(
            f"  {master:10} {r['wall']:7.1f} s   {packets / r['wall']:9,.0f} packets/s   "
            f"(Spark start {r['start']:.1f} s; job {r['job']:.1f} s = {packets / r['job']:,.0f} packets/s: {stages})\n"
            f"  {'':10} {r['warm']:7.1f} s   {packets / r['warm']:9,.0f} packets/s   (the same job again in the warm JVM: {warm})"
        )
    if "cli" in results:
        base = results["cli"]["wall"]
        print("ratios to the CLI (time / CLI time; below 1 is faster):")
        for master in ("local[1]", "local[2]"):
            if master in results:
                r = results[master]
                print(
                    f"  {master}: whole run {r['wall'] / base:.2f}, job alone {r['job'] / base:.2f},"
                    f" job again (warm) {r['warm'] / base:.2f}"
                )
    if "local[1]" in results and "local[2]" in results:
        one, two = results["local[1]"], results["local[2]"]
        print(f"  local[2] / local[1]: job {two['job'] / one['job']:.2f}, job again (warm) {two['warm'] / one['warm']:.2f}")


if __name__ == "__main__":
    main()
