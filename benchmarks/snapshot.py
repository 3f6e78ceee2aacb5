"""Every user-facing output of every test capture, written to a folder, and two such folders compared.

A refactoring that claims to change no behaviour is checked with it: take a snapshot of the commit before, one
of the commit after, and compare. The outputs: `read --json --all-events`, `read` (the terminal view, to a
file), `stats --json`, `doctor --json` and `show --hex` of every exchange, for every capture in captures/ and
../shared/captures-public/ (with its key log when it has one).

    python benchmarks/snapshot.py take DIR          # write the outputs of this checkout into DIR
    python benchmarks/snapshot.py compare A B       # list the outputs that differ; exit 1 if any
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT.parent / "shared" / "captures-public"
KDISSECT = [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])"]
OUTPUTS = {
    "read.json": ["read", "--json", "--all-events", "--jobs", "1"],
    "read.txt": ["read", "--jobs", "1"],
    "stats.json": ["stats", "--json"],
    "doctor.json": ["doctor", "--json"],
    "show.txt": ["show", "--hex", "-Y", "id >= 1"],
}


def captures() -> list[Path]:
    found = sorted(p for p in (ROOT / "captures").iterdir() if p.suffix in (".pcap", ".pcapng"))
    if PUBLIC.is_dir():
        found += sorted(p for p in PUBLIC.iterdir() if p.suffix in (".pcap", ".pcapng"))
    return found


def take(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, COLUMNS="160", KDISSECT_CACHE=str(folder / ".cache"))
    jobs = []
    for capture in captures():
        keylog = capture.with_suffix(".keylog")
        extra = ["--tls-keylog", str(keylog)] if keylog.exists() else []
        for name, args in OUTPUTS.items():
            jobs.append((folder / f"{capture.parent.name}__{capture.stem}.{name}", [*KDISSECT, *args, str(capture), *extra]))

    def run(job: tuple[Path, list[str]]) -> None:
        out, command = job
        done = subprocess.run(command, capture_output=True, cwd=ROOT, env=env)
        out.write_bytes(done.stdout + f"\n--- exit {done.returncode}\n".encode() + done.stderr)

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(run, jobs))
    print(f"{len(jobs)} outputs in {folder}")


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir() if p.is_file()} | {p.name for p in b.iterdir() if p.is_file()})
    differ = 0
    for name in names:
        left, right = a / name, b / name
        if not left.exists() or not right.exists():
            print(f"only in one: {name}")
            differ += 1
            continue
        if left.read_bytes() != right.read_bytes():
            differ += 1
            lines = difflib.unified_diff(
                left.read_text(errors="replace").splitlines(), right.read_text(errors="replace").splitlines(), name, name, n=1, lineterm=""
            )
            print("\n".join(list(lines)[:12]))
    print(f"{len(names)} outputs, {differ} differ")
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("take").add_argument("folder", type=Path)
    both = verbs.add_parser("compare")
    both.add_argument("a", type=Path)
    both.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.verb == "take":
        take(args.folder)
    else:
        sys.exit(compare(args.a, args.b))


if __name__ == "__main__":
    main()
