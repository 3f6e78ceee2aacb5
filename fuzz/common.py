"""What every harness shares: atheris when it is there, the small limits fuzzing runs under, the checks.

This module imports nothing from kdissect at import time: a harness must enter `instrumented()` before
kdissect is imported, or atheris sees no coverage in it.
"""

from __future__ import annotations

import contextlib
import struct
import sys
from typing import Any, Callable, Iterable

try:
    import atheris
except ImportError:  # Python 3.12+ has no atheris wheel: fuzz.run falls back to hypothesis
    atheris = None

KiB = 1 << 10
MiB = 1 << 20


def instrumented() -> contextlib.AbstractContextManager:
    """Imports inside this block are coverage-instrumented when atheris runs the harness (`python -m fuzz.NAME`),
    and left alone when tests or the hypothesis fallback import it."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if atheris is None or spec is None or not spec.name.startswith("fuzz.") or spec.name == "fuzz.run":
        return contextlib.nullcontext()
    return atheris.instrument_imports(include=["kdissect"])


def fuzz_limits() -> Any:
    """Limits small enough that fuzzed inputs of a few KiB reach every bound."""
    from kdissect.limits import Limits

    return Limits(
        max_frame_size=64 * KiB,
        max_stream_buffer=8 * KiB,
        max_outstanding_requests=8,
        max_outstanding_acks_zero=2,
        max_connections=4,
        max_buffered_bytes=64 * KiB,
        max_decompressed_batch=256 * KiB,
        max_decompressed_exchange=1 * MiB,
        max_nesting=3,
        max_fragment_bytes=16 * KiB,
    )


class Broken(AssertionError):
    """A harness invariant failed: a crash for the fuzzer."""


def check_diagnostics(diagnostics: Iterable[Any], where: str) -> None:
    """Every diagnostic is named and located, and none is an internal error (a bug caught by a safety net)."""
    for d in diagnostics:
        if d.code.endswith("internal-error"):
            raise Broken(f"{where}: {d.code}: {d.message}")
        if not d.code or "." not in d.code:
            raise Broken(f"{where}: unnamed diagnostic {d!r}")


OP = struct.Struct(">BH")
"""The TLS harnesses' operation: kind (odd: a gap), length."""


def operations(data: bytes) -> tuple[int, list[tuple[int, int]], bytes]:
    """A TLS harness's input: (its flag byte, its operations, the stream they cut)."""
    flags = data[0]
    count = data[1]
    ops = [OP.unpack_from(data, 2 + 3 * i) for i in range(min(count, (len(data) - 2) // 3))]
    return flags, ops, data[2 + 3 * len(ops) :]


def feed(sink: Any, ops: list[tuple[int, int]], stream: bytes, bounded: Callable[[], bool]) -> None:
    """Chunks and gaps of `stream` to a stream sink as the operations say, then the rest in one chunk; `bounded` is
    checked after each."""
    pos = 0
    for kind, length in ops:
        piece = stream[pos : pos + length]
        if not piece:
            break
        if kind & 1:
            sink.gap(len(piece), 0)
        else:
            sink.data(piece, 0, 0)
        pos += len(piece)
        if not bounded():
            raise Broken("bytes held past the bounds")
    if pos < len(stream):
        sink.data(stream[pos:], 0, 0)


def main(one_input: Callable[[bytes], None]) -> None:
    """Run `one_input` under libFuzzer (atheris); arguments are libFuzzer's (corpus dirs, -max_total_time=...)."""
    if atheris is None:
        sys.exit("atheris is not installed (it has wheels for Python < 3.12): use `python -m fuzz.run`, which falls back to hypothesis")
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
