"""`kdissect browse`: explore a capture interactively in the terminal (kdissect/browse/)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kdissect.commands.options import CAPTURE, Common, UserError, open_source, takes


@takes("input", "secrets")
def browse(
    common: Common,
    capture: CAPTURE,
    display_filter: Annotated[
        Optional[str], typer.Option("--filter", "-Y", help="Start with this display filter (docs/filters.md); `/` changes it.")
    ] = None,
) -> None:
    """Browse a capture: flows, exchanges, every field of one with its bytes, filters as you type, charts."""
    from kdissect.filter import FilterError, compile_filter

    with open_source(capture):
        pass  # a missing or unreadable file is one line now, not an empty screen
    if display_filter:
        try:
            compile_filter([("-Y", display_filter)])
        except FilterError as exc:
            raise UserError(str(exc)) from None
    from kdissect.browse.app import BrowseApp

    BrowseApp(capture, common.options, display_filter or "").run()
