"""Display filters: `-Y 'api == Fetch and latency_ms > 100'` compiled once into closures over the core's values.

The language (docs/filters.md): lexer.py reads the text, parser.py makes the tree, fields.py holds every field
and how to read it, compile.py makes the closures, errors.py says what is wrong and where, shorthands.py turns
the fixed options (--api, --topic, ...) into expressions, predicate.py joins them into one `Filter`.
"""

from kdissect.filter.errors import FilterError
from kdissect.filter.fields import TIME, Resolved
from kdissect.filter.predicate import EVERYTHING, Filter, compile_fields, compile_filter
from kdissect.filter.shorthands import shorthands

__all__ = ["EVERYTHING", "TIME", "Filter", "FilterError", "Resolved", "compile_fields", "compile_filter", "shorthands"]
