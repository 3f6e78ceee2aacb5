"""Start-up: what a command costs before it has much to do, against references measured in the same run.

Each round runs every command once, in turn (so a machine that slows down during the run slows all of them
alike); the figures are medians over the rounds, wall and CPU (user + system) seconds, and each command's
ratio to `tshark -r` of the same tiny capture and to `python -c pass` (the interpreter alone). As in
bench_cli.py, the runs use a byte-code cache in a temporary directory, as an installed package has one.

    python benchmarks/bench_startup.py [--rounds 15] [--capture captures/client-kcat.pcap]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks.bench_cli import KDISSECT, timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15, help="runs of each command; medians are shown (default 15)")
    parser.add_argument("--capture", default=os.path.join(ROOT, "captures", "client-kcat.pcap"), help="the tiny capture")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="kdissect-bench-pyc-")
    env["PYTHONPATH"] = ROOT
    tiny = args.capture
    commands = {
        "kdissect read (to a file)": [*KDISSECT, "read", tiny],
        "kdissect read --json": [*KDISSECT, "read", tiny, "--json"],
        "kdissect stats": [*KDISSECT, "stats", tiny],
        "kdissect --help": [*KDISSECT, "--help"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    if shutil.which("tshark"):
        commands["tshark -r (the same capture)"] = ["tshark", "-r", tiny]
    for command in commands.values():
        timed(command, env)  # the byte-code cache and the page cache
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    for _ in range(args.rounds):
        for label, command in commands.items():
            runs[label].append(timed(command, env))
    medians = {label: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for label, r in runs.items()}
    references = [label for label in ("tshark -r (the same capture)", "python -c pass") if label in medians]
    print(f"start-up on {os.path.relpath(tiny, ROOT)}, medians of {args.rounds} rounds; load average {os.getloadavg()[0]:.2f}")
    print(f"{'':32} {'wall s':>8} {'CPU s':>8}" + "".join(f" {'CPU × ' + r.split(' (')[0]:>22}" for r in references))
    for label, (wall, cpu) in medians.items():
        ratios = "".join(f" {cpu / medians[r][1]:22.2f}" for r in references)
        print(f"{label:32} {wall:8.3f} {cpu:8.3f}{ratios}")


if __name__ == "__main__":
    main()
