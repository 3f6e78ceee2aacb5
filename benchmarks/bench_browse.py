"""`kdissect browse` on a big capture: how soon the first screen is full, how long the whole index takes, and the
peak RSS, against `tshark -r` of the same file reaching its first line, in the same run; then a second browse of
the same file, which opens from the pass the first kept, against the first.

    python benchmarks/bench_browse.py               # a ~1 GB synthetic capture (written once to benchmarks/data/)
    python benchmarks/bench_browse.py --mb 200      # a quicker look
    python benchmarks/bench_browse.py --capture X   # any capture

The browser runs headless (Textual's pilot, 160×45) in a process of its own, timed from the process's start:
imports, Textual's start-up and the first rows of the background index all count. "First screen" is the moment
the exchange list holds as many rows as it has lines on screen. Peak RSS is the process's own (ru_maxrss). Both
browses keep in a cache folder of their own, made empty for the run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from benchmarks.synth import synthesized

CHILD = r"""
import time
started = time.perf_counter()
import asyncio, json, resource, sys
from pathlib import Path
from kdissect.browse.app import BrowseApp
from kdissect.dissector import Options
from kdissect.index.browsed import kept

def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

async def main():
    app = BrowseApp(Path(sys.argv[1]), Options(), keeping=kept(Path(sys.argv[1]), Options()))
    out = {}
    async with app.run_test(size=(160, 45)) as pilot:
        lines = app.query_one("#list")
        while True:
            await pilot.pause(0.01)
            if lines.count and (lines.count >= lines.scrollable_content_region.height or app.indexed):
                out["first_screen_s"] = time.perf_counter() - started
                out["first_screen_rss_mb"] = rss_mb()
                out["rows_at_first_screen"] = lines.count
                break
        while not app.indexed:
            await pilot.pause(0.2)
        out["indexed_s"] = time.perf_counter() - started
        out["exchanges"] = len(app.index)
        out["failure"] = app.failure
        position = len(app.index) - 1
        lines.cursor = position
        opened = time.perf_counter()
        await pilot.press("enter")
        while app.detail.exchange is None:
            await pilot.pause(0.01)
        out["open_last_s"] = time.perf_counter() - opened
        out["loaded"] = app.indexer.loaded
    out["peak_rss_mb"] = rss_mb()
    print(json.dumps(out))

asyncio.run(main())
"""


def tshark_first_line(path: str) -> float:
    started = time.perf_counter()
    with subprocess.Popen(["tshark", "-r", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as tshark:
        assert tshark.stdout is not None
        tshark.stdout.readline()
        took = time.perf_counter() - started
        tshark.kill()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=1000, help="size of the synthetic capture (default 1000)")
    parser.add_argument("--capture", help="a capture of your own instead")
    args = parser.parse_args()
    path = args.capture or synthesized(f"browse-{args.mb}.pcap", args.mb, "--heartbeats", "2")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "KDISSECT_CACHE": cache}
        browse, again = (
            json.loads(
                subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True, cwd=root, check=True, env=env)
                .stdout.strip()
                .splitlines()[-1]
            )
            for _ in range(2)
        )
    tshark = tshark_first_line(path)
    size = os.path.getsize(path) / 1e6
    print(f"capture: {path}, {size:.0f} MB, {browse['exchanges']} exchanges")
    print(f"tshark -r, first line:           {tshark:8.2f} s")
    print(
        f"kdissect browse, first screen:   {browse['first_screen_s']:8.2f} s  ({browse['first_screen_s'] / tshark:.2f}× tshark)"
        f"  {browse['rows_at_first_screen']} rows, RSS {browse['first_screen_rss_mb']:.0f} MB"
    )
    print(f"kdissect browse, whole index:    {browse['indexed_s']:8.2f} s  ({size / browse['indexed_s']:.1f} MB/s)")
    print(f"open the last exchange:          {browse['open_last_s']:8.2f} s")
    print(f"peak RSS:                        {browse['peak_rss_mb']:8.0f} MB")
    assert again["loaded"] and again["exchanges"] == browse["exchanges"], "the second browse did not open from the kept pass"
    print(
        f"second browse, whole index:      {again['indexed_s']:8.2f} s  (× {again['indexed_s'] / browse['indexed_s']:.3f} of the first;"
        f" opened from the pass the first kept)"
    )
    print(f"second browse, open the last:    {again['open_last_s']:8.2f} s, peak RSS {again['peak_rss_mb']:.0f} MB")
    if browse["failure"]:
        print(f"the index stopped early: {browse['failure']}")


if __name__ == "__main__":
    main()
