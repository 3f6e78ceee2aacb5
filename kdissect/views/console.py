"""The rich console every view prints through."""

from __future__ import annotations

import os
import stat
import sys
from typing import IO

from rich.console import Console


class PipeConsole(Console):
    """A console that lets a closed pipe (`| head`) end the program quietly with status 0, as tools do."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def make_console(stream: IO[str]) -> Console:
    """Colours on a terminal only. Elsewhere text is laid out for $COLUMNS when set; into a pipe (`doctor | less`),
    for the terminal the user sits at when standard error is one; else (a file, a CI job) for wide tables."""
    console = PipeConsole(file=stream, highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = PipeConsole(file=stream, highlight=False, soft_wrap=True, width=_width(stream))
    return console


def _width(stream: IO[str]) -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode):
            return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):  # not a file descriptor, or no terminal on standard error
        pass
    return WIDE


WIDE = 160
"""Columns of output to a file: tables whole, for grep and for a wide editor."""
