"""What a display filter costs, against the same run without -Y, in the same process, on the same capture.

Two claims of issue 13 (docs/filters.md, "Speed"):

1. A filter that rejects everything costs at most 10 % over decoding alone. Timed on the core's loop (read,
   reassemble, pair, decode every body) with and without the compiled matcher asked of each exchange, for
   filters on bodies (which cannot skip anything): a plain field, the errors found in bodies, and a path that
   walks every record of every batch.
2. A filter on headers only does not decode the bodies of what it rejects: `-Y 'api == Heartbeat'` on a
   capture heavy with Produce and Fetch runs at least 2x faster than without it. Timed as `kdissect read --json
   -o /dev/null` (the user's command, in-process) with and without -Y, and on the core's loop alone with the
   matcher, with and without the core's early rejection (`Options.keep`), which isolates the bodies skipped.

The capture comes from benchmarks/synth.py (Produce and Fetch with record batches, and Heartbeats) unless
one is given.

3. `matches` asks RE2 through a `re2.Set` of its one pattern, which says whether the pattern occurs without
   building a match object as `re2.compile(...).search` does. Timed per value on client ids (`--regex` runs this
   part alone), with Python's `re` for scale.

    python benchmarks/bench_filter.py [CAPTURE] [--mb 30] [--repeat 3]
    python benchmarks/bench_filter.py --regex
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from benchmarks.synth import synthesized
from kdissect.capture import open_capture
from kdissect.cli import main as cli
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.filter import compile_filter
from kdissect.schema import BUILTIN

REJECT_ALL = [
    "request.Acks == 99",
    'client_id matches "^no-such-client-[0-9]+$"',
    "error == NOT_LEADER_OR_FOLLOWER",
    'response.Responses.Partitions.Records.records.key == "no such key"',
]
HEADERS_ONLY = "api == Heartbeat"


def core(path: str, expression: str | None, early: bool) -> tuple[int, int]:
    """(exchanges, exchanges matched) of the core's loop over the capture, every body decoded unless `early`
    lets the filter's header verdict skip some."""
    wanted = compile_filter([("-Y", expression)] if expression else [], BUILTIN)
    matches = wanted.matches if expression else None
    total = matched = 0
    with open_capture(path) as capture:
        for event in make_dissector(Options(keep=wanted.keep if early else None)).run(capture.packets()):
            if type(event) is Exchange:
                total += 1
                if matches is not None:
                    matched += matches(event)
    return total, matched


def command(path: str, *extra: str) -> None:
    """`kdissect read PATH --json -o /dev/null -q EXTRA...`, in this process."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
        cli(["read", path, "--json", "-o", os.devnull, "-q", *extra])


def best(repeat: int, runs: dict[str, Callable[[], object]], clock: Callable[[], float] = time.process_time) -> dict[str, float]:
    """The least CPU seconds of each run over `repeat` rounds, the runs taking turns within each round so that
    a busy machine weighs on all alike. CPU time, not wall time: other processes on the machine do not count.
    `clock`: this process's CPU seconds by default (bench_tables.py adds the children it waited for)."""
    seconds = {label: float("inf") for label in runs}
    for _ in range(repeat):
        for label, run in runs.items():
            start = clock()
            run()
            seconds[label] = min(seconds[label], clock() - start)
    return seconds


def regex(repeat: int) -> None:
    """Microseconds per value of each way of asking whether a pattern occurs in a client id."""
    import re

    import re2

    from kdissect.filter.regex import compile_pattern

    pattern, values = "^kdrig-legacy-0\\.(8|9)", [f"kdrig-legacy-0.{i % 12}-{codec}" for i in range(200) for codec in ("none", "lz4")]
    options = re2.Options()
    options.never_capture = True
    searcher, python = re2.compile(pattern, options), re.compile(pattern)
    on_text, _ = compile_pattern(pattern, 1)
    runs = {
        "re2.Set of the one pattern (what `matches` runs)": lambda: sum(map(on_text, values)),
        "re2.compile(...).search": lambda: sum(searcher.search(v) is not None for v in values),
        "Python's re (backtracking: not safe on captured values)": lambda: sum(python.search(v) is not None for v in values),
    }
    assert len({run() for run in runs.values()}) == 1
    seconds = best(repeat, {label: (lambda run=run: [run() for _ in range(50)]) for label, run in runs.items()})
    print(f"\n3. `matches {pattern!r}` on {len(values)} client ids, microseconds per value")
    for label, spent in seconds.items():
        print(f"   {label:72} {spent / 50 / len(values) * 1e6:7.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", nargs="?")
    parser.add_argument("--mb", type=int, default=30, help="size of the synthetic capture (default 30)")
    parser.add_argument("--repeat", type=int, default=5, help="take the best of this many rounds (default 5)")
    parser.add_argument("--regex", action="store_true", help="time the ways of running `matches` alone")
    args = parser.parse_args()
    if args.regex:
        regex(args.repeat)
        return
    path = args.capture or synthesized(f"filter-{args.mb}mb.pcap", args.mb, "--codecs", "none,gzip,lz4,zstd", "--heartbeats", "2")
    total, beats = core(path, HEADERS_ONLY, early=True)
    for expression in REJECT_ALL:
        assert core(path, expression, early=True) == (total, 0), expression
    print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB, {total} exchanges, {beats} Heartbeats (best of {args.repeat}, CPU seconds)")

    print("\n1. a filter that rejects everything, against decoding alone (the core's loop; target: at most 1.10)")
    runs: dict[str, Callable[[], object]] = {"no filter": lambda: core(path, None, True)}
    runs.update({f"-Y {e!r}": (lambda e=e: core(path, e, True)) for e in REJECT_ALL})
    seconds = best(args.repeat, runs)
    alone = seconds["no filter"]
    for label, spent in seconds.items():
        print(f"   {label:72} {spent:7.2f} s" + (f"  × {spent / alone:.3f}" if label != "no filter" else ""))

    print(f"\n2. -Y {HEADERS_ONLY!r}, against the same run without it (target: at least 2x faster)")
    seconds = best(
        args.repeat,
        {
            "read --json, no filter": lambda: command(path),
            f"read --json -Y {HEADERS_ONLY!r}": lambda: command(path, "-Y", HEADERS_ONLY),
            "core loop + matcher, every body decoded": lambda: core(path, HEADERS_ONLY, False),
            "core loop + matcher, bodies of rejected exchanges skipped": lambda: core(path, HEADERS_ONLY, True),
        },
    )
    (plain, filtered, decoding, skipping) = seconds.values()
    for (label, spent), faster in zip(seconds.items(), (None, plain, None, decoding)):
        print(f"   {label:72} {spent:7.2f} s" + (f"  {faster / spent:.1f}x faster" if faster else ""))
    regex(args.repeat)


if __name__ == "__main__":
    main()
