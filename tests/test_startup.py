"""What the commands load when they start: the heavy libraries only on the paths that need them.

Start-up time is measured by benchmarks/bench_startup.py; here the modules loaded are checked, which no busy
machine can make pass or fail: pydantic (typer 0.29 loads it to coerce every option), Textual (the browser
alone) and pyspark (the Spark job alone) never load on the way to a command that does not use them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "captures" / "client-kcat.pcap"
HEAVY = ("pydantic", "textual", "pyspark", "pyarrow", "pandas")

PROBE = """
import json, sys
from kdissect.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded(*args: str) -> set[str]:
    """The modules a run of `kdissect ARGS` has loaded when it ends, its output thrown away."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, timeout=120, check=False, cwd=ROOT, env={**os.environ, "COLUMNS": "160"}
    )
    return set(json.loads(done.stderr.decode().strip().splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_importing_the_cli_loads_no_heavy_library():
    done = subprocess.run(
        [sys.executable, "-c", "import json, sys, kdissect.cli; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        timeout=120,
        check=True,
        cwd=ROOT,
    )
    modules = set(json.loads(done.stdout))
    assert "kdissect.cli" in modules and "kdissect.commands.browse" in modules
    assert heavy(modules) == []
    assert "kdissect.schema.generated" not in modules  # the tables load with the first body to decode


@pytest.mark.parametrize(
    "args",
    [
        ("read", str(TINY), "-o", os.devnull),
        ("read", str(TINY), "--json", "-o", os.devnull),
        ("stats", str(TINY), "-o", os.devnull),
        ("read", "--help"),
    ],
    ids=["read", "read-json", "stats", "help"],
)
def test_a_command_loads_only_what_it_uses(args):
    modules = loaded(*args)
    if "--help" not in args:
        assert "kdissect.dissector" in modules and "kdissect.schema.generated" in modules  # the probe sees the run's imports
    assert heavy(modules) == []
    assert "kdissect.views.detail" not in modules  # the -V tree, and show's
    assert "kdissect.tls.decryptor" not in modules and "cryptography" not in modules  # no TLS in this capture
    if "--json" in args:
        assert "rich.table" not in modules
