"""Text from the wire on the browser's screen: a client id, a topic, a group, an error message, a field's value.

Textual reads a `str` handed to a widget as markup, so `a[/x]b` ends the app and `[link=…]` makes a hyperlink; and
it passes control characters on to the terminal, so `ESC]0;…` retitles the window. Every captured string therefore
reaches a widget as a `rich.text.Text`, with `kdissect.printable`'s escapes (`\\x1b`, `\\u2028`) in place of what a
terminal would act on.
"""

from __future__ import annotations

import re

from rich.highlighter import Highlighter
from rich.text import Span, Text

from kdissect.filter.lexer import quote
from kdissect.printable import printable

_C1 = re.compile("[\x80-\x9f]")


def wire(value: str, style: str = "") -> Text:
    """A captured string as text on screen."""
    return Text(printable(value), style=style)


def visible(text: Text) -> Text:
    """`text` (made elsewhere, `show`'s tree say, with captured words in it) with `printable`'s escapes and the
    same styles on the same characters."""
    plain = text.plain
    if plain.isprintable():
        return text
    starts = [0]
    for char in plain:
        starts.append(starts[-1] + len(printable(char)))
    out = text.blank_copy(printable(plain))
    out.spans = [Span(starts[span.start], starts[span.end], span.style) for span in text.spans]
    return out


def literal(value: str) -> str:
    """`value` as a string literal of the filter language (`filter.lexer.quote`), the C1 controls written as
    `\\xHH` too (the lexer reads them back): a filter made of a captured name puts no raw control in the filter bar."""
    return _C1.sub(lambda match: f"\\x{ord(match.group()):02x}", quote(value))


class Escaped(Highlighter):
    """The filter bar's text: a character `printable` would escape is drawn as a reversed "\ufffd" instead. One
    character for one, because the field's cursor counts the value's characters; the value itself is unchanged (a
    line separator in a group's name still matches it)."""

    def highlight(self, text: Text) -> None:
        plain = text.plain
        if plain.isprintable():
            return
        marks = [at for at, char in enumerate(plain) if printable(char) != char]
        chars = list(plain)
        for at in marks:
            chars[at] = "\ufffd"
        text.plain = "".join(chars)
        for at in marks:
            text.stylize("reverse", at, at + 1)
