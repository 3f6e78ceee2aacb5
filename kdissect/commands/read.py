"""`kdissect read`: every exchange as it completes, then the capture's totals, flows, errors and diagnostics."""

from __future__ import annotations

from typing import Annotated

import typer

from kdissect.commands.options import CAPTURE, Common, open_source, packets, takes


@takes("input", "decoding", "filters", "output", "secrets")
def read(
    common: Common,
    capture: CAPTURE,
    all_events: Annotated[
        bool,
        typer.Option("--all-events", help="With --json, also write stream notices and connection summaries.", rich_help_panel="Output"),
    ] = False,
) -> None:
    """Read a capture: every Kafka exchange as it completes, then flows, errors and diagnostics."""
    from kdissect.dissector import make_dissector
    from kdissect.views.sink import EventSink

    with open_source(capture) as source, common.open_output() as stream:
        dissector = make_dissector(common.options)
        if common.json:
            from kdissect.views.json_lines import JsonLinesWriter

            sink = EventSink(common.wanted, writer=JsonLinesWriter(stream), all_events=all_events)
        else:
            from kdissect.views.console import make_console
            from kdissect.views.terminal import ReadView

            view = ReadView(make_console(stream))
            view.title(str(capture), source.format, source.compression)
            sink = EventSink(common.wanted, view=view)
        for event in dissector.run(packets(source, common.quiet, dissector)):
            sink.add(event)
        if not common.json:
            view.closing(sink.summary, dissector.counters, source.linktypes(), source.diagnostics())
