"""What the doctor costs, against what `stats` did before it had a findings section, in the same process.

Issue 17 asks that `doctor` cost at most 1.2x `stats`. Both read every packet, decode every body and add up
what they read: timed on the core's loop (read, reassemble, pair, decode) feeding the stats totals alone
(`stats` without its findings section), the doctor alone (`doctor`), and both (`stats` as it is now). The
capture comes from benchmarks/synth.py (Produce and Fetch with record batches, and Heartbeats) unless one is
given.

    python benchmarks/bench_doctor.py [CAPTURE] [--mb 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from benchmarks.bench_filter import best
from benchmarks.synth import synthesized
from kdissect.capture import open_capture
from kdissect.dissector import Options, make_dissector
from kdissect.doctor.engine import Doctor
from kdissect.events import Exchange
from kdissect.views.stats import Stats


def loop(path: str, stats: bool, doctor: bool) -> Callable[[], None]:
    def run() -> None:
        totals, findings = Stats(), Doctor()
        with open_capture(path) as source:
            for event in make_dissector(Options()).run(source.packets()):
                if doctor:
                    findings.add(event)
                if stats and isinstance(event, Exchange):
                    totals.add(event)
        if doctor:
            findings.findings()
        if stats:
            list(totals.tables())

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", nargs="?")
    parser.add_argument("--mb", type=int, default=30, help="size of the synthetic capture (default 30)")
    parser.add_argument("--repeat", type=int, default=3, help="take the best of this many rounds (default 3)")
    args = parser.parse_args()
    path = args.capture or synthesized(f"filter-{args.mb}mb.pcap", args.mb, "--codecs", "none,gzip,lz4,zstd", "--heartbeats", "2")
    runs = {"stats": loop(path, True, False), "doctor": loop(path, False, True), "stats+doctor": loop(path, True, True)}
    seconds = best(args.repeat, runs)
    base = seconds["stats"]
    print(f"{path} ({os.path.getsize(path) / 1e6:.0f} MB), best of {args.repeat}, CPU seconds:")
    for label, value in seconds.items():
        print(f"  {label:13} {value:7.2f}  {value / base:5.2f}x stats")


if __name__ == "__main__":
    main()
