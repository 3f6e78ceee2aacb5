"""The compiled filter of one run: every -Y expression and fixed option, joined by `and`, made closures once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kdissect.filter.compile import compile_node, compile_value, conjunction
from kdissect.filter.errors import FilterError
from kdissect.filter.fields import ALIASES, Resolved
from kdissect.filter.parser import fields_of, parse, parse_value
from kdissect.filter.verdict import EVERYTHING, Filter
from kdissect.kafka.shared import Keep
from kdissect.schema import Catalog


def compile_filter(parts: Sequence[tuple[str, str]], catalog: Catalog, values: Any = None) -> Filter:
    """One filter from (where it came from, expression) pairs, such as ("-Y", "api == Fetch"), joined by `and`, its
    fields read in the catalogue's APIs, records' keys and values by `values` (a `values.reader.ValueReader`).

    A FilterError names the option and the column of the first mistake.
    """
    compiled = []
    used: set[str] = set()
    for source, text in parts:
        try:
            tree = parse(text)
            compiled.append(compile_node(tree, catalog, values))
        except FilterError as exc:
            raise exc.located(text, source) from None
        used |= {ALIASES.get(name, name) for name in fields_of(tree)}
    if not compiled:
        return EVERYTHING
    matches, early = conjunction(compiled)
    keep: Keep | None = None
    if early is not None:
        keep = lambda info, request, response: early(info, request, response) is not False
    text = " and ".join(f"({text})" for _, text in parts) if len(parts) > 1 else parts[0][1]
    return Filter(text, matches, keep, frozenset(used))


def compile_fields(texts: Sequence[str], catalog: Catalog, values: Any = None) -> list[Resolved]:
    """The fields -e names, each FIELD, count(FIELD) or len(FIELD); a FilterError at the first mistake."""
    out = []
    for text in texts:
        try:
            out.append(compile_value(parse_value(text), catalog, values))
        except FilterError as exc:
            raise exc.located(text, "-e") from None
    return out
