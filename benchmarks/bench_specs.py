"""Start-up cost of users' spec folders (`--spec-dir`): reading, checking and installing 10 spec files.

    python benchmarks/bench_specs.py [--repeat 20]

Two folders of 10 files each: the draft specs of ../shared/kafka-draft-specs (small, as users' drafts are), and
the requests and responses of Kafka's five largest APIs from ../shared/kafka-message-specs (copied to a temporary
folder), which stand for a folder of newer versions of built-in APIs. Each is timed three ways, best of
`--repeat` runs:

- load:    `user_specs.from_folders`: read the files, parse them with offsets, build and check every definition;
- install: `schema.Catalog(...)` made: the tables the run decodes with, the users' APIs laid over the built-in ones;
- json:    the reference, in the same run: the standard library's `json.loads` of the same texts with their
           comments stripped, which only parses and checks nothing.

Then the whole command: `kdissect read` of a small capture with and without the drafts folder, as subprocesses,
best of five; the difference is what a user waits for. The goal is under 50 ms for a folder of 10 files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kdissect.schema import Catalog
from kdissect.schema.specs import strip_comments
from kdissect.schema.user_specs import from_folders

SHARED = ROOT.parent / "shared"
DRAFT_KEYS = [
    "ConsumerGroupPrepareAssignment=120",
    "ConsumerGroupInstallAssignment=300",
    "AlterTopics=1000",
    "ListAcls=5000",
    "AlterAcls=32767",
]
GOAL_MS = 50.0


def best(run: Callable[[], object], repeat: int) -> float:
    """The best wall time of `repeat` runs, in milliseconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def largest_apis(folder: Path, count: int) -> list[Path]:
    """The request and response files of the `count` APIs whose two files are largest together."""
    sizes: dict[str, int] = {}
    for path in folder.glob("*Request.json"):
        response = path.with_name(path.name.replace("Request.json", "Response.json"))
        if response.exists():
            sizes[path.name] = path.stat().st_size + response.stat().st_size
    names = sorted(sizes, key=sizes.__getitem__, reverse=True)[:count]
    return [folder / name for name in names] + [folder / name.replace("Request.json", "Response.json") for name in names]


def measure(label: str, folder: Path, keys: list[str], repeat: int) -> float:
    texts = [path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.json"))]
    specs = from_folders([folder], keys)
    assert not specs.problems, specs.problems
    load = best(lambda: from_folders([folder], keys), repeat)

    def install() -> None:
        Catalog(specs.definitions)

    installing = best(install, repeat)
    reference = best(lambda: [json.loads(strip_comments(text)) for text in texts], repeat)
    size = sum(len(text) for text in texts)
    print(
        f"{label:<28} {len(texts):>5} {size / 1024:>7.1f} {load:>9.2f} {installing:>10.2f} {reference:>9.2f} "
        f"{load / reference:>9.1f} {'yes' if load + installing < GOAL_MS else 'NO':>8}"
    )
    return load + installing


def command_cost(capture: Path, repeat: int) -> None:
    def run(*extra: str) -> float:
        args = [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])", "read", str(capture), "-q", *extra]
        done = subprocess.run(args, capture_output=True, cwd=ROOT, check=False)
        assert done.returncode == 0, done.stderr.decode()
        return 0.0

    keys = [arg for key in DRAFT_KEYS for arg in ("--key", key)]
    plain = best(lambda: run(), repeat)
    with_specs = best(lambda: run("--spec-dir", str(SHARED / "kafka-draft-specs"), *keys), repeat)
    print(
        f"\nkdissect read (a small capture), best of {repeat}: {plain:.0f} ms; with the drafts folder {with_specs:.0f} ms "
        f"({with_specs / plain:.2f}x, +{with_specs - plain:.0f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    drafts, kafka = SHARED / "kafka-draft-specs", SHARED / "kafka-message-specs"
    print(f"{'folder':<28} {'files':>5} {'KiB':>7} {'load ms':>9} {'install ms':>10} {'json ms':>9} {'x json':>9} {'< 50 ms':>8}")
    if drafts.is_dir():
        measure("draft specs (KIP-848, KIP-4)", drafts, DRAFT_KEYS, args.repeat)
    else:
        print(f"{drafts} is absent: the draft folder is skipped")
    if kafka.is_dir():
        with tempfile.TemporaryDirectory() as scratch:
            for path in largest_apis(kafka, 5):
                shutil.copy(path, scratch)
            measure("Kafka's 5 largest APIs", Path(scratch), [], args.repeat)
    else:
        print(f"{kafka} is absent: Kafka's specs are skipped")
    if drafts.is_dir():
        command_cost(ROOT / "captures" / "kcat-debian-librdkafka.pcap", 5)


if __name__ == "__main__":
    main()
