"""`kdissect read`: every exchange as it completes, then the capture's totals, flows, errors and diagnostics."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from kdissect.commands.options import READS, Common, UserError, takes
from kdissect.commands.reading import Reading


@takes(*READS, "write", "fields", "decoding", "detail", "secrets")
def read(
    common: Common,
    all_events: Annotated[
        bool,
        typer.Option("--all-events", help="With --json, also write stream notices and connection summaries.", rich_help_panel="Output"),
    ] = False,
    jobs: Annotated[
        Optional[int],
        typer.Option(
            "--jobs",
            metavar="N",
            help="Processes to read a capture file of 8 MB or more with, each decoding and writing its share of the "
            "connections (default, and 0: the cores available; the output is the same). Standard input, and the rows on a "
            "terminal, take one.",
            rich_help_panel="Limits",
        ),
    ] = None,
) -> None:
    """Read a capture: every Kafka exchange as it completes, then flows, errors and diagnostics."""
    from kdissect.views.output import Closing
    from kdissect.views.sink import EventSink

    text = common.format == "text"
    if common.detail and not text:
        raise UserError("-V (the detail tree) goes with the text output, not with --json or -T fields")
    if jobs is None or jobs == 0:
        from kdissect.commands.jobs import available

        jobs = available()
    elif jobs < 0:
        raise UserError(f"--jobs {jobs}: give a number of processes, or 0 for the cores available")
    if (text and common.output is None and sys.stdout.isatty()) or common.write is not None:
        jobs = 1  # rows drawn on a terminal share it with the progress bar, and -w cuts the exchanges one process holds
    settings = {"detail": common.detail, "all_events": all_events}

    def worker_sink(stream):
        """A worker's: its rows written as each is made, without the header (the first process writes it)."""
        return EventSink(common.wanted, common.make_output("read", stream, header=False, **settings), totals=text)

    with Reading(common, jobs=jobs) as run:
        sink = EventSink(common.wanted, run.writes("read", **settings), totals=text)  # --json and fields print no totals
        for event in run.events(worker_sink):
            if sink.add(event):
                run.took(event)
        run.output.end(
            Closing(sink.summary, run.dissector.counters, tuple(run.source.linktypes()), tuple(run.notes())) if text else Closing()
        )
    run.finish()
