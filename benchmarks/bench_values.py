"""What reading record values costs (docs/values.md).

1. A capture without framed values must not get slower: `kdissect read --json -o /dev/null --jobs 1` on a capture of
   record batches whose values are random bytes with a header (benchmarks/synth.py), by this tree and by the same
   tree with its value reading cut out (a copy changed where `WITHOUT_VALUES` says: no value reader is made, and the
   JSON encoder does not look at a record's first bytes), run alternately, pair by pair, after one run each that
   writes their byte-code caches; the CPU time (user + system) of each process, and the median of the ratios.
   `--base REVISION` compares with another revision's tree instead (unpacked with `git archive`): against one from
   before the values work, the ratio holds everything merged since as well (the doctor's bookkeeping in the core,
   the hostile-input bounds, the capture's index). Both run the pure-Python modules (KDISSECT_PURE=1): a fresh tree
   has no compiled record loop. PYTHONDONTWRITEBYTECODE is dropped: under it each start compiles every module, the
   tree with more modules pays more. With `--instructions`, each tree's instructions are counted too (callgrind):
   the steadier measure on a shared machine.
2. Framed values: the reader's whole reading of a Confluent-framed Avro value (framing found, schema looked up,
   fastavro's schemaless reader, the value made plain) against fastavro's schemaless reader alone on the same
   values, in one process.

    python benchmarks/bench_values.py [--base REVISION] [--mb 30] [--pairs 5] [--values 20000] [--instructions]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks.alternate import timed
from benchmarks.synth import synthesized

WITHOUT_VALUES = {
    "kdissect/commands/options.py": [('    if "schemas" in values:\n', "    if False:\n")],
    "kdissect/views/json_lines.py": [("if (value and value[0] in _looked_at) or (key and key[0] in _looked_at):", "if False:")] * 2,
}
"""The changes that cut value reading out of a copy of the tree: each text is replaced once, in order."""


def without_values(into: str) -> str:
    """A copy of this tree's package with its value reading cut out (`WITHOUT_VALUES`)."""
    shutil.copytree(os.path.join(ROOT, "kdissect"), os.path.join(into, "kdissect"), ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name, changes in WITHOUT_VALUES.items():
        path = os.path.join(into, name)
        with open(path) as f:
            text = f.read()
        for old, new in changes:
            if old not in text:
                raise SystemExit(f"{name} no longer holds {old.strip()!r}: update WITHOUT_VALUES")
            text = text.replace(old, new, 1)
        with open(path, "w") as f:
            f.write(text)
    return into


def unpacked(revision: str, into: str) -> str:
    """The revision's tree, unpacked under `into` (git archive: no worktree, nothing registered)."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", revision], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def reading(tree: str, capture: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment of one `read --json` by the tree's kdissect."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": tree, "KDISSECT_PURE": "1"}
    return [sys.executable, "-m", "kdissect", "read", capture, "--json", "-o", os.devnull, "--jobs", "1"], env


def cpu_of(tree: str, capture: str) -> float:
    """User + system seconds of one `read --json` by the tree's kdissect."""
    command, env = reading(tree, capture)
    return timed(command, env, tree)[0]


def overhead(base: str, capture: str, pairs: int, against: str) -> None:
    ratios, mine, theirs = [], [], []
    for tree in (ROOT, base):
        cpu_of(tree, capture)  # byte-code caches written
    for n in range(pairs):
        order = [(ROOT, mine), (base, theirs)] if n % 2 == 0 else [(base, theirs), (ROOT, mine)]
        for tree, times in order:
            times.append(cpu_of(tree, capture))
        ratios.append(mine[-1] / theirs[-1])
        print(f"  pair {n + 1}: this tree {mine[-1]:.2f} s, {against} {theirs[-1]:.2f} s, ratio {ratios[-1]:.3f}", flush=True)
    print(
        f"read --json, {os.path.getsize(capture) >> 20} MB: median CPU this tree {statistics.median(mine):.2f} s, {against} "
        f"{statistics.median(theirs):.2f} s; median of the ratios {statistics.median(ratios):.3f}"
    )


def instructions(trees: dict[str, str], capture: str, scratch: str) -> None:
    """Instructions each tree's `read --json` runs, counted by callgrind (steadier than CPU time on a shared machine:
    the same count whatever else runs), both trees at once; hash randomisation off, byte-code caches written."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    runs = {}
    for name, tree in trees.items():
        cpu_of(tree, capture)  # byte-code caches written
        command, env = reading(tree, capture)
        out = os.path.join(scratch, f"callgrind-{len(runs)}.out")
        counter = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command]
        runs[name] = subprocess.Popen(
            counter, env={**env, "PYTHONHASHSEED": "0"}, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    counts = {}
    for name, run in runs.items():
        _, errors = run.communicate()
        found = [line.split("refs:")[1] for line in errors.splitlines() if "I   refs:" in line]
        if not found:
            raise SystemExit(f"{name}: callgrind printed no count:\n{errors[-2000:]}")
        counts[name] = int(found[0].replace(",", ""))
    mine, theirs = counts.values()
    names = list(counts)
    print(f"read --json, instructions: {names[0]} {mine / 1e9:.3f} G, {names[1]} {theirs / 1e9:.3f} G; ratio {mine / theirs:.4f}")


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
    parser.add_argument("--base", help="a revision to compare with (default: this tree without its value reading)")
    parser.add_argument("--mb", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--values", type=int, default=20000)
    parser.add_argument("--instructions", action="store_true", help="also count each tree's instructions with callgrind (minutes)")
    args = parser.parse_args()
    capture = synthesized(f"values-plain-{args.mb}mb.pcap", args.mb, "--records", "20", "--value-size", "200")
    with tempfile.TemporaryDirectory(prefix="kdissect-base-") as folder:
        against = "without values" if args.base is None else args.base
        base = without_values(folder) if args.base is None else unpacked(args.base, folder)
        overhead(base, capture, args.pairs, against)
        if args.instructions:
            with tempfile.TemporaryDirectory(prefix="kdissect-callgrind-") as scratch:
                instructions({"this tree": ROOT, against: base}, capture, scratch)
    decoding(args.values)


if __name__ == "__main__":
    main()
