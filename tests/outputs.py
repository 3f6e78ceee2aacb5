"""An `Output` for tests that drive a view on a console of their own (a recording one, a terminal's size)."""

from __future__ import annotations

import io
from typing import Any

from kdissect.events import Exchange
from kdissect.schema import BUILTIN
from kdissect.views.output import Output, Settings


class ViewOutput(Output):
    """Hands each exchange to `view` (a `ReadView`, a `LiveView`), as the text format hands it to its own."""

    def __init__(self, view: Any = None, command: str = "read") -> None:
        super().__init__(io.StringIO(), Settings(command, BUILTIN))
        self.view = view

    def exchange(self, exchange: Exchange) -> None:
        self.view.exchange(exchange)
