"""Record decoding per codec, against `tshark -V` on the same captures, in the same run.

For each case a synthetic capture of Produce requests and Fetch responses full of record batches is written
(benchmarks/synth.py, Produce v7 and Fetch v11 so that tshark 4.0 can read them); kdissect decodes every
record of every batch (CRCs checked, values decompressed), tshark dissects with -V. Besides the times, the
table shows how many record values each tool actually produced: tshark leaves some batches undecoded.

    python benchmarks/bench_records.py [--mb 20] [--repeat 3]
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
from kdissect.decode.body import Body
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange

CASES = [
    ("none", ["none"], 20),
    ("gzip", ["gzip"], 20),
    ("snappy", ["snappy"], 20),
    ("lz4", ["lz4"], 20),
    ("zstd", ["zstd"], 20),
    ("zstd, 200 KB batches", ["zstd"], 1000),
]


def kdissect_records(path: str) -> tuple[float, int]:
    """(seconds, records decoded) for one full pass."""
    start = time.perf_counter()
    records = 0
    with open_capture(path) as capture:
        for event in make_dissector(Options()).run(capture.packets()):
            if isinstance(event, Exchange):
                for message in (event.request, event.response):
                    if message is not None and isinstance(message.body, Body):
                        records += sum(1 for placed in message.body.records for _ in placed.records.records())
    return time.perf_counter() - start, records


def tshark_verbose(path: str) -> float:
    start = time.perf_counter()
    subprocess.run(["tshark", "-r", path, "-V"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def tshark_values(path: str) -> int:
    """Record values tshark decoded (kafka.message_value occurrences)."""
    out = subprocess.run(
        ["tshark", "-r", path, "-T", "fields", "-e", "kafka.message_value"], capture_output=True, text=True, check=True
    ).stdout
    return sum(len(line.split(",")) for line in out.splitlines() if line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=20, help="size of each case's capture (default 20)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tshark = shutil.which("tshark") is not None
    if not tshark:
        print("tshark is not installed: no reference to compare with (apt-get install tshark)")
    print(
        f"{'case':24} {'records':>9} {'kdissect rec/s':>15} {'tshark -V s':>12} {'kdissect s':>11}"
        f" {'× tshark time':>14} {'tshark values':>14}"
    )
    for label, codecs, per_batch in CASES:
        name = f"records-{label.split(',')[0]}-{per_batch}-{args.mb}mb.pcap"
        path = synthesized(name, args.mb, "--codecs", ",".join(codecs), "--records", str(per_batch))
        seconds, records = min((kdissect_records(path) for _ in range(args.repeat)), key=lambda r: r[0])
        if tshark:
            verbose = min(tshark_verbose(path) for _ in range(args.repeat))
            values = tshark_values(path)
            print(
                f"{label:24} {records:9,} {records / seconds:15,.0f} {verbose:12.2f} {seconds:11.2f} {seconds / verbose:14.2f} {values:14,}"
            )
        else:
            print(f"{label:24} {records:9,} {records / seconds:15,.0f} {'-':>12} {seconds:11.2f} {'-':>14} {'-':>14}")


if __name__ == "__main__":
    main()
