"""What the report page costs over the doctor, and how large it is, on a large capture.

Issue 34 asks that a 1 GB capture's report build within 1.2x the time of `doctor` on it and stay under 5 MB: timed
on the core's loop (read, reassemble, pair, decode) feeding the doctor alone (`doctor`), and the doctor with the
page's collector and the page written (`report`), in the same process, CPU seconds. The capture comes from
benchmarks/synth.py (Produce and Fetch with record batches in four codecs, and Heartbeats) unless one is given.

    python benchmarks/bench_report.py [CAPTURE] [--mb 1000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import io
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
from kdissect.report.build import Build
from kdissect.report.page import Told

SIZES: list[int] = []
"""The size of each page written, in bytes."""


def loop(path: str, page: bool) -> Callable[[], None]:
    def run() -> None:
        doctor = Doctor()
        build = Build(doctor) if page else None
        with open_capture(path) as source:
            for event in make_dissector(Options(keep=None)).run(source.packets()):
                if build is not None:
                    build.add(event)
                else:
                    doctor.add(event)
        if build is None:
            doctor.report()
            return
        out = io.StringIO()
        build.write(out, Told((path,)))
        SIZES.append(len(out.getvalue().encode()))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", nargs="?")
    parser.add_argument("--mb", type=int, default=1000, help="size of the synthetic capture (default 1000)")
    parser.add_argument("--repeat", type=int, default=1, help="take the best of this many rounds (default 1)")
    args = parser.parse_args()
    path = args.capture or synthesized(f"report-{args.mb}mb.pcap", args.mb, "--codecs", "none,gzip,lz4,zstd", "--heartbeats", "2")
    seconds = best(args.repeat, {"doctor": loop(path, False), "report": loop(path, True)})
    print(f"{path} ({os.path.getsize(path) / 1e6:.0f} MB), best of {args.repeat}, CPU seconds:")
    print(f"  doctor {seconds['doctor']:8.2f}")
    print(f"  report {seconds['report']:8.2f}  {seconds['report'] / seconds['doctor']:5.2f}x doctor (target: at most 1.20)")
    print(f"  page   {max(SIZES) / 1e6:8.2f} MB (target: under 5 MB)")


if __name__ == "__main__":
    main()
