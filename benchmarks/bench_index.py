"""A capture asked twice is read once (kdissect/index/): the second `read -Y` against the first, in the same run
(issue 32: on a 1 GB capture the second `read -Y 'api == JoinGroup' -T fields -e id -e latency_ms` within 2 s wall;
the index at most 15 % of the capture), and what keeping the index costs a first `read --json`.

Each command runs as a user runs it, `python -m kdissect` in its own process, timed in wall seconds (what the user
waits for); the first run without an index in the cache (the compiled decoders there, as any user of kdissect has
them), the second with the index the first kept. The answers are compared with a run that reads the whole file
(--no-cache). The cost of keeping the index: `read --json` without an
index in the cache (which keeps one) against `read --json --no-cache`, alternated, the least of `--repeat` each.

    python benchmarks/bench_index.py [CAPTURE] [--mb 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from synth import synthesized

FILTER = ("-Y", "api == JoinGroup", "-T", "fields", "-e", "id", "-e", "latency_ms")


def timed(args: list[str], cache: str) -> tuple[float, bytes]:
    env = {**os.environ, "KDISSECT_CACHE": cache}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kdissect", *args], capture_output=True, env=env, check=False)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", nargs="?")
    parser.add_argument("--mb", type=int, default=200, help="size of the synthetic capture (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the first read's cost (default 3)")
    args = parser.parse_args()
    path = args.capture or synthesized(f"index-{args.mb}mb.pcap", args.mb, "--heartbeats", "1", "--joins", "50")
    scratch = tempfile.mkdtemp(prefix="bench-index-")
    try:
        cache = os.path.join(scratch, "cache")
        _, whole = timed(["read", path, *FILTER, "--no-cache"], cache)  # the decoders compiled and kept, as for any user
        first, answer = timed(["read", path, *FILTER], cache)
        second, again = timed(["read", path, *FILTER], cache)
        index = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(os.path.join(cache, "index")) for f in files)
        size = os.path.getsize(path)
        print(f"{path}: {size / 1e6:.0f} MB, {len(answer.splitlines())} JoinGroups (wall seconds)")
        print(f"   first  read -Y (reads the file, keeps the index)  {first:7.2f} s")
        print(f"   second read -Y (answered from the index)          {second:7.2f} s  × {second / first:.3f} of the first")
        print(f"   the same answer as a whole read: {answer == again == whole}")
        print(f"   the index: {index / 1e6:.1f} MB, {index / size:.1%} of the capture")
        kept = {"read --json, keeping the index": [], "read --json --no-cache": []}
        for _ in range(args.repeat):
            shutil.rmtree(os.path.join(cache, "index"), ignore_errors=True)
            kept["read --json, keeping the index"].append(timed(["read", path, "--json", "-o", os.devnull], cache)[0])
            kept["read --json --no-cache"].append(timed(["read", path, "--json", "-o", os.devnull, "--no-cache"], cache)[0])
        reference = min(kept["read --json --no-cache"])
        for label, times in kept.items():
            print(f"   {label:32} {min(times):7.2f} s  × {min(times) / reference:.3f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
