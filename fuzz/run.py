"""One command for every fuzz run: `python -m fuzz.run --ci` (short, fails on any finding) or
`python -m fuzz.run --minutes 60 [harness ...]` (long).

Each harness runs in its own process under libFuzzer (atheris) with a per-input time limit and an RSS limit,
on a corpus built from the project's captures (`fuzz.seeds`) in fuzz/corpus/. A crash, a hang or a memory
blow-up leaves its input in fuzz/artifacts/ and makes the run fail. Where atheris is not installed (Python
3.12+), the same harnesses run under hypothesis, mutating the seeds, for the same time.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from fuzz.seeds import HARNESSES, build

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
CI_SECONDS = 6
"""Per harness in --ci: ten harnesses, under two minutes in all (CI runs the whole suite in 25)."""
TIMEOUT = 10
"""Seconds one input may take: far above any seed's time, so only a hang trips it."""
RSS_LIMIT_MB = 1024
"""The fuzzing limits are small: a harness past this is growing without bound."""
_EXECS = re.compile(rb"stat::number_of_executed_units: (\d+)|Done (\d+) runs")


def fuzz_one(name: str, seconds: int, corpus: Path) -> tuple[bool, int, str]:
    """Run one harness under libFuzzer: (passed, executions, the tail of its output)."""
    artifacts = FUZZ / "artifacts"
    artifacts.mkdir(exist_ok=True)
    seeds = [str(corpus / name)]
    regressions = FUZZ / "regressions" / name
    if regressions.is_dir():
        seeds.append(str(regressions))
    command = [
        sys.executable,
        "-m",
        f"fuzz.{name}",
        *seeds,
        f"-max_total_time={seconds}",
        f"-timeout={TIMEOUT}",
        f"-rss_limit_mb={RSS_LIMIT_MB}",
        f"-artifact_prefix={artifacts}/{name}-",
        "-print_final_stats=1",
        "-print_pcs=0",
    ]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    output = result.stdout + result.stderr
    executions = sum(int(a or b) for a, b in _EXECS.findall(output)[-1:])
    tail = output.decode(errors="replace").strip().splitlines()[-25:]
    return result.returncode == 0, executions, "\n".join(tail)


def hypothesis_one(name: str, seconds: int, corpus: Path) -> tuple[bool, int, str]:
    """The fallback without atheris: hypothesis draws seeds and mutates them (cuts, flips, splices)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    harness = importlib.import_module(f"fuzz.{name}")
    seeds = [p.read_bytes() for p in sorted((corpus / name).iterdir())] or [b""]
    count = 0

    @st.composite
    def mutated(draw) -> bytes:
        data = bytearray(draw(st.sampled_from(seeds)))
        for _ in range(draw(st.integers(0, 8))):
            kind = draw(st.integers(0, 3))
            at = draw(st.integers(0, len(data)))
            if kind == 0:
                del data[at:]
            elif kind == 1 and at < len(data):
                data[at] ^= draw(st.integers(1, 255))
            elif kind == 2:
                data[at:at] = draw(st.binary(max_size=16))
            else:
                data[at : at + 4] = draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\0\0\0\0"]))
        return bytes(data)

    @settings(max_examples=200, deadline=TIMEOUT * 1000, database=None, suppress_health_check=list(HealthCheck))
    @given(mutated())
    def check(data: bytes) -> None:
        nonlocal count
        count += 1
        harness.one_input(data)

    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            check()
    except Exception as exc:  # hypothesis has already printed the shrunk input
        return False, count, f"{type(exc).__name__}: {exc}"
    return True, count, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("harness", nargs="*", help=f"some of {', '.join(HARNESSES)} (default: all)")
    parser.add_argument("--ci", action="store_true", help=f"{CI_SECONDS} s per harness")
    parser.add_argument("--minutes", type=float, default=None, help="minutes per harness")
    parser.add_argument("--hypothesis", action="store_true", help="use the hypothesis fallback even where atheris is installed")
    args = parser.parse_args()
    names = args.harness or list(HARNESSES)
    unknown = set(names) - set(HARNESSES)
    if unknown:
        parser.error(f"no harness named {', '.join(sorted(unknown))}")
    seconds = CI_SECONDS if args.ci or args.minutes is None else max(1, int(args.minutes * 60))
    corpus = FUZZ / "corpus"
    build(corpus, [n for n in names if not (corpus / n).is_dir() or not any((corpus / n).iterdir())])
    try:
        import atheris  # noqa: F401

        engine = "hypothesis" if args.hypothesis else "atheris"
    except ImportError:
        engine = "hypothesis"
    failed = []
    total = 0
    for name in names:
        started = time.monotonic()
        if engine == "atheris":
            passed, executions, tail = fuzz_one(name, seconds, corpus)
        else:
            passed, executions, tail = hypothesis_one(name, seconds, corpus)
        total += executions
        took = time.monotonic() - started
        print(f"{name:16} {engine:10} {executions:10,} executions in {took:6.0f} s  {'ok' if passed else 'FAILED'}", flush=True)
        if not passed:
            failed.append(name)
            print(tail, flush=True)
    print(f"fuzz: {total:,} executions")
    print(f"fuzz: {len(names) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
