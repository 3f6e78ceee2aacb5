"""Filter text into tokens, each with the column it starts at, so every later error can point at it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from kdissect.filter.errors import FilterError

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
_NUMBER = re.compile(r"-?(?:0[xX](?P<hex>[0-9a-fA-F]+)|(?P<dec>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?P<unit>ms|us|s)?)")
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
            sign = -1 if word.startswith("-") else 1
            if number.group("hex"):
                value: float | int = sign * int(number.group("hex"), 16)
            else:
                digits = number.group("dec")
                value = sign * (float(digits) if any(ch in digits for ch in ".eE") else int(digits))
            out.append(Token("number", word, column, value, number.group("unit")))
        elif word.lower() in KEYWORDS:
            out.append(Token("op", KEYWORDS[word.lower()], column))
        else:
            out.append(Token("word", word, column))
    out.append(Token("end", "", n + 1))
    return out


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
            # any other backslash stays, so regular expressions read as written: "\d+\.\d"
        chars.append(c)
        i += 1
    raise FilterError("this string has no closing quote", start + 1)


def quote(value: str) -> str:
    """`value` as a string literal the lexer reads back exactly."""
    out = ['"']
    for c in value:
        if c in '\\"':
            out.append("\\" + c)
        elif c < " " or c == "\x7f":
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)
