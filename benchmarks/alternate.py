"""Two commands timed as whole processes, in turn, pair by pair: the way the figures "alternated pairs, medians" in
the code's docstrings and the docs were taken, with nothing but the standard library.

Each run is one child process timed from outside: CPU time (user + system) and peak RSS from the kernel's
accounting of the finished child (`os.wait4`), wall time from a monotonic clock around it. A and B run A B A B ...
(after one unmeasured run each, which writes byte-code caches), and the ratio A/B is taken pair by pair, so a
machine whose speed drifts during the call still gives a fair ratio. Quote the medians; the spread says how noisy
the machine was.

    python benchmarks/alternate.py -n 10 --vs "python -m kdissect read F --json -o /dev/null --no-cache" -- \\
        python -m kdissect read F --json -o /dev/null
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import tempfile
import time


def timed(
    command: list[str], env: dict[str, str] | None = None, cwd: str | None = None, to_file: bool = False
) -> tuple[float, float, float]:
    """(cpu seconds, wall seconds, peak MiB) of one run of `command`, its output thrown away (written to a file
    first with `to_file`, as `> out` would); a status other than 0 or 1 (kdissect's "found something") ends the
    benchmark."""
    with tempfile.TemporaryFile() if to_file else open(os.devnull, "wb") as out:
        started = time.monotonic()
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{shlex.join(command)}: exit status {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--pairs", type=int, default=5)
    parser.add_argument("--vs", required=True, help="command B, the reference: one string, split as a shell splits words")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="command A, after --")
    args = parser.parse_args(argv)
    mine = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not mine:
        parser.error("give command A after --")
    theirs = shlex.split(args.vs)
    for command in (mine, theirs):
        timed(command)
    runs: dict[str, list[tuple[float, float, float]]] = {"A": [], "B": []}
    for n in range(args.pairs):
        for name, command in (("A", mine), ("B", theirs)) if n % 2 == 0 else (("B", theirs), ("A", mine)):
            runs[name].append(timed(command))
    for name in ("A", "B"):
        cpu, wall, peak = zip(*runs[name])
        print(f"{name}: cpu {spread(list(cpu))} s, wall {spread(list(wall))} s, peak {spread(list(peak))} MiB")
    for k, what in enumerate(("cpu", "wall")):
        ratios = [a[k] / b[k] for a, b in zip(runs["A"], runs["B"])]
        print(f"A/B {what}: {spread(ratios)} over {args.pairs} pairs")


if __name__ == "__main__":
    main()
