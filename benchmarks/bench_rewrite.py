"""Cutting, anonymizing and reading several captures as one (issue 30), against reading, in the same run.

Whole processes as a user runs them, on the batch-heavy capture of `bench_cli.py` (20 records per batch, five
codecs; half its exchanges Fetches):

- `read -Y 'api == Fetch' -q -w cut.pcap` against the same read without `-w` (the cut reads the capture a second
  time and writes every chosen byte again) and against tshark's own cut, `tshark -r F -Y kafka.api_key == 1 -w`
  (which writes whole packets, with no second pass);
- `anonymize F -o anonymized.pcap` (every body and batch decoded, rewritten, compressed again) against
  `read --json`, which decodes as much;
- `read --json F COPY`, the capture and a copy of it read as two taps of one network (every connection seen twice,
  each byte taken once), against `read --json F`.

Medians of `--repeat` runs of CPU time (user + system), the figure a shared machine disturbs least.

    python benchmarks/bench_rewrite.py [--mb 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.bench_cli import KDISSECT, bench_env, median, table
from benchmarks.synth import synthesized


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=20, help="size of the batch-heavy capture (default 20)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the median is shown (default 3)")
    args = parser.parse_args()
    if not shutil.which("tshark"):
        raise SystemExit("tshark is not installed: no reference to compare with (apt-get install tshark)")
    env = bench_env()
    capture = synthesized(f"core-{args.mb}mb.pcap", args.mb, "--codecs", "none,gzip,snappy,lz4,zstd")
    out = tempfile.mkdtemp(prefix="kdissect-bench-rewrite-")
    copy, cut = os.path.join(out, "copy.pcap"), os.path.join(out, "cut.pcap")
    shutil.copyfile(capture, copy)
    run = lambda *command: median(list(command), env, args.repeat)
    print("CPU time ratios: CPU seconds over the reference's, medians of", args.repeat, "runs")
    try:
        fetches = run(*KDISSECT, "read", capture, "-Y", "api == Fetch", "-q", "--jobs", "1")  # -w reads with one process
        tshark_cut = run("tshark", "-r", capture, "-Y", "kafka.api_key == 1", "-w", os.path.join(out, "tshark.pcap"))
        table(
            f"cutting: {capture} ({os.path.getsize(capture) / 1e6:.0f} MB), the Fetches",
            [
                ("kdissect read -Y -q -w cut.pcap", run(*KDISSECT, "read", capture, "-Y", "api == Fetch", "-q", "-w", cut)),
                ("kdissect read -Y -q", fetches),
                ("tshark -r -Y -w", tshark_cut),
            ],
            {"read -Y": fetches, "tshark -Y -w": tshark_cut},
        )
        decoded = run(*KDISSECT, "read", capture, "--json", "-q", "--jobs", "1")
        table(
            "anonymizing and two taps",
            [
                ("kdissect anonymize -o", run(*KDISSECT, "anonymize", capture, "-o", os.path.join(out, "anonymized.pcap"))),
                ("kdissect read --json (two taps)", run(*KDISSECT, "read", capture, copy, "--json", "-q")),
                ("kdissect read --json", decoded),
            ],
            {"read --json": decoded},
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
