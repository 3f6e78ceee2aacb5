"""Command line: ``python -m rig all``, ``python -m rig NAME [NAME...]``, ``python -m rig list``,
``python -m rig check`` (re-check the captures on disk), ``python -m rig table``.

``python -m rig workload NAME --bootstrap H:P --manifest FILE [--keylog FILE] [--registry URL]`` is the internal
entry point the runner starts in a child process; it does no capturing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rig import scenarios


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    registry = scenarios.load_all()

    if argv[:1] == ["workload"]:
        parser = argparse.ArgumentParser(prog="python -m rig workload")
        parser.add_argument("name", choices=sorted(registry))
        parser.add_argument("--bootstrap", required=True)
        parser.add_argument("--manifest", required=True)
        parser.add_argument("--keylog")
        parser.add_argument("--registry")
        args = parser.parse_args(argv[1:])
        from rig.manifest import Manifest

        registry[args.name].workload(scenarios.Ctx(args.bootstrap, Manifest(args.manifest), args.keylog, args.registry))
        return 0

    parser = argparse.ArgumentParser(
        prog="python -m rig",
        description="Capture real Kafka traffic between real clients and a tansu broker.",
    )
    parser.add_argument(
        "names",
        nargs="+",
        metavar="NAME",
        help="'all', 'list', 'check' (re-check existing captures), 'table' (markdown summary), or scenario names: " + ", ".join(registry),
    )
    parser.add_argument("--out", default=None, help="output folder (default: captures/ of the repo)")
    parser.add_argument("--port", type=int, default=9092, help="broker port (default 9092)")
    parser.add_argument("--keep-going", action="store_true", help="go on after a failed scenario")
    args = parser.parse_args(argv)

    if args.names in (["check"], ["table"]):
        from rig import report
        from rig.run import CAPTURES

        out = Path(args.out) if args.out else CAPTURES
        if args.names == ["check"]:
            return report.check_all(registry, out)
        print(report.table(registry, out))
        return 0
    if args.names == ["list"]:
        for sc in registry.values():
            where = "veth MTU 1500" if sc.netns else f"{sc.interface}"
            print(f"{sc.name:32} {where:14} {sc.title}")
        return 0
    names = list(registry) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in registry]
    if unknown:
        parser.error("unknown scenario(s): " + ", ".join(unknown))

    from rig.run import CAPTURES, run_scenario

    out = Path(args.out) if args.out else CAPTURES
    failed = []
    for name in names:
        print(f"== {name}", flush=True)
        start = time.monotonic()
        try:
            run_scenario(registry[name], out, port=args.port)
        except Exception as exc:  # report and maybe go on; the traceback is in the log above
            print(f"  FAILED: {exc}", flush=True)
            failed.append(name)
            if not args.keep_going:
                break
        print(f"  ({time.monotonic() - start:.1f} s)", flush=True)
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
