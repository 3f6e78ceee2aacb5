"""`kdissect read`: every exchange as it completes, then the capture's totals, flows, errors and diagnostics."""

from __future__ import annotations

from typing import Annotated

import typer

from kdissect.commands.options import READS, Common, takes
from kdissect.commands.reading import Reading


@takes(*READS, "decoding", "detail", "secrets")
def read(
    common: Common,
    all_events: Annotated[
        bool,
        typer.Option("--all-events", help="With --json, also write stream notices and connection summaries.", rich_help_panel="Output"),
    ] = False,
) -> None:
    """Read a capture: every Kafka exchange as it completes, then flows, errors and diagnostics."""
    from kdissect.views.sink import EventSink

    with Reading(common, on_console=not common.json) as run:
        if common.json:
            from kdissect.views.json_lines import JsonLinesWriter

            sink = EventSink(common.wanted, writer=JsonLinesWriter(run.stream), all_events=all_events)
        else:
            from kdissect.views.detail import DetailView
            from kdissect.views.terminal import ReadView

            view = ReadView(run.console, rows=not common.quiet, detail=DetailView(False) if common.detail else None)
            view.title(run.source.name, run.source.format, run.source.compression)
            sink = EventSink(common.wanted, view=view)
        for event in run.events():
            if sink.add(event):
                run.took()
        if not common.json:
            view.closing(sink.summary, run.dissector.counters, run.source.linktypes(), run.notes())
    run.finish()
