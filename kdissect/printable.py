"""Text from the wire made safe for a terminal: the one rule every view applies to captured strings.

A client id, a topic, a TLS server name, a record header key or a spec's field name was chosen by whoever wrote
the bytes. Printed as it is, `ESC]0;...` retitles the user's window, `ESC]52;...` writes the clipboard, a line
break forges an output row, and a bidirectional override reorders what the user reads. `printable` writes such
characters as visible escapes instead (`\\x1b`, `\\u2028`), so they are seen and never acted on. JSON output needs
none of this: its encoder escapes them already.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 controls and DEL, C1 controls, the Unicode line and paragraph separators, and the bidirectional marks,
embeddings, overrides and isolates (CVE-2021-42574, "Trojan Source")."""


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every character that a terminal would act on written as a visible escape.

    Fast for the common case: a string of printable characters is returned as it is. A backslash is left alone,
    so a captured `\\x1b` (four characters) and an escaped ESC look alike; the JSON output tells them apart."""
    if text.isprintable():
        return text
    return _UNSAFE.sub(_escaped, text)


def one_line(text: str, also: str = "") -> str:
    """`printable`, and also each character of `also` (a field separator, a quote) escaped: for outputs whose lines
    and columns a value must not break."""
    text = printable(text)
    for char in also:
        if char in text:
            text = text.replace(char, f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
    return text
