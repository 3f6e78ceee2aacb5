"""What `kdissect anonymize` tells when it is done: what it wrote and left out, and a glimpse of the mapping.

The names shown came from the capture: they are written as escaped text (`printable`), never as markup.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kdissect.printable import printable

SHOWN = 3
"""Pseudonyms shown per kind; the mapping file holds them all."""


def print_anonymized(
    console: Console, written: str, facts: Iterable[tuple[str, int]], mapping: dict[str, dict[str, str]], file: str
) -> None:
    """`facts`: (what, how many) lines, zeros left out; `mapping`: original to pseudonym, by kind."""
    console.print(Text(f"wrote {printable(written)}"), soft_wrap=True)
    for what, count in facts:
        if count:
            console.print(Text(f"  {count} {what}"), soft_wrap=True)
    table = Table(title="pseudonyms", title_justify="left", show_edge=False)
    for column in ("kind", "count", "first ones"):
        table.add_column(column)
    for kind, names in mapping.items():
        shown = ", ".join(f"{printable(original)} → {pseudonym}" for original, pseudonym in list(names.items())[:SHOWN])
        table.add_row(Text(kind), Text(str(len(names))), Text(shown + (", ..." if len(names) > SHOWN else "")))
    if mapping:
        console.print(table)
    console.print(Text(f"the whole mapping: {printable(file)} (for the owner of the capture: it undoes the anonymization)"), soft_wrap=True)
