"""A parsed filter into closures, once: `matches(exchange)` for the whole expression, and `early`, its verdict
from headers alone.

Semantics (docs/filters.md): a field gives a list of values; a comparison holds when any value satisfies it,
except `!=`, which holds when there are values and none is equal (Wireshark's rule: `x != 1` and `not x == 1`
differ on an exchange without x). `all(...)` needs at least one value, every one satisfying.

`early` is three-valued (True, False, or None for "cannot tell yet"): tests on fields that need bodies are
None, and `and`, `or`, `not` follow Kleene's logic, so False means the whole expression is False whatever the
bodies hold. That is what lets the core skip decoding the bodies of an exchange nobody will see.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from kdissect.events import ConnectionInfo, Exchange, Message
from kdissect.filter.errors import FilterError, did_you_mean
from kdissect.filter.fields import (
    API,
    BOOL,
    BYTES,
    ERROR,
    FLOAT,
    INT,
    NUMERIC,
    STATUS,
    STATUSES,
    STRUCT,
    TEXT,
    TIME,
    Resolved,
    resolve,
)
from kdissect.filter.lexer import MAX_DIGITS, UNITS, Token
from kdissect.filter.parser import And, Node, Not, Quantified, Test, Value
from kdissect.filter.regex import compile_pattern
from kdissect.schema import ERROR_CODES, Catalog, error_name
from kdissect.schema.tree import Struct

Full = Callable[[Exchange], bool]
Early = Callable[[ConnectionInfo, Message, "Message | None"], "bool | None"]
Over = Callable[[list], bool]
"""A test over the list of a field's values."""

ORDER = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
MAX_RANGE = 1 << 16
"""The most values one `a..b` range in a set may stand for."""
_KIND_WORDS = {
    INT: "a number",
    FLOAT: "a number of milliseconds",
    TIME: "a time",
    TEXT: "text",
    BYTES: "bytes",
    BOOL: "true or false",
    API: "an API",
    ERROR: "an error code",
    STATUS: "a status",
    STRUCT: "structs",
}
_ERROR_CODES = {name.lower(): code for code, name in ERROR_CODES.items()}
_HEX_BYTES = re.compile(r"[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2})+")
FIRST_TIME, LAST_TIME = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"
TIMES = (
    calendar.timegm(datetime.min.timetuple()) * 1_000_000_000,
    calendar.timegm(datetime.max.timetuple()) * 1_000_000_000 + 999_999_000,
)
"""The nanoseconds since the epoch a time literal may stand for: those a time shown as text can be."""


def compile_node(node: Node, catalog: Catalog, values: Any = None) -> tuple[Full, Early | None]:
    """The closures of a tree, its fields read in the catalogue's APIs and records' keys and values read by `values` (a
    `values.reader.ValueReader`): (matches, early); early is None when headers can never decide."""
    if isinstance(node, Test):
        return _test(node, None, catalog, values)
    if isinstance(node, Quantified):
        return _test(node.test, node.quantifier.text, catalog, values)
    if isinstance(node, Not):
        inner, early = compile_node(node.item, catalog, values)
        return (lambda ex: not inner(ex)), (None if early is None else _early_not(early))
    parts = [compile_node(item, catalog, values) for item in node.items]
    return conjunction(parts) if isinstance(node, And) else disjunction(parts)


def conjunction(parts: list[tuple[Full, Early | None]]) -> tuple[Full, Early | None]:
    """`and` over compiled parts."""
    if len(parts) == 1:
        return parts[0]
    return _all(tuple(full for full, _ in parts)), _early_junction(parts, False)


def disjunction(parts: list[tuple[Full, Early | None]]) -> tuple[Full, Early | None]:
    """`or` over compiled parts."""
    return _any(tuple(full for full, _ in parts)), _early_junction(parts, True)


def _all(fulls: tuple[Full, ...]) -> Full:
    if len(fulls) == 2:
        a, b = fulls
        return lambda ex: a(ex) and b(ex)
    return lambda ex: all(f(ex) for f in fulls)


def _any(fulls: tuple[Full, ...]) -> Full:
    if len(fulls) == 2:
        a, b = fulls
        return lambda ex: a(ex) or b(ex)
    return lambda ex: any(f(ex) for f in fulls)


def _early_not(early: Early) -> Early:
    def verdict(info: ConnectionInfo, request: Message, response: Message | None) -> bool | None:
        seen = early(info, request, response)
        return None if seen is None else not seen

    return verdict


def _early_junction(parts: list[tuple[Full, Early | None]], decisive: bool) -> Early | None:
    """Kleene's `and` (decisive False) or `or` (decisive True): one decisive part decides; otherwise any part
    that cannot tell leaves the whole unknown. None when no part can ever tell."""
    earlies = tuple(early for _, early in parts if early is not None)
    if not earlies:
        return None
    blind = len(earlies) < len(parts)  # some part can never be told from headers

    def verdict(info: ConnectionInfo, request: Message, response: Message | None) -> bool | None:
        unknown = blind
        for early in earlies:
            seen = early(info, request, response)
            if seen is decisive:
                return decisive
            unknown = unknown or seen is None
        return None if unknown else not decisive

    return verdict


# -- one test ------------------------------------------------------------------------------------------------------


def compile_value(value: Value, catalog: Catalog, values: Any = None) -> Resolved:
    """The field of a value expression, with count() or len() applied: what -e prints and tests compare."""
    field = resolve(value.field, catalog, values)
    function = value.function
    if function is None:
        return field
    inner, inner_early = field.values, field.early
    if function.text == "count":
        measure: Callable[[list], list] = lambda values: [len(values)]
    else:
        if not field.kinds & {TEXT, BYTES, STRUCT}:
            raise FilterError(f"len() measures text and bytes; {field.name} is {_kinds(field)}", value.field.column)
        measure = lambda values: [len(v) for v in values if type(v) is str or type(v) is bytes]
    early = None
    if inner_early is not None:
        early = lambda info, request, response: None if (seen := inner_early(info, request, response)) is None else measure(seen)
    return Resolved(f"{function.text}({field.name})", frozenset({INT}), lambda ex: measure(inner(ex)), early)


def _test(test: Test, quantifier: str | None, catalog: Catalog, values: Any) -> tuple[Full, Early | None]:
    field = compile_value(test.value, catalog, values)
    over = _over(field, test, quantifier)
    values, early = field.values, field.early
    full: Full = lambda ex: over(values(ex))
    if early is None:
        return full, None

    def early_verdict(info: ConnectionInfo, request: Message, response: Message | None) -> bool | None:
        seen = early(info, request, response)
        return None if seen is None else over(seen)

    return full, early_verdict


def _over(field: Resolved, test: Test, quantifier: str | None) -> Over:
    op = test.op
    if op is None:
        return _quantified(_present, quantifier or "any")
    name = op.text
    if name == "!=":
        equal = _equal(field, test.literals[0])
        if quantifier == "any":
            return lambda values: any(not equal(v) for v in values)
        return lambda values: bool(values) and not any(map(equal, values))
    if name == "==":
        predicate = _equal(field, test.literals[0])
    elif name == "in":
        predicate = _member(field, test.literals)
    elif name in ORDER:
        predicate = _ordered(field, op, test.literals[0])
    elif name == "contains":
        predicate = _contains(field, op, test.literals[0])
    else:
        predicate = _matches(field, op, test.literals[0])
    return _quantified(predicate, quantifier or "any")


def _quantified(predicate: Callable[[Any], bool], quantifier: str) -> Over:
    if quantifier == "all":
        return lambda values: bool(values) and all(map(predicate, values))
    return lambda values: any(map(predicate, values))


def _present(value: Any) -> bool:
    """A bare field: present, and not zero, empty or null."""
    if type(value) is Struct:
        return True
    batches = getattr(value, "batches", None)
    if batches is not None:
        return bool(batches)
    try:
        return bool(value)
    except TypeError:
        return True


def _equal(field: Resolved, token: Token) -> Callable[[Any], bool]:
    by_type = _typed(field, token)
    missing = object()
    if len(by_type) == 1:
        ((kind, literal),) = by_type.items()
        return lambda v: type(v) is kind and v == literal
    return lambda v: by_type.get(type(v), missing) == v


def _member(field: Resolved, tokens: tuple[Token, ...]) -> Callable[[Any], bool]:
    sets: dict[type, set] = {}
    for token in tokens:
        for kind, literal in _range(field, token) or _typed(field, token).items():
            sets.setdefault(kind, set()).add(literal)
    frozen = {kind: frozenset(values) for kind, values in sets.items()}
    empty: frozenset = frozenset()
    return lambda v: v in frozen.get(type(v), empty)


def _range(field: Resolved, token: Token) -> list[tuple[type, Any]]:
    """`a..b` in a set of numbers: each integer from a to b."""
    lo, dots, hi = token.text.partition("..")
    if token.kind != "word" or not dots or not field.kinds & {INT, API, ERROR}:
        return []
    try:
        if max(len(lo), len(hi)) > MAX_DIGITS["whole"] + 1:  # a sign and the digits a number may have
            raise ValueError
        first, last = int(lo), int(hi)
    except ValueError:
        raise FilterError(f"a range is two whole numbers, such as 3..7, not {token.text!r}", token.column) from None
    if last < first or last - first >= MAX_RANGE:
        raise FilterError(f"a range goes up, over at most {MAX_RANGE} values: {token.text!r}", token.column)
    return [(kind, n) for n in range(first, last + 1) for kind in (int, float)]


def _ordered(field: Resolved, op: Token, token: Token) -> Callable[[Any], bool]:
    if not field.kinds & NUMERIC:
        raise FilterError(f"{op.text} compares numbers and times; {field.name} is {_kinds(field)}", op.column)
    compare = ORDER[op.text]
    literal = _number_literal(field, token, field.kinds & NUMERIC)
    return lambda v: (type(v) is int or type(v) is float) and compare(v, literal)


def _contains(field: Resolved, op: Token, token: Token) -> Callable[[Any], bool]:
    text = _text_literal(field, op, token)
    tests = _textual(field, lambda value: text in value, lambda value: text.encode() in value)
    return lambda v: (test := tests.get(type(v))) is not None and test(v)


def _matches(field: Resolved, op: Token, token: Token) -> Callable[[Any], bool]:
    text = _text_literal(field, op, token)
    on_text, on_bytes = compile_pattern(text, token.column + (1 if token.kind == "string" else 0))
    tests = _textual(field, on_text, on_bytes)
    return lambda v: (test := tests.get(type(v))) is not None and test(v)


def _textual(field: Resolved, on_text: Callable[[str], bool], on_bytes: Callable[[bytes], bool]) -> dict[type, Callable[[Any], bool]]:
    """How `contains` and `matches` read each kind of value: text as it is, API keys and error codes by name."""
    tests: dict[type, Callable[[Any], bool]] = {}
    if field.kinds & {TEXT, STATUS}:
        tests[str] = on_text
    if BYTES in field.kinds:
        tests[bytes] = on_bytes
    if API in field.kinds:
        names = field.names or {}
        tests[int] = lambda key: on_text(names.get(key, f"api {key}"))
    elif ERROR in field.kinds:
        tests[int] = lambda code: on_text(error_name(code))
    return tests


def _text_literal(field: Resolved, op: Token, token: Token) -> str:
    if not field.kinds & {TEXT, STATUS, BYTES, API, ERROR}:
        raise FilterError(f"{op.text} reads text and bytes; {field.name} is {_kinds(field)}", op.column)
    if token.kind == "string":
        return token.value  # type: ignore[return-value]  # a string token's value is its characters
    return token.text


# -- literals, by the kind of the field they are compared with ------------------------------------------------------


def _kinds(field: Resolved) -> str:
    return " or ".join(sorted(_KIND_WORDS[k] for k in field.kinds))


def _typed(field: Resolved, token: Token) -> dict[type, Any]:
    """The literal as each kind of value the field can hold (type of value -> literal); a FilterError when it
    fits none of them."""
    out: dict[type, Any] = {}
    first: FilterError | None = None
    for kind in sorted(field.kinds):
        try:
            if kind in NUMERIC:
                literal = _number_literal(field, token, {kind})
                out[int] = out[float] = literal
            elif kind in (TEXT, STATUS):
                out[str] = _word_literal(field, token, kind)
            elif kind == BYTES:
                out[bytes] = _bytes_literal(token)
            elif kind == BOOL:
                out[bool] = _bool_literal(field, token)
            else:
                raise FilterError(f"{field.name} holds structs: compare a field under it, or count({field.name})", token.column)
        except FilterError as exc:
            first = first or exc
    if not out:
        assert first is not None
        raise first
    return out


def _mismatch(field: Resolved, token: Token) -> FilterError:
    return FilterError(f"type mismatch: {field.name} is {_kinds(field)}, and {token.text} is not", token.column)


def _number_literal(field: Resolved, token: Token, kinds: set[str] | frozenset[str]) -> float | int:
    if API in kinds or ERROR in kinds:
        named = _named_literal(field, token, API in kinds)
        if named is not None:
            return named
    if TIME in kinds:
        return _time_literal(field, token)
    if token.kind != "number":
        raise _mismatch(field, token)
    value: float | int = token.value  # type: ignore[assignment]  # a number token's value is its number
    if token.unit is not None:
        if not field.milliseconds:
            raise FilterError(f"{token.text}: a unit (ms, s, us) goes only with durations such as latency_ms, and time", token.column)
        value = value * UNITS[token.unit]
    return value


def _named_literal(field: Resolved, token: Token, api: bool) -> int | None:
    """An API or error by its name; None for a number, which is taken as it is."""
    if token.kind == "number":
        return None
    text = token.value if token.kind == "string" else token.text
    apis = field.names or {}
    table = {name.lower(): key for key, name in apis.items()} if api else _ERROR_CODES
    found = table.get(str(text).lower())
    if found is None:
        names = apis.values() if api else ERROR_CODES.values()
        what = "an API name" if api else "an error name"
        raise FilterError(f"{token.text} is not {what}{did_you_mean(str(text), names)}", token.column)
    return found


def _time_literal(field: Resolved, token: Token) -> int:
    """Nanoseconds since the epoch: from seconds (or ms, us) since the epoch, or an ISO-8601 UTC time; within the
    years 1 to 9999 UTC, as a time shown as text must be."""
    out_of_range = FilterError(f"{token.text}: a time lies between {FIRST_TIME} and {LAST_TIME} (UTC)", token.column)
    if token.kind == "number":
        scale = 1e9 / UNITS["s"] * UNITS[token.unit] if token.unit else 1e9
        nanoseconds = token.value * scale  # type: ignore[operator]  # as above, a number
        if not TIMES[0] <= nanoseconds <= TIMES[1]:
            raise out_of_range
        return round(nanoseconds)
    text = str(token.value if token.kind == "string" else token.text)
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise FilterError(
            f'{token.text} is not a time: give "2026-11-21T13:34:02Z" (UTC) or seconds since the epoch', token.column
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        moment = moment.astimezone(timezone.utc)
    except OverflowError:  # an offset that moves the year 1 or 9999 out of the calendar
        raise out_of_range from None
    return calendar.timegm(moment.timetuple()) * 1_000_000_000 + moment.microsecond * 1000


def _word_literal(field: Resolved, token: Token, kind: str) -> str:
    text = str(token.value) if token.kind == "string" else token.text
    if kind == STATUS and text not in STATUSES:
        raise FilterError(f"{token.text} is not a status{did_you_mean(text, STATUSES)}; the statuses: {', '.join(STATUSES)}", token.column)
    return text


def _bytes_literal(token: Token) -> bytes:
    """A string as UTF-8, or Wireshark's hex notation (de:ad:be:ef)."""
    if token.kind == "word" and _HEX_BYTES.fullmatch(token.text):
        return bytes.fromhex(token.text.replace(":", ""))
    return (str(token.value) if token.kind == "string" else token.text).encode("utf-8")


def _bool_literal(field: Resolved, token: Token) -> bool:
    text = token.text.lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise _mismatch(field, token)
