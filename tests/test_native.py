"""The modules mypyc compiles (kdissect/native.py): which variant loads, and that both write the same bytes.

An install with a C compiler builds them (setup.py); `KDISSECT_PURE=1` loads their source instead, and so does a
source changed since an in-place build. Where nothing was built the compiled half is skipped, except under CI
(CI=true), whose install must have compiled them.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kdissect
from kdissect import native

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = sorted((ROOT / "captures").glob("*.pcap*"))

DRIVER = """
import importlib, json, os, sys
from kdissect import native
from kdissect.cli import main

out, captures = sys.argv[1], sys.argv[2:]
statuses = []
for i, capture in enumerate(captures):
    keylog = capture.rsplit(".", 1)[0] + ".keylog"
    args = ["read", capture, "--json", "--all-events", "-o", f"{out}/{i}.ndjson"]
    try:
        main(args + (["--tls-keylog", keylog] if os.path.exists(keylog) else []))
        statuses.append(0)
    except SystemExit as e:
        statuses.append(e.code)
variants = {name: native.variant(importlib.import_module(name)) for name in native.COMPILED}
print(json.dumps({"variants": variants, "statuses": statuses}))
"""


def built() -> bool:
    """Whether the compiled modules have extensions beside their source (all of them, or it fails)."""
    found = []
    for name in native.COMPILED:
        source = ROOT / Path(*name.split(".")).with_suffix(".py")
        if any(source.with_name(source.stem + suffix).exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES):
            found.append(name)
    assert not found or len(found) == len(native.COMPILED), f"only {found} of {native.COMPILED} built: pip install -e . again"
    if not found and os.environ.get("CI"):
        pytest.fail("CI installs with a C compiler, and the compiled modules were not built: see pip's output for why")
    return bool(found)


def run_all(tmp_path: Path, pure: bool) -> tuple[dict, Path]:
    """`read --json --all-events` of every capture, in a fresh interpreter: (variants and exit statuses, output folder)."""
    env = {k: v for k, v in os.environ.items() if k != native.PURE_VARIABLE}
    if pure:
        env[native.PURE_VARIABLE] = "1"
    out = tmp_path / ("pure" if pure else "default")
    out.mkdir()
    command = [sys.executable, "-c", DRIVER, str(out), *map(str, CAPTURES)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1]), out


def test_compiled_and_pure_write_the_same_json_for_every_capture(tmp_path):
    if not built():
        pytest.skip("the compiled modules are not built here (pip install -e . with a C compiler builds them)")
    compiled, compiled_out = run_all(tmp_path, pure=False)
    pure, pure_out = run_all(tmp_path, pure=True)
    assert compiled["variants"] == dict.fromkeys(native.COMPILED, "compiled"), "a stale build? pip install -e . again"
    assert pure["variants"] == dict.fromkeys(native.COMPILED, "pure")
    assert len(CAPTURES) > 40 and compiled["statuses"] == pure["statuses"]
    records = 0
    for i, capture in enumerate(CAPTURES):
        text = (compiled_out / f"{i}.ndjson").read_bytes()
        assert text == (pure_out / f"{i}.ndjson").read_bytes(), capture.name
        records += text.count(b'"offset_delta"')
    assert records > 1000  # the record loop ran, on both


def test_pure_is_loaded_when_asked_in_a_fresh_interpreter():
    code = "import importlib; from kdissect import native; print([native.variant(importlib.import_module(n)) for n in native.COMPILED])"
    env = {**os.environ, native.PURE_VARIABLE: "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(["pure"] * len(native.COMPILED))


def test_the_finder_loads_the_source_when_asked_or_stale(monkeypatch):
    finder = native.SourceFinder()
    wire = str(ROOT / "kdissect" / "wire.py")
    monkeypatch.delenv(native.PURE_VARIABLE, raising=False)
    finder.stamped = {"kdissect.wire": native.digest(wire)}
    assert finder.find_spec("kdissect.wire", kdissect.__path__) is None  # up to date: the extension, if any, loads
    assert finder.find_spec("kdissect.limits", kdissect.__path__) is None  # not compiled: none of its business
    finder.stamped = {"kdissect.wire": "00000000"}
    spec = finder.find_spec("kdissect.wire", kdissect.__path__)
    assert spec is not None and spec.origin == wire  # the source changed since the build: the source loads
    finder.stamped = {}
    monkeypatch.setenv(native.PURE_VARIABLE, "1")
    spec = finder.find_spec("kdissect.wire", kdissect.__path__)
    assert spec is not None and spec.origin == wire
    monkeypatch.setenv(native.PURE_VARIABLE, "0")
    assert finder.find_spec("kdissect.wire", kdissect.__path__) is None


def test_the_compiled_length_reader_takes_every_buffer_the_product_hands_it():
    """mypyc checks annotations where Python does not: frames are bytearrays, decoders read memoryviews (the dissect
    fuzzer found a bytearray refused by the compiled read_uvarint: a decode.internal-error)."""
    from kdissect.wire import WireError, read_uvarint

    for buffer in (b"\x96\x01", bytearray(b"\x96\x01"), memoryview(b"\x96\x01")):
        assert read_uvarint(buffer, 0) == (150, 2)
        with pytest.raises(WireError):
            read_uvarint(buffer[:1], 0)
