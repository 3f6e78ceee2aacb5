"""A capture's tables kept in kdissect's cache, so that the second `kdissect sql CAPTURE` does not read it again.

An entry is keyed by the capture's identity (its absolute path, size, modification time and a digest of its
first and last 64 KiB: `identity`, which the exchanges' index shares) and by what shapes the tables (the ports,
the tables' schemas): a changed file, or a new kdissect, never answers from stale tables. Entries live under
`tables/` of the cache folder (`$KDISSECT_CACHE`, empty: keep nothing; schema/code_cache.py), are made whole in a
temporary folder and renamed into place, and are removed oldest use first once they hold more than `budget()` bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kdissect.schema.code_cache import base

ENDS = 64 << 10
"""Bytes read at each end of a capture for its digest: a capture appended to, or rewritten, changes it."""
BUDGET_VARIABLE = "KDISSECT_CACHE_MB"
DEFAULT_BUDGET_MB = 2048


def budget() -> int:
    """The bytes the cached tables may take: `$KDISSECT_CACHE_MB` MiB, else 2 GiB."""
    try:
        return max(0, int(os.environ.get(BUDGET_VARIABLE, DEFAULT_BUDGET_MB))) << 20
    except ValueError:
        return DEFAULT_BUDGET_MB << 20


def identity(path: str) -> str:
    """The capture's identity: its absolute path, size, modification time and a digest of its first and last bytes."""
    digest = hashlib.sha256()
    stat = os.stat(path)
    digest.update(f"{os.path.abspath(path)}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    with open(path, "rb") as f:
        digest.update(f.read(ENDS))
        if stat.st_size > ENDS:
            f.seek(max(ENDS, stat.st_size - ENDS))
            digest.update(f.read(ENDS))
    return digest.hexdigest()


def key(path: str, config: dict[str, Any]) -> str:
    """The entry's name: the capture's identity and what shapes its tables."""
    from kdissect.pipeline import tables  # pyarrow: not for the index, which shares `identity`, `budget` and `evict`

    digest = hashlib.sha256(f"{identity(path)}\0{sorted(config.get('ports') or ())}".encode())
    digest.update(str(sorted((name, str(schema)) for name, schema in tables.TABLES.items())).encode())
    return digest.hexdigest()[:32]


@contextmanager
def tables_of(
    path: str, config: dict[str, Any], cached: bool, progress: Callable[[str], None], splits: Callable[[str], int] = lambda path: 1
) -> Iterator[str]:
    """The folder of `path`'s tables: from the cache when an earlier run made them, else made now (kept in the
    cache when `cached` and the user keeps one, else in a temporary folder removed afterwards) by `splits(path)`
    processes (local.LocalJob)."""
    folder = base() if cached else None
    if folder is None:
        with tempfile.TemporaryDirectory(prefix="kdissect-tables-") as scratch:
            _build(path, os.path.join(scratch, "t"), config, progress, splits)
            yield os.path.join(scratch, "t")
        return
    root = os.path.join(folder, "tables")
    entry = os.path.join(root, key(path, config))
    if os.path.isdir(entry):
        os.utime(entry)  # its last use: the budget removes the oldest first
        progress(f"tables of {path} from the cache")
    else:
        os.makedirs(root, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=".tmp-", dir=root)
        try:
            _build(path, os.path.join(scratch, "t"), config, progress, splits)
            try:
                os.rename(os.path.join(scratch, "t"), entry)
            except OSError:  # another run made it meanwhile: theirs is as good
                pass
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        evict(root, budget(), keep=entry)
    yield entry


def _build(path: str, out: str, config: dict[str, Any], progress: Callable[[str], None], splits: Callable[[str], int]) -> None:
    from kdissect.pipeline.local import LocalJob, captures_of

    paths, _ = captures_of([path])
    LocalJob(paths, out, config, progress, splits).run()


def evict(root: str, allowed: int, keep: str) -> None:
    """Entries (folders of tables, or index files) removed, oldest use first, until they hold at most `allowed`
    bytes (`keep` is never removed)."""
    entries = []
    for name in os.listdir(root):
        entry = os.path.join(root, name)
        if not name.startswith(".tmp-"):
            entries.append((os.stat(entry).st_mtime, _size(entry), entry))
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries):
        if total <= allowed:
            break
        if entry != keep:
            if os.path.isdir(entry):
                shutil.rmtree(entry, ignore_errors=True)
            else:
                os.remove(entry)
            total -= size


def _size(entry: str) -> int:
    if not os.path.isdir(entry):
        return os.path.getsize(entry)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(entry) for f in files)
