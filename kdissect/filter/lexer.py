"""Filter text into tokens, each with the column it starts at, so every later error can point at it."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from kdissect.filter.errors import FilterError
from kdissect.printable import printable

Kind = Literal["word", "number", "string", "op", "(", ")", "{", "}", ",", "end"]

KEYWORDS = {
    "and": "and",
    "or": "or",
    "not": "not",
    "in": "in",
    "contains": "contains",
    "matches": "matches",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
}
"""Words that are operators (any case), and what they stand for."""
SYMBOLS = {"&&": "and", "||": "or", "!": "not", "~": "matches", "==": "==", "!=": "!=", "<=": "<=", ">=": ">=", "<": "<", ">": ">"}
UNITS = {"ms": 1.0, "s": 1000.0, "us": 0.001}
"""Duration suffixes, as milliseconds."""

_ATOM = re.compile(r"-?[A-Za-z0-9_:][A-Za-z0-9_.:\-/]*")
"""Field paths, bare words (API and error names, statuses, addresses, times) and numbers."""
_NUMBER = re.compile(
    r"-?(?:0[xX](?P<hex>[0-9a-fA-F]+)|(?P<dec>(?P<whole>\d+)(?:\.(?P<fraction>\d+))?(?:[eE][+-]?(?P<exponent>\d+))?)(?P<unit>ms|us|s)?)"
)
MAX_DIGITS = {"hex": 16, "whole": 20, "fraction": 20, "exponent": 3}
"""The most digits each part of a number may have: Kafka's widest whole numbers are 64 bits (20 decimal digits,
16 hex), so a longer one can only be a mistake, and converting it would cost time quadratic in its length."""
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str
    """As written (operators: the canonical spelling)."""
    column: int
    """1-based."""
    value: object = None
    """A number's value, a string's characters."""
    unit: str | None = None
    """A number's duration suffix: ms, s or us."""


def tokens(text: str) -> list[Token]:
    """Every token of `text`, ending with an "end" token; a FilterError where something cannot be a token."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        column = i + 1
        if c in "(){},":
            out.append(Token(c, c, column))  # type: ignore[arg-type]  # c is one of the punctuation kinds just tested
            i += 1
            continue
        if c in "\"'":
            characters, i = _string(text, i)
            out.append(Token("string", text[column - 1 : i], column, characters))
            continue
        two = text[i : i + 2]
        if two in SYMBOLS or c in SYMBOLS:
            symbol = two if two in SYMBOLS else c
            out.append(Token("op", SYMBOLS[symbol], column))
            i += len(symbol)
            continue
        if c == "=":
            raise FilterError("a single '=' is not an operator: compare with '=='", column)
        match = _ATOM.match(text, i)
        if match is None:
            raise FilterError(f"unexpected {c!r}", column)
        word = match.group()
        number = _NUMBER.fullmatch(word)
        if number is None and c == "-":
            raise FilterError("unexpected '-' (only numbers start with one)", column)
        i = match.end()
        if number is not None:
            out.append(Token("number", word, column, _number_value(number, column), number.group("unit")))
        elif word.lower() in KEYWORDS:
            out.append(Token("op", KEYWORDS[word.lower()], column))
        else:
            out.append(Token("word", word, column))
    out.append(Token("end", "", n + 1))
    return out


def _number_value(number: re.Match[str], column: int) -> float | int:
    """A number's value, within the grammar's digits (`MAX_DIGITS`) and finite."""
    for part, most in MAX_DIGITS.items():
        digits = number.group(part)
        if digits is not None and len(digits) > most:
            raise FilterError(
                f"a number has at most {MAX_DIGITS['whole']} digits before its point and after it, {MAX_DIGITS['exponent']} in its "
                f"exponent and {MAX_DIGITS['hex']} in hex (Kafka's numbers are 64 bits)",
                column,
            )
    sign = -1 if number.group().startswith("-") else 1
    if number.group("hex"):
        return sign * int(number.group("hex"), 16)
    digits = number.group("dec")
    if number.group("fraction") is None and number.group("exponent") is None:
        return sign * int(digits)
    value = sign * float(digits)
    if not math.isfinite(value):
        raise FilterError(f"{number.group()} is too large for a number (the largest is about 1.8e308)", column)
    return value


def _string(text: str, start: int) -> tuple[str, int]:
    """The string literal opening at `start`: its characters, and where the text goes on after it."""
    quote = text[start]
    chars: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            return "".join(chars), i + 1
        if c == "\\":
            escape = text[i + 1 : i + 2]
            if escape in _ESCAPES:
                chars.append(_ESCAPES[escape])
                i += 2
                continue
            if escape == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", text[i + 2 : i + 4]):
                chars.append(chr(int(text[i + 2 : i + 4], 16)))
                i += 4
                continue
            if escape == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                chars.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            # any other backslash stays, so regular expressions read as written: "\d+\.\d"
        chars.append(c)
        i += 1
    raise FilterError("this string has no closing quote", start + 1)


def quote(value: str) -> str:
    """`value` as a string literal the lexer reads back exactly, with nothing in it a terminal would act on: a
    filter made of captured text (the doctor's evidence, the browser's `g`) can be printed as it is."""
    return '"' + printable(value.replace("\\", "\\\\").replace('"', '\\"')) + '"'
