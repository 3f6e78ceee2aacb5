"""The modules mypyc compiles at install (setup.py reads COMPILED from here), and when their source loads instead.

An install with a C compiler puts an extension beside each of these modules' .py, and Python's import system
prefers it. `import kdissect` puts a finder first on sys.meta_path that loads the .py instead when
`KDISSECT_PURE=1` is in the environment (the same code, uncompiled: CI runs the tests on both, a user can rule the
compiled build out), or when the source changed since an in-place build (`pip install -e .` in a checkout) made
the extension: a stale extension would run old code. This module imports nothing of kdissect: it runs first.

Measured: the pure modules (`KDISSECT_PURE=1`) make `kdissect read --json -q --jobs 1` of an 8 MB batch-heavy
capture (`benchmarks/synth.py --mb 8`) take 1.06x the CPU time of the compiled ones (whole processes, 10 alternated
pairs, medians, on an in-place build whose stamp matched its sources). The finder is what keeps that choice and a
stale build honest; for any other module it costs one look in a two-name tuple per import.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import zlib
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

COMPILED = (
    "kdissect.wire",
    "kdissect.records.batch",
)
"""Typed hot modules, compiled together (one shared library, so their calls to each other are C calls)."""
PURE_VARIABLE = "KDISSECT_PURE"
STAMP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native.stamp")
"""Written by an in-place build: each compiled module's source file and its digest when it was compiled."""


def digest(source: str) -> str:
    with open(source, "rb") as f:
        return f"{zlib.crc32(f.read()):08x}"


def source_file(name: str, path: Sequence[str] | None) -> str | None:
    leaf = name.rpartition(".")[2] + ".py"
    for folder in path or sys.path:
        source = os.path.join(folder, leaf)
        if os.path.isfile(source):
            return source
    return None


def _stamped() -> dict[str, str]:
    try:
        with open(STAMP) as f:
            return dict(line.split() for line in f if line.strip())
    except (OSError, ValueError):
        return {}


class SourceFinder:
    """Finds a compiled module's source file, ahead of the path finder, when the source must load instead."""

    def __init__(self) -> None:
        self.stamped = _stamped()

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name not in COMPILED:
            return None
        source = source_file(name, path)
        if source is None:
            return None
        recorded = self.stamped.get(name)
        if pure_requested() or (recorded is not None and recorded != digest(source)):
            return importlib.util.spec_from_file_location(name, source)
        return None


def pure_requested() -> bool:
    return os.environ.get(PURE_VARIABLE, "") not in ("", "0")


def install() -> None:
    """From `kdissect/__init__.py`, before any compiled module is imported."""
    if not any(isinstance(finder, SourceFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, SourceFinder())


def variant(module: ModuleType) -> str:
    """Where `module` was loaded from: "compiled" (an extension) or "pure" (Python source)."""
    origin = getattr(module, "__file__", None) or ""
    return "compiled" if origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)) else "pure"
