"""What `kdissect tables` costs against `kdissect read --json` on the same capture, and what `kdissect sql` costs
once the tables exist, in the same run (issue 32: tables at most 1.2x read --json; a grouping query at most 1 s).

Both commands run in this process (`cli([...])`), taking turns in each round; the least CPU seconds of each over
`--repeat` rounds count, so other work on the machine weighs on neither. CPU seconds include the processes a command
waits for: `read --json` reads a large capture with a process per core (`--jobs`), whose second process the parent's
own CPU time leaves out. `tables` uses one process, so the ratios are against `read --json --jobs 1`; the default
`read --json` is timed too. The query is timed in wall seconds, as a user waits for it, against the tables the last
round wrote.

    python benchmarks/bench_tables.py [CAPTURE] [--mb 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_filter import best
from synth import synthesized

from kdissect.cli import main as cli
from kdissect.pipeline.sql import query

GROUPING = "SELECT api, client_id, count(*) AS n, quantile_cont(latency_ms, 0.99) AS p99 FROM exchanges GROUP BY ALL ORDER BY n DESC"


def cpu() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    user, system, children_user, children_system, _ = os.times()
    return user + system + children_user + children_system


def command(*args: str) -> None:
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        cli(list(args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", nargs="?")
    parser.add_argument("--mb", type=int, default=30, help="size of the synthetic capture (default 30)")
    parser.add_argument("--repeat", type=int, default=3, help="take the best of this many rounds (default 3)")
    args = parser.parse_args()
    path = args.capture or synthesized(f"filter-{args.mb}mb.pcap", args.mb, "--codecs", "none,gzip,lz4,zstd", "--heartbeats", "2")
    scratch = tempfile.mkdtemp(prefix="bench-tables-")
    out = os.path.join(scratch, "t")

    def tables() -> None:
        shutil.rmtree(out, ignore_errors=True)
        command("tables", path, "--out", out, "--quiet")

    try:
        reading = {
            "read --json --jobs 1": lambda: command("read", path, "--json", "-o", os.devnull, "-q", "--jobs", "1"),
            "read --json (every process)": lambda: command("read", path, "--json", "-o", os.devnull, "-q"),
        }
        seconds = best(args.repeat, {**reading, "tables": tables}, clock=cpu)
        reference = seconds["read --json --jobs 1"]
        print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB (best of {args.repeat}, CPU seconds)")
        for label, spent in seconds.items():
            print(f"   {label:30} {spent:7.2f} s  × {spent / reference:.2f}")
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(out) for f in files)
        print(f"   tables on disk: {size / 1e6:.1f} MB, {size / os.path.getsize(path):.1%} of the capture")
        start = time.perf_counter()
        _, rows = query(out, GROUPING)
        print(f"   a grouping query ({len(rows)} rows): {time.perf_counter() - start:.2f} s wall (target: at most 1 s)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
