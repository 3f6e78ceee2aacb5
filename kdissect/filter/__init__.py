"""Display filters: `-Y 'api == Fetch and latency_ms > 100'` compiled once into closures over the core's values.

The language (docs/filters.md): lexer.py reads the text, parser.py makes the tree, fields.py holds every field
and how to read it, compile.py makes the closures, errors.py says what is wrong and where, shorthands.py turns
the fixed options (--api, --topic, ...) into expressions, predicate.py joins them into one `Filter` (verdict.py).

The names below load their module when first asked for: a run without a filter never loads the language.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "EVERYTHING": "verdict",
    "Filter": "verdict",
    "FilterError": "errors",
    "TIME": "fields",
    "Resolved": "fields",
    "compile_fields": "predicate",
    "compile_filter": "predicate",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
