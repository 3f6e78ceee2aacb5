"""The decoders' compiled code kept on disk between runs, as Python keeps a module's byte code.

Compiling the generated source of the decoders a capture needs took about an eighth of a small run (27 ms of
0.21 s for a 42-exchange capture). Each function's code object is stored under a digest of its source and file
name, so a changed generator or table can never load stale code, and a new interpreter version gets a folder of
its own (marshal's format is the interpreter's). A cache that cannot be read or written is only slower: every
failure falls back to compiling. Measured: without the cache (`KDISSECT_CACHE=`), `kdissect read
captures/client-confluent.pcap` takes 1.07x the CPU time (whole processes, 12 alternated pairs, medians).

The folder: `$KDISSECT_CACHE` (empty: keep nothing), else `$XDG_CACHE_HOME/kdissect`, else `~/.cache/kdissect`.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
from types import CodeType

VARIABLE = "KDISSECT_CACHE"


def base() -> str | None:
    """kdissect's cache folder, or None when the user keeps nothing (the captures' tables keep theirs there too)."""
    chosen = os.environ.get(VARIABLE)
    if chosen is None:
        home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        chosen = os.path.join(home, "kdissect")
    return chosen or None


def folder() -> str | None:
    """Where compiled decoders are kept for this interpreter, or None when the user keeps nothing."""
    chosen = base()
    if chosen is None:
        return None
    return os.path.join(chosen, "decoders", sys.implementation.cache_tag or "python")


def compiled(source: str, filename: str) -> CodeType:
    """`compile(source, filename, "exec")`, from the cache when an earlier run compiled the same."""
    where = folder()
    if where is None:
        return compile(source, filename, "exec")
    path = os.path.join(where, hashlib.sha1(f"{filename}\0{source}".encode()).hexdigest())
    try:
        with open(path, "rb") as f:
            code = marshal.loads(f.read())
        if isinstance(code, CodeType):
            return code
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = compile(source, filename, "exec")
    _keep(where, path, marshal.dumps(code))
    return code


def _keep(where: str, path: str, data: bytes) -> None:
    """Write atomically (a whole file or none: processes of one run, or Spark's workers, may race), or not at all."""
    try:
        os.makedirs(where, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=where, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass
