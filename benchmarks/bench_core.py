"""The core's throughput against tshark's, on the same capture, in the same run.

kdissect is timed reading, reassembling, framing and pairing (headers only), then again with full decoding
(bodies, records, meaning); tshark with `-T fields -e frame.number` (what the core's own work compares to),
and once more with its Kafka dissector disabled, as the floor of reading the file at all. The capture is
synthesised (benchmarks/synth.py) unless one is given.

    python benchmarks/bench_core.py [CAPTURE] [--mb 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from benchmarks.synth import synthesized
from kdissect.capture import open_capture
from kdissect.dissector import Options, make_dissector


def run_core(path: str, decode: bool) -> tuple[float, int, int]:
    """(seconds, packets, exchanges) of one pass of the core over the file."""
    start = time.perf_counter()
    with open_capture(path) as capture:
        dissector = make_dissector(Options(decode=decode))
        for _ in dissector.run(capture.packets()):
            pass
    return time.perf_counter() - start, dissector.counters.packets, dissector.counters.exchanges


def run_tshark(path: str, *extra: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["tshark", "-r", path, "-T", "fields", "-e", "frame.number", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", nargs="?")
    parser.add_argument("--mb", type=int, default=200, help="size of the synthetic capture (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="take the best of this many runs (default 3)")
    args = parser.parse_args()
    path = args.capture or synthesized(f"core-{args.mb}mb.pcap", args.mb, "--codecs", "none,gzip,snappy,lz4,zstd")
    size = os.path.getsize(path)
    rows = []
    seconds, packets, exchanges = min((run_core(path, decode=False) for _ in range(args.repeat)), key=lambda r: r[0])
    rows.append(("kdissect: read, reassemble, frame, pair", seconds))
    decoded = min(run_core(path, decode=True)[0] for _ in range(args.repeat))
    rows.append(("kdissect: the same, and decode everything", decoded))
    if shutil.which("tshark"):
        rows.append(("tshark -T fields -e frame.number", min(run_tshark(path) for _ in range(args.repeat))))
        rows.append(
            ("  the same, Kafka dissector disabled", min(run_tshark(path, "--disable-protocol", "kafka") for _ in range(args.repeat)))
        )
    else:
        print("tshark is not installed: no reference to compare with (apt-get install tshark)")
    reference = rows[2][1] if len(rows) > 2 else None
    print(f"{path}: {size / 1e6:.0f} MB, {packets} packets, {exchanges} exchanges (best of {args.repeat})")
    print(f"{'':44} {'MB/s':>8} {'packets/s':>11} {'× tshark time':>14}")
    for label, secs in rows:
        ratio = f"{secs / reference:.2f}" if reference else "-"
        print(f"{label:44} {size / 1e6 / secs:8.1f} {packets / secs:11,.0f} {ratio:>14}")


if __name__ == "__main__":
    main()
