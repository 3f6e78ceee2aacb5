"""The patterns of `matches`, run by RE2 (google-re2): time linear in the value whatever the pattern, so a value
a capture chose cannot hold a filter for ever (Python's backtracking `re` never ends `(a+)+$` on forty a's and a
'!', and Ctrl-C cannot stop it inside one search).

RE2's syntax is Python's without backreferences and lookaround; a pattern using them, or anything else RE2
refuses, is a FilterError that says so. A value is tested with a `re2.Set` of the one pattern: it answers
whether the pattern occurs without building a match object (benchmarks/bench_filter.py --regex).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import re2

from kdissect.filter.errors import FilterError

MAX_REPEAT = 1000
"""RE2's largest repetition count. It refuses larger ones, except those too large for its integers, which it
reads as plain text ("a{4294967296}"): both are said here the same way."""
_REPEAT = re.compile(r"\\.|\{(\d+)(?:,(\d*))?\}", re.S)
"""An escape (skipped) or a repetition count."""
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")


def compile_pattern(pattern: str, column: int) -> tuple[Callable[[str], bool], Callable[[bytes], bool]]:
    """Tests of whether `pattern` occurs in a text and in bytes (the pattern as UTF-8, each byte one character);
    `column` is where the pattern starts in the filter, for the FilterError of a pattern RE2 refuses."""
    for found in _REPEAT.finditer(pattern):
        counts = [n.lstrip("0") for n in found.groups() if n]
        if found.group(1) is not None and any(len(n) > 4 or int(n or 0) > MAX_REPEAT for n in counts):
            raise FilterError(f"a repetition count goes up to {MAX_REPEAT} (write \\{{ for a brace)", column + found.start())
    encoded = pattern.encode("utf-8")
    text, binary = _options(re2.Options.Encoding.UTF8), _options(re2.Options.Encoding.LATIN1)
    try:
        re2.compile(pattern, text)  # for RE2's word on a pattern it refuses: a Set only says that it does
        re2.compile(encoded, binary)
        on_text, on_bytes = re2.Set.SearchSet(text), re2.Set.SearchSet(binary)
        on_text.Add(pattern)
        on_bytes.Add(encoded)
        on_text.Compile()
        on_bytes.Compile()
    except re2.error as exc:
        raise _refused(pattern, column, exc) from None
    return (lambda value: on_text.Match(value) is not None), (lambda value: on_bytes.Match(value) is not None)


def _options(encoding: object) -> re2.Options:
    options = re2.Options()
    options.encoding = encoding
    options.never_capture = True  # only whether it occurs: no groups to track
    options.log_errors = False  # RE2 would write its own line on standard error
    return options


def _refused(pattern: str, column: int, exc: re2.error) -> FilterError:
    """What RE2 said of a pattern, told in the filter's words, at the part it names."""
    said = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    reason, _, part = said.partition(": ")
    where = pattern.find(part) if part else -1
    if part.startswith(_LOOKAROUND):
        message = f"RE2 has no lookaround ({', '.join(_LOOKAROUND)}): match what you want, or use two tests joined by 'and not'"
    elif re.fullmatch(r"\\[1-9]", part) or (part == "(?P" and "(?P=" in pattern):
        where = pattern.find("(?P=") if part == "(?P" else where
        message = "RE2 has no backreferences (\\1, (?P=name)): match the repeated text itself"
    else:
        message = f"bad regular expression: {reason}{f' ({part})' if part else ''}"
    return FilterError(message, column + max(where, 0))
