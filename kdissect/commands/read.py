"""`kdissect read`: every exchange as it completes, then the capture's totals, flows, errors and diagnostics."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from kdissect.commands.options import READS, Common, UserError, takes
from kdissect.commands.reading import Reading

FORMATS = ("text", "json", "fields")


@takes(*READS, "decoding", "detail", "secrets")
def read(
    common: Common,
    all_events: Annotated[
        bool,
        typer.Option("--all-events", help="With --json, also write stream notices and connection summaries.", rich_help_panel="Output"),
    ] = False,
    output_format: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            "-T",
            metavar="text|json|fields",
            help="text (the default), json (as --json) or fields (one line per exchange with the -e fields, tab-separated).",
            rich_help_panel="Output",
        ),
    ] = None,
    field: Annotated[
        Optional[list[str]],
        typer.Option(
            "--field",
            "-e",
            metavar="FIELD",
            help="With -T fields, a field to write (repeatable): api, latency_ms, request.Acks, count(topic), ... (docs/filters.md).",
            rich_help_panel="Output",
        ),
    ] = None,
    field_option: Annotated[
        Optional[list[str]],
        typer.Option(
            "--field-option",
            "-E",
            metavar="NAME=VALUE",
            help="With -T fields: separator=/t|/s|C (default tab), aggregator=C (between values of one field, default ','), "
            "header=y|n, quote=n|d|s (repeatable).",
            rich_help_panel="Output",
        ),
    ] = None,
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
    from kdissect.views.sink import EventSink

    fields_view = _fields_view(
        output_format or ("fields" if field else "json" if common.json else "text"), common.json, field, field_option
    )
    json_out = common.json or output_format == "json"
    if common.detail and (fields_view is not None or json_out):
        raise UserError("-V (the detail tree) goes with the text output, not with --json or -T fields")
    text = fields_view is None and not json_out
    if jobs is None or jobs == 0:
        from kdissect.commands.jobs import available

        jobs = available()
    elif jobs < 0:
        raise UserError(f"--jobs {jobs}: give a number of processes, or 0 for the cores available")
    if text and common.output is None and sys.stdout.isatty():
        jobs = 1  # rows drawn on a terminal share it with the progress bar: one process draws them

    def sink_on(stream, console, header: bool = True):
        """The command's sink writing to `stream` (through `console` for the text view)."""
        if fields_view is not None:
            return EventSink(common.wanted, view=fields_view(stream), totals=False)
        if json_out:
            from kdissect.views.json_lines import JsonLinesWriter

            return EventSink(common.wanted, writer=JsonLinesWriter(stream), all_events=all_events, totals=False)
        from kdissect.views.terminal import ReadView

        detail = _detail_view() if common.detail else None
        view = ReadView(console, rows=not common.quiet, detail=detail, flush_each=not header, header=header)
        return EventSink(common.wanted, view=view)

    def worker_sink(stream):
        """A worker's: its rows written as each is made, without the header (the first process writes it)."""
        from kdissect.views.console import make_console

        return sink_on(stream, make_console(stream) if text else None, header=False)

    with Reading(common, on_console=text, jobs=jobs) as run:
        sink = sink_on(run.stream, run.console if text else None)
        if text:
            sink.view.title(run.source.name, run.source.format, run.source.compression)
        for event in run.events(worker_sink):
            if sink.add(event):
                run.took()
        if text:
            sink.view.closing(sink.summary, run.dissector.counters, run.source.linktypes(), run.notes())
    run.finish()


def _detail_view():
    """-V's tree of every field, loaded only when asked for."""
    from kdissect.views.detail import DetailView

    return DetailView(False)


def _fields_view(chosen: str, json_flag: bool, names: list[str] | None, settings: list[str] | None):
    """For -T fields, a maker of the writer of the -e fields; None for the other formats. Checks the
    combination of options and every field before anything is read."""
    if chosen not in FORMATS:
        raise UserError(f"-T {chosen}: choose one of {', '.join(FORMATS)}")
    if chosen != "fields":
        if names or settings:
            raise UserError("-e and -E go with -T fields")
        if json_flag and chosen == "text":
            raise UserError("--json and -T text disagree: give one")
        return None
    if json_flag:
        raise UserError("--json and -T fields (or -e) disagree: give one")
    if not names:
        raise UserError("-T fields needs the fields to write: -e api -e latency_ms ...")
    from kdissect.filter import FilterError, compile_fields
    from kdissect.views.fields import FieldsError, FieldsWriter, make_layout

    try:
        columns, layout = compile_fields(names), make_layout(settings or [])
    except (FilterError, FieldsError) as exc:
        raise UserError(str(exc)) from None
    return lambda stream: FieldsWriter(stream, columns, layout)
