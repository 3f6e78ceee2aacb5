"""What is wrong with a filter, said on one line: where (a column and a caret in the text) and what to try."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from kdissect.printable import printable


class FilterError(ValueError):
    """A filter or field expression that cannot be compiled; `str()` is the one line the user sees."""

    def __init__(self, message: str, column: int | None = None, text: str | None = None, source: str = "-Y") -> None:
        self.message = message
        self.column = column
        """1-based, in `text`; None when the problem is the expression as a whole."""
        self.text = text
        self.source = source
        """Which option held the text: "-Y", "-Y #2", "-e"."""
        super().__init__(message)

    def located(self, text: str, source: str) -> FilterError:
        """The same error, told as coming from `source`'s `text`."""
        return FilterError(self.message, self.column, text, source)

    def __str__(self) -> str:
        """One line whatever the expression holds: a line break or a control character in it is shown escaped."""
        if self.text is None:
            return printable(f"{self.source}: {self.message}")
        if self.column is None:
            return printable(f"{self.source} {self.text!r}: {self.message}")
        at = self.column - 1
        return printable(f"{self.source} at column {self.column}: {self.message}: {self.text[:at]}^{self.text[at:]}")


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """ " (did you mean 'x'?)" for the nearest candidates, or nothing when none is near."""
    names = list(dict.fromkeys(candidates))
    lowered = {name.lower(): name for name in names}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(lowered[c]) for c in close) + "?)"
