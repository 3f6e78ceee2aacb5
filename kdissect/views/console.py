"""The rich console every view prints through."""

from __future__ import annotations

import os
from typing import IO

from rich.console import Console


class PipeConsole(Console):
    """A console that lets a closed pipe (`| head`) end the program quietly with status 0, as tools do."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def make_console(stream: IO[str]) -> Console:
    """Colours on a terminal only; wide tables when writing to a file or a pipe ($COLUMNS, or 160)."""
    console = PipeConsole(file=stream, highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = PipeConsole(file=stream, highlight=False, soft_wrap=True, width=int(os.environ.get("COLUMNS", 160)))
    return console
