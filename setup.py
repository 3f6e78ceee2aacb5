"""Compiles the typed hot modules (kdissect/native.py names them) with mypyc, when mypyc and a C compiler are there.

Everything else is in pyproject.toml. Without a compiler, or when mypyc fails, the same modules install as pure
Python, which decodes the same (one line on the build's output says so): installing never fails for want of a
compiler. `KDISSECT_PURE=1` at run time loads the source even where the extensions were built.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _say_pure(why: str) -> None:
    reason = why.splitlines()[0] if why else ""
    print(f"kdissect: installing the pure-Python modules, not compiled ({reason[:160]})", file=sys.stderr)


def _native():
    """kdissect/native.py, loaded by path: importing kdissect here would run its package."""
    spec = importlib.util.spec_from_file_location("_kdissect_native", os.path.join(HERE, "kdissect", "native.py"))
    assert spec is not None and spec.loader is not None
    native = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(native)
    return native


NATIVE = _native()
SOURCES = {name: os.path.join(*name.split(".")) + ".py" for name in NATIVE.COMPILED}


def _extensions() -> list:
    """mypyc's extensions for the compiled modules, or none when mypyc is missing or refuses them."""
    try:
        from mypyc.build import mypycify

        return mypycify(list(SOURCES.values()), group_name="kdissect._native", opt_level="3")
    except (Exception, SystemExit) as e:  # mypy missing, or the code not typed as mypyc needs (it exits): the source works
        _say_pure(f"mypyc: {type(e).__name__}: {e}")
        return []


class OptionalBuildExt(build_ext):
    """build_ext that falls back to the pure modules when the C build fails, leaving no half of it behind."""

    def run(self) -> None:
        if self.inplace and os.path.exists(NATIVE.STAMP):  # a wheel's build leaves the checkout's own alone
            os.remove(NATIVE.STAMP)
        try:
            super().run()
        except Exception as e:  # no compiler, no Python headers: distutils' errors have no common base but Exception
            for output in self.get_outputs():
                if os.path.exists(output):
                    os.remove(output)
            _say_pure(f"C build: {type(e).__name__}: {e}")
            return
        if self.inplace and self.extensions:  # a checkout whose sources may change after: kdissect/native.py checks
            with open(NATIVE.STAMP, "w") as f:
                f.writelines(f"{name} {NATIVE.digest(os.path.join(HERE, source))}\n" for name, source in SOURCES.items())


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
