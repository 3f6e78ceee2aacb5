"""Which API an orphan response answers, told from its bytes alone.

A response names only its correlation id; the API and version come from the request, which an orphan's
capture does not hold. Its body is tried against every response schema kdissect knows: a guess is made only when
the schemas that read the bytes whole, to the last byte and without a complaint, all belong to one API (small
bodies of zeros read as many; then none is chosen). Of that API's versions the highest that reads the bytes is
taken: versions that read the same bytes alike differ only in fields the bytes cannot tell.
"""

from __future__ import annotations

from typing import Any

from kdissect.decode.body import CompiledBodies
from kdissect.schema import Catalog
from kdissect.schema.tree import Partial
from kdissect.wire import WireError, read_uvarint

MAX_GUESSED = 1 << 20
"""Larger orphans keep their bytes raw: trying every schema on them would cost too much."""


def _skip_records(buf: Any, start: int, end: int) -> None:
    """Records are not read while guessing: the schema's length prefix already framed them."""
    return None


def _trial(catalog: Catalog) -> CompiledBodies:
    """Decoders for trying a catalogue's schemas; made once per catalogue and shared by every dissector using it (they
    hold no state of a capture)."""
    return catalog.derived(_trial, lambda c: CompiledBodies(c, _skip_records))


def after_tags(data: bytes, pos: int) -> int | None:
    """The position after a tagged-field section at `pos` (a flexible response header's); None if it is not one."""
    try:
        count, pos = read_uvarint(data, pos)
        for _ in range(count):
            _, pos = read_uvarint(data, pos)
            size, pos = read_uvarint(data, pos)
            pos += size
    except (IndexError, WireError):
        return None
    return pos if pos <= len(data) else None


def guess_response(data: bytes, catalog: Catalog) -> tuple[int, int, int, list[int]] | None:
    """(API key, version, where the body starts, every version that read it) for a response frame whose request
    is unknown, or None when the bytes do not tell one API."""
    if len(data) > MAX_GUESSED or len(data) < 4:
        return None
    flexible_start = after_tags(data, 4)
    fits: dict[int, list[tuple[int, int]]] = {}
    trial = _trial(catalog)
    for api_key, api in catalog.apis.items():
        for version in api.versions:
            start = 4 if catalog.response_header_version(api_key, version) == 0 else flexible_start
            if start is None or start > len(data):
                continue
            target = trial.target(api_key, version, "response")
            assert target is not None
            try:
                _, end = target.decode(data, start)
            except (Partial, IndexError, ValueError, OverflowError):
                continue
            if end == len(data):
                fits.setdefault(api_key, []).append((version, start))
    if len(fits) != 1:
        return None
    [(api_key, versions)] = fits.items()
    version, start = max(versions)
    return api_key, version, start, sorted(v for v, _ in versions)
