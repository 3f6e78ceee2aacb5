"""The closing table of `kdissect spark` and `kdissect tables`: files, packets, connections, exchanges, records,
diagnostics, findings, time."""

from __future__ import annotations

import sys
from typing import Any

from rich.table import Table
from rich.text import Text

from kdissect.views.console import make_console


def print_summary(totals: Any, out: str, seconds: float, command: str = "kdissect spark") -> None:
    """One table of what the job read and wrote; on standard output, like every command's result."""
    console = make_console(sys.stdout)
    table = Table(title=Text(f"{command} → {out}"), title_justify="left")
    table.add_column("files", justify="right")
    table.add_column("packets", justify="right")
    table.add_column("connections", justify="right")
    table.add_column("exchanges", justify="right")
    table.add_column("records", justify="right")
    table.add_column("diagnostics", justify="right")
    table.add_column("findings", justify="right")
    table.add_column("time", justify="right")
    table.add_row(
        f"{totals.files:,}",
        f"{totals.packets:,}",
        f"{totals.connections:,}",
        f"{totals.exchanges:,}",
        f"{totals.records:,}",
        f"{totals.diagnostics:,}",
        f"{totals.findings:,}",
        f"{seconds:.1f} s",
    )
    console.print(table)
    if totals.skipped:
        console.print(f"{len(totals.skipped)} file(s) in the named directories were not captures and were skipped.")
