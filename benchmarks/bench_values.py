"""What reading record values costs (docs/values.md).

1. A capture without framed values must not get slower: `kdissect read --json -o /dev/null --jobs 1` on a capture of
   record batches whose values are random bytes with a header (benchmarks/synth.py), by this tree and by another
   revision's (`--base`, default where this branch left main; unpacked with `git archive`), run alternately, pair by
   pair, after one run each that writes their byte-code caches; the CPU time (user + system) of each process, and the
   median of the ratios. Both run the pure-Python modules (KDISSECT_PURE=1): a fresh tree has no compiled record loop.
   PYTHONDONTWRITEBYTECODE is dropped: under it each start compiles every module, the tree with more modules pays more.
2. Framed values: the reader's whole reading of a Confluent-framed Avro value (framing found, schema looked up,
   fastavro's schemaless reader, the value made plain) against fastavro's schemaless reader alone on the same
   values, in one process.

    python benchmarks/bench_values.py [--base REVISION] [--mb 30] [--pairs 5] [--values 20000]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks.synth import synthesized


def unpacked(revision: str, into: str) -> str:
    """The revision's tree, unpacked under `into` (git archive: no worktree, nothing registered)."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", revision], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def cpu_of(tree: str, capture: str) -> float:
    """User + system seconds of one `read --json` by the tree's kdissect."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": tree, "KDISSECT_PURE": "1"}
    command = [sys.executable, "-m", "kdissect", "read", capture, "--json", "-o", os.devnull, "--jobs", "1"]
    process = subprocess.Popen(command, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{tree}: read failed with status {status}")
    return usage.ru_utime + usage.ru_stime


def overhead(base: str, capture: str, pairs: int) -> None:
    ratios, mine, theirs = [], [], []
    for tree in (ROOT, base):
        cpu_of(tree, capture)  # byte-code caches written
    for n in range(pairs):
        order = [(ROOT, mine), (base, theirs)] if n % 2 == 0 else [(base, theirs), (ROOT, mine)]
        for tree, times in order:
            times.append(cpu_of(tree, capture))
        ratios.append(mine[-1] / theirs[-1])
        print(f"  pair {n + 1}: this tree {mine[-1]:.2f} s, base {theirs[-1]:.2f} s, ratio {ratios[-1]:.3f}", flush=True)
    print(
        f"read --json, {os.path.getsize(capture) >> 20} MB: median CPU this tree {statistics.median(mine):.2f} s, base "
        f"{statistics.median(theirs):.2f} s; median of the ratios {statistics.median(ratios):.3f}"
    )


def decoding(count: int) -> None:
    import fastavro

    from kdissect.values.framing import ID, SchemaRef
    from kdissect.values.reader import ValueReader
    from kdissect.values.schemas import AVRO, Book, Schema
    from rig.scenarios.values import ORDER_V1

    parsed = fastavro.parse_schema(ORDER_V1)
    rng = random.Random(1)
    values = []
    for n in range(count):
        order = {
            "id": f"order-{n}",
            "amount": rng.random() * 100,
            "customer": {"name": f"customer {n % 97}"},
            "items": ["a", "b"][: n % 3],
            "note": None,
        }
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, order)
        values.append(b"\x00\x00\x00\x00\x01" + out.getvalue())
    book = Book()
    book.add(Schema(AVRO, json.dumps(ORDER_V1), [SchemaRef(ID, 1)], "orders-value", 1))
    reader = ValueReader(book)
    read = reader.read
    schemaless = fastavro.schemaless_reader
    best_reader = best_fastavro = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for value in values:
            read("value", value, (), "orders")
        best_reader = min(best_reader, time.perf_counter() - start)
        start = time.perf_counter()
        for value in values:
            stream = io.BytesIO(value)
            stream.seek(5)
            schemaless(stream, parsed, None)
        best_fastavro = min(best_fastavro, time.perf_counter() - start)
    print(
        f"framed Avro values ({count}, best of 5): the reader {best_reader / count * 1e6:.2f} µs a value, fastavro's "
        f"schemaless reader alone {best_fastavro / count * 1e6:.2f} µs; {best_reader / best_fastavro:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="the revision to compare with (default: where this branch left main)")
    parser.add_argument("--mb", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--values", type=int, default=20000)
    args = parser.parse_args()
    if args.base is None:
        base = subprocess.run(["git", "-C", ROOT, "merge-base", "main", "HEAD"], check=True, capture_output=True, text=True)
        args.base = base.stdout.strip()
    capture = synthesized(f"values-plain-{args.mb}mb.pcap", args.mb, "--records", "20", "--value-size", "200")
    with tempfile.TemporaryDirectory(prefix="kdissect-base-") as folder:
        overhead(unpacked(args.base, folder), capture, args.pairs)
    decoding(args.values)


if __name__ == "__main__":
    main()
