"""`kdissect report`: a capture explained on one self-contained HTML page (kdissect/report/)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kdissect.commands.options import Common, UserError, takes


@takes(
    "input",
    "filters",
    "count",
    "quiet",
    helps={
        "filter": "Restrict the page to the exchanges this display filter shows (repeatable; docs/filters.md), as stats "
        "does: the doctor still sees every exchange and restricts its evidence. Without --ladder, the ladder draws them.",
        "quiet": "No progress bar.",
    },
)
def report(
    common: Common,
    captures: Annotated[
        list[str],
        typer.Argument(
            metavar="CAPTURES...",
            help="pcap or pcapng captures, plain or compressed; several are read as one, merged by time (as mergecap merges them).",
            show_default=False,
        ),
    ],
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", metavar="FILE", help="Write the page to this file (standard output when it is not a terminal)."),
    ] = None,
    ladder: Annotated[
        Optional[str],
        typer.Option(
            "--ladder",
            metavar="EXPR",
            help="The ladder diagram's episode: the exchanges this display filter selects (default: -Y's, else the longest rebalances).",
        ),
    ] = None,
    settings: Annotated[
        Optional[list[str]],
        typer.Option("--set", metavar="ID.NAME=VALUE", help="Change a doctor threshold, as `doctor --set` (repeatable)."),
    ] = None,
) -> None:
    """One HTML page to attach to a ticket: the doctor's verdict and findings (click one to mark its evidence),
    timelines on one time axis (rates, latency, errors, rebalances, lag, bytes, connections), a ladder diagram of an
    episode, and the inventory. Everything is inlined: the page fetches nothing when opened."""
    if output is None and sys.stdout.isatty():
        raise UserError("kdissect report writes an HTML page: give -o FILE.html")
    episode = ladder_filter(common, ladder)
    write_report(replace(common, output=output), captures, settings or (), episode)


def ladder_filter(common: Common, text: str | None) -> Any:
    """--ladder's filter (everything when not given); a UserError for a mistake in it."""
    from kdissect.filter import EVERYTHING, FilterError, compile_filter

    if not text:
        return EVERYTHING
    try:
        return compile_filter([("--ladder", text)], common.options.catalog)
    except FilterError as exc:
        raise UserError(str(exc)) from None


def write_report(common: Common, captures: list[str], settings: tuple[str, ...] | list[str], episode: Any) -> None:
    """Read the captures once, for the doctor and the page, and write the page where `common` says."""
    from kdissect.commands.reading import Reading
    from kdissect.commands.value_sources import make_values
    from kdissect.doctor.engine import Doctor
    from kdissect.doctor.rule import SettingError
    from kdissect.report.build import Build
    from kdissect.report.page import Told

    options = replace(common.options, keep=None)  # the rules read every body, whatever the filter shows
    # values as `doctor` reads them: schemas learnt from the (first) capture and its registry traffic
    values, side_streams = make_values(None, None, captures[0] if captures else None, lambda: options)
    options = replace(options, side_streams=side_streams)
    try:
        build = Build(Doctor(settings, common.wanted, values=values), common.wanted, episode)
    except SettingError as exc:
        raise UserError(str(exc)) from None
    with Reading(common, options=options, captures=captures) as run:
        for event in run.events():
            if build.add(event):
                run.took()
        build.write(run.stream, Told(tuple(captures), common.wanted.text, tuple(run.notes())))
    run.finish()
