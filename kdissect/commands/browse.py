"""`kdissect browse`: explore a capture interactively in the terminal (kdissect/browse/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kdissect.commands.options import Common, ExitStatus, UserError, takes
from kdissect.commands.reading import open_source


@takes(
    "capture",
    "input",
    "values",
    "filters",
    "secrets",
    helps={"filter": "Start with this display filter (docs/filters.md); `/` changes it."},
)
def browse(
    common: Common,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache", help="Neither open from what an earlier browse kept of the capture nor keep it: index it anew (docs/index.md)."
        ),
    ] = False,
) -> None:
    """Browse a capture: flows, exchanges, every field of one with its bytes, filters as you type, charts."""
    capture = common.capture
    assert capture is not None  # it takes "capture": make_capture named one or refused
    if capture == "-":
        raise UserError("browse reads its capture again to open an exchange: give a file, not standard input")
    if len(common.captures) > 1:
        raise UserError(
            "browse reads one capture: merge them first (mergecap -w all.pcapng ...), or read them as one with read, stats or doctor"
        )
    with open_source(common.captures):
        pass  # a missing or unreadable file is one line now, not an empty screen
    from kdissect.browse.app import BrowseApp  # Textual: 0.49 s of imports no other command pays
    from kdissect.commands.value_sources import met_registry
    from kdissect.index.browsed import kept

    keeping = None if no_cache else kept(Path(capture), common.options, lambda: met_registry(common.values, common.options.side_streams))
    app = BrowseApp(Path(capture), common.options, common.wanted.text, values=common.values, keeping=keeping)
    app.run()
    if app.return_code:  # the browser failed (Textual printed why)
        raise ExitStatus(app.return_code)
