"""The checksums of the record formats: CRC-32C (v2 batches), CRC-32 (v0/v1 messages), XXH32 (lz4 frame headers).

XXH32 is written out here because only the one-byte lz4 header checksum needs it, over at most 15 bytes, and
the `xxhash` package would be a dependency for that alone.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import zlib
from typing import Any, Callable

__all__ = ["crc32", "crc32c", "xxh32"]

crc32 = zlib.crc32


def _crc32c() -> Callable[[Any], int]:
    """The crc32c package's C function, loaded without running the package's `__init__`, which asks the installed
    metadata for its own version (importlib.metadata: about 10 ms of every start); imported as usual wherever the
    package is laid out otherwise."""
    try:
        spec = importlib.util.find_spec("crc32c")
        folders = (spec.submodule_search_locations if spec is not None else None) or [""]
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folders[0], "_crc32c" + suffix)
            if folders[0] and os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                found = importlib.util.spec_from_loader(loader.name, loader)
                if found is not None:
                    module = importlib.util.module_from_spec(found)
                    loader.exec_module(module)
                    return module.crc32c
    except (ImportError, OSError, AttributeError):
        pass
    from crc32c import crc32c as function

    return function


crc32c = _crc32c()

_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return _rotl((acc + lane * _P2) & _M, 13) * _P1 & _M


def xxh32(data: bytes | memoryview, seed: int = 0) -> int:
    """XXH32 of `data`, as the lz4 frame format uses it."""
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M
        v2 = (seed + _P2) & _M
        v3 = seed & _M
        v4 = (seed - _P1) & _M
        while i + 16 <= n:
            v1 = _round(v1, int.from_bytes(data[i : i + 4], "little"))
            v2 = _round(v2, int.from_bytes(data[i + 4 : i + 8], "little"))
            v3 = _round(v3, int.from_bytes(data[i + 8 : i + 12], "little"))
            v4 = _round(v4, int.from_bytes(data[i + 12 : i + 16], "little"))
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        h = _rotl((h + int.from_bytes(data[i : i + 4], "little") * _P3) & _M, 17) * _P4 & _M
        i += 4
    while i < n:
        h = _rotl((h + data[i] * _P5) & _M, 11) * _P1 & _M
        i += 1
    h ^= h >> 15
    h = h * _P2 & _M
    h ^= h >> 13
    h = h * _P3 & _M
    h ^= h >> 16
    return h
