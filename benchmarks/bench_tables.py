"""What `kdissect tables` costs against `kdissect read --json` on the same capture, and what `kdissect sql` costs
once the tables exist, in the same run (issue 32: tables at most 1.2x read --json; a grouping query at most 1 s).

Both commands run in this process (`cli([...])`), taking turns in each round; the least CPU seconds of each over
`--repeat` rounds count, so other work on the machine weighs on neither. CPU seconds include the processes a command
waits for: `read --json` reads a large capture with a process per core (`--jobs`), whose second process the parent's
own CPU time leaves out; `tables` too (`--jobs`), timed also with `--jobs 1`. The ratios are against `read --json
--jobs 1`; the default `read --json` is timed too.

Then what a user waits for: the WALL time of the default `kdissect tables` (a process per core, `--jobs`) against
the default `read --json` and `read --json --jobs 1`, each a fresh process (bench_cli.py's `timed`), taking turns
in each of `--repeat` rounds after one that warms the caches; the ratios are medians of the rounds' own. Wall time
counts the other work on the machine: quote it with the load. The query is timed in wall seconds, as a user waits
for it, against the tables the CPU rounds wrote, before the fresh ones.

    python benchmarks/bench_tables.py [CAPTURE] [--mb 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_cli import KDISSECT, bench_env, timed
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

    def tables(*jobs: str) -> None:
        shutil.rmtree(out, ignore_errors=True)
        command("tables", path, "--out", out, "--quiet", *jobs)

    try:
        reading = {
            "read --json --jobs 1": lambda: command("read", path, "--json", "-o", os.devnull, "-q", "--jobs", "1"),
            "read --json (every process)": lambda: command("read", path, "--json", "-o", os.devnull, "-q"),
        }
        making = {"tables --jobs 1": lambda: tables("--jobs", "1"), "tables (every process)": tables}
        seconds = best(args.repeat, {**reading, **making}, clock=cpu)
        reference = seconds["read --json --jobs 1"]
        print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB (best of {args.repeat}, CPU seconds)")
        for label, spent in seconds.items():
            print(f"   {label:30} {spent:7.2f} s  × {spent / reference:.2f}")
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(out) for f in files)
        print(f"   tables on disk: {size / 1e6:.1f} MB, {size / os.path.getsize(path):.1%} of the capture")
        start = time.perf_counter()
        _, rows = query(out, GROUPING)
        print(f"   a grouping query ({len(rows)} rows): {time.perf_counter() - start:.2f} s wall (target: at most 1 s)")
        walls = fresh(
            args.repeat,
            {
                "tables": [*KDISSECT, "tables", path, "--out", out, "--quiet"],
                "read --json": [*KDISSECT, "read", path, "--json", "-o", os.devnull, "-q"],
                "read --json --jobs 1": [*KDISSECT, "read", path, "--json", "-o", os.devnull, "-q", "--jobs", "1"],
            },
            lambda: shutil.rmtree(out, ignore_errors=True),
        )
        print(f"   fresh processes, WALL seconds (median of {args.repeat} rounds; load average {os.getloadavg()[0]:.1f}):")
        for label, spent in walls.items():
            tables_over = statistics.median(t / s for t, s in zip(walls["tables"], spent))
            print(f"   {label:30} {statistics.median(spent):7.2f} s  tables × {tables_over:.2f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def fresh(repeat: int, commands: dict[str, list[str]], before: Callable[[], None]) -> dict[str, list[float]]:
    """Each command's wall seconds in each of `repeat` rounds, the commands taking turns (`before` each run), after
    a round that warms the page cache and the byte-code cache."""
    env = bench_env()
    walls: dict[str, list[float]] = {label: [] for label in commands}
    for round in range(repeat + 1):
        for label, command in commands.items():
            before()
            wall, _ = timed(command, env)
            if round:
                walls[label].append(wall)
    return walls


if __name__ == "__main__":
    main()
