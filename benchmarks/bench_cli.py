"""What a user running the CLI waits for, against tshark on the same files, in the same run.

Whole processes are timed, start-up and output included (output to a file, as `> out` would): kdissect from
this checkout as its `kdissect` command runs it, tshark as installed. Each figure is the median of `--repeat`
runs; CPU time is the process's own user + system time, the fairer figure on a shared machine.

- small messages (one 64-byte record per Produce and Fetch, no bare ACKs): `read --json`, the terminal view
  and `stats`, against tshark's one-line summary (`tshark -r`) and `tshark -T json`;
- batch-heavy (20 records per batch, five codecs): `read --json`, every record decoded, against `tshark -V`;
- start-up: `kdissect --help` and `read` of a tiny capture, against `python -c pass`;
- `read --json` of both captures, and the terminal view of the small one, with `--jobs 1` and `--jobs N`
  (default 2): WALL time against tshark's, the figure several processes change (their CPU time adds up).

Python writes no byte-code cache under PYTHONDONTWRITEBYTECODE, and then compiles every module at each start:
the runs here use a cache in a temporary directory, as an installed package has one.

    python benchmarks/bench_cli.py [--small-mb 25] [--batch-mb 100] [--repeat 3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import alternate
from benchmarks.synth import synthesized

KDISSECT = [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])"]
TINY = os.path.join(ROOT, "captures", "kcat-debian-librdkafka.pcap")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run, its output written to a file (alternate.py's `timed`)."""
    cpu, wall, _ = alternate.timed(command, env, ROOT, to_file=True)
    return wall, cpu


def median(command: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    timed(command, env)  # warm the page cache and the byte-code cache
    runs = [timed(command, env) for _ in range(repeat)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def table(title: str, rows: list[tuple[str, tuple[float, float]]], references: dict[str, tuple[float, float]], wall: bool = False) -> None:
    """Each row's CPU time (or, with `wall`, its wall time) over each reference's."""
    names = list(references)
    which = 0 if wall else 1
    print(f"\n{title}")
    print(f"{'':40} {'wall s':>8} {'CPU s':>8}" + "".join(f" {'× ' + n + (' wall' if wall else ''):>22}" for n in names))
    for label, times in rows:
        wall_s, cpu = times
        ratios = "".join(f" {times[which] / ref[which]:22.2f}" for ref in references.values())
        print(f"{label:40} {wall_s:8.2f} {cpu:8.2f}{ratios}")


def bench_env() -> dict[str, str]:
    """The timed runs' environment: this checkout, and a byte-code cache of their own (see the docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="kdissect-bench-pyc-")
    env["PYTHONPATH"] = ROOT
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small-mb", type=int, default=25, help="size of the small-message capture (default 25)")
    parser.add_argument("--batch-mb", type=int, default=100, help="size of the batch-heavy capture (default 100)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the median is shown (default 3)")
    parser.add_argument("--jobs", type=int, default=2, help="processes for the --jobs rows (default 2)")
    args = parser.parse_args()
    if not shutil.which("tshark"):
        raise SystemExit("tshark is not installed: no reference to compare with (apt-get install tshark)")
    env = bench_env()
    small = synthesized(
        f"small-{args.small_mb}mb.pcap", args.small_mb, "--partitions", "1", "--records", "1", "--value-size", "64", "--no-acks"
    )
    batch = synthesized(f"core-{args.batch_mb}mb.pcap", args.batch_mb, "--codecs", "none,gzip,snappy,lz4,zstd")
    run = lambda *command: median(list(command), env, args.repeat)

    print("CPU time ratios: kdissect's CPU seconds over the reference's, medians of", args.repeat, "runs")
    one_line, tshark_json = run("tshark", "-r", small), run("tshark", "-r", small, "-T", "json")
    table(
        f"small messages: {small} ({os.path.getsize(small) / 1e6:.0f} MB)",
        [
            ("kdissect read --json", run(*KDISSECT, "read", small, "--json", "-q", "--jobs", "1")),
            ("kdissect read (terminal view, to a file)", run(*KDISSECT, "read", small, "--jobs", "1")),
            ("kdissect stats", run(*KDISSECT, "stats", small, "-q")),
            ("tshark -r (one line per packet)", one_line),
            ("tshark -T json", tshark_json),
        ],
        {"tshark -r": one_line, "tshark -T json": tshark_json},
    )
    verbose = run("tshark", "-r", batch, "-V")
    table(
        f"batch-heavy: {batch} ({os.path.getsize(batch) / 1e6:.0f} MB)",
        [("kdissect read --json", run(*KDISSECT, "read", batch, "--json", "-q", "--jobs", "1")), ("tshark -V", verbose)],
        {"tshark -V": verbose},
    )
    load = os.getloadavg()[0]
    table(
        f"read --json and the terminal view with --jobs, wall time (load average {load:.1f} before; "
        "on a busy machine several processes gain little)",
        [
            (f"small: kdissect read --json --jobs {n}", run(*KDISSECT, "read", small, "--json", "-q", "--jobs", str(n)))
            for n in (1, args.jobs)
        ]
        + [(f"small: kdissect read (to a file) --jobs {n}", run(*KDISSECT, "read", small, "--jobs", str(n))) for n in (1, args.jobs)]
        + [("small: tshark -r", one_line)]
        + [
            (f"batch-heavy: kdissect read --json --jobs {n}", run(*KDISSECT, "read", batch, "--json", "-q", "--jobs", str(n)))
            for n in (1, args.jobs)
        ]
        + [("batch-heavy: tshark -V", verbose)],
        {"tshark -r": one_line, "tshark -V": verbose},
        wall=True,
    )
    bare = run(sys.executable, "-c", "pass")
    table(
        "start-up",
        [
            ("kdissect --help", run(*KDISSECT, "--help")),
            ("kdissect read (a 4-exchange capture)", run(*KDISSECT, "read", TINY)),
            ("python -c pass", bare),
        ],
        {"python -c pass": bare},
    )


if __name__ == "__main__":
    main()
