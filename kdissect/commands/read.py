"""`kdissect read`: every exchange as it completes, then the capture's totals, flows, errors and diagnostics."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Optional

import typer

from kdissect.commands.options import READS, Common, UserError, takes
from kdissect.commands.reading import Reading, damaged

if TYPE_CHECKING:
    from kdissect.doctor.engine import Doctor


@takes(*READS, "write", "fields", "decoding", "detail", "secrets", "metrics")
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
    metrics: Annotated[
        Optional[Path],
        typer.Option(
            "--metrics",
            metavar="OUT.prom",
            help="Also write the metrics `live --metrics` serves, as OpenMetrics text with a snapshot every "
            "--metrics-interval of capture time, each with its timestamp (docs/metrics.md).",
            rich_help_panel="Metrics",
        ),
    ] = None,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Neither answer from the capture's index nor keep one: read the file whole ($KDISSECT_CACHE; docs/index.md).",
            rich_help_panel="Limits",
        ),
    ] = False,
    metrics_interval: Annotated[
        float,
        typer.Option(
            "--metrics-interval", metavar="SECONDS", help="Capture time between two snapshots of --metrics.", rich_help_panel="Metrics"
        ),
    ] = 15.0,
) -> None:
    """Read a capture: every Kafka exchange as it completes, then flows, errors and diagnostics."""
    from kdissect.views.output import Closing
    from kdissect.views.sink import EventSink, Settled

    text = common.format == "text"
    if common.detail and not text:
        raise UserError("-V (the detail tree) goes with the text output, not with --json or -T fields")
    from kdissect.commands.jobs import processes

    jobs = processes(jobs)
    if (text and common.output is None and sys.stdout.isatty()) or common.write is not None:
        jobs = 1  # rows drawn on a terminal share it with the progress bar, and -w cuts the exchanges one process holds
    if metrics is not None:
        if metrics_interval <= 0:
            raise UserError("--metrics-interval takes seconds above 0")
        jobs = 1  # the tap measures decoded bodies, which several processes decode apart
    settings = {"detail": common.detail, "all_events": all_events}
    if not no_cache and not text and not all_events and metrics is None and common.write is None:
        from kdissect.commands import indexed

        answered = indexed.answer(common, common.options, indexed.by_filter(common))
        if answered is not None:
            indexed.write(common, answered[0], "read", None, **settings)
            damaged(answered[1])
            return

    def worker_sink(stream: IO[str]) -> EventSink:
        """A worker's: its rows written as each is made, without the header (the first process writes it)."""
        return EventSink(common.wanted, common.make_output("read", stream, header=False, **settings), totals=text)

    with Reading(common, jobs=jobs, every_body=text, indexing=not no_cache) as run:
        sink = EventSink(common.wanted, run.writes("read", **settings), totals=text)  # --json and fields print no totals
        doctor = _doctor(common) if text else None
        tap = None
        if metrics is not None:
            from kdissect.commands.tapping import FileTap

            tap = FileTap(common.tap, common.wanted, metrics, metrics_interval, run.dissector.counters)
        for event in run.events(worker_sink):
            if doctor is not None:
                doctor.add(event.exchange if type(event) is Settled else event)
            if tap is not None:
                tap.add(event)
            if sink.add(event):
                run.took(event)
        if tap is not None:
            tap.close()
        if text:
            counts = run.dissector.counters, tuple(run.source.linktypes()), tuple(run.notes())
            run.output.end(Closing(sink.summary, *counts, report=doctor.report() if doctor is not None else None))
        else:
            run.output.end(Closing())
    run.finish()


def _doctor(common: Common) -> Doctor:
    """The doctor whose verdict ends the text view (`kdissect doctor` tells the rest)."""
    from kdissect.doctor.engine import Doctor

    wanted = common.wanted
    return Doctor(wanted=wanted, values=common.values)
