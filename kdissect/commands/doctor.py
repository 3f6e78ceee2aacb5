"""`kdissect doctor`: what is wrong in a capture, why it matters, and what to do (findings: kdissect/doctor/)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kdissect.commands.options import READS, Common, ExitStatus, UserError, split_list, takes
from kdissect.commands.reading import Reading, dissector_for, open_source

FAIL_ON = ("warning", "error")


def _explain(value: str | None) -> None:
    """--explain ID: answered as soon as it is read, with no capture to open (an eager option)."""
    if value is None:
        return
    from kdissect.doctor.engine import RULES
    from kdissect.views.console import make_console
    from kdissect.views.doctor import print_rule

    if value not in RULES:
        raise UserError(f"--explain {value}: no such finding (kdissect doctor --rules lists them)")
    print_rule(RULES[value], make_console(sys.stdout))
    raise typer.Exit()


def _rules(value: bool) -> None:
    if not value:
        return
    from kdissect.doctor.engine import RULES
    from kdissect.views.console import make_console
    from kdissect.views.doctor import print_rules

    print_rules(RULES.values(), make_console(sys.stdout))
    raise typer.Exit()


@takes(
    *READS,
    "write",
    helps={
        "filter": "Restrict the evidence to exchanges this display filter shows (repeatable; docs/filters.md); the rules "
        "still see every exchange, and a finding with no evidence shown is left out.",
        "json_out": "Write NDJSON, one object per finding (layout: docs/json.md).",
        "count": "Stop after N exchanges the filters let through: findings on the start of the capture.",
        "write": "Also write the packets of the findings' evidence (every evidence exchange, and the connections that are evidence "
        "themselves), with their connections' handshakes and closes, to this capture (.pcap or .pcapng, .gz, .zst or .lz4 to compress).",
    },
)
def doctor(
    common: Common,
    settings: Annotated[
        Optional[list[str]],
        typer.Option("--set", metavar="ID.NAME=VALUE", help="Change a threshold, e.g. group.rebalance-storm.threshold=10 (repeatable)."),
    ] = None,
    finding: Annotated[
        Optional[list[str]],
        typer.Option(
            "--finding", metavar="ID,...", help="Only these findings (ids as --rules lists them): what is told, and what -w writes."
        ),
    ] = None,
    fail_on: Annotated[
        Optional[str],
        typer.Option("--fail-on", metavar="SEVERITY", help="Exit with status 1 when a finding is at least this severe: warning or error."),
    ] = None,
    explain: Annotated[
        Optional[str],
        typer.Option(
            "--explain",
            metavar="ID",
            is_eager=True,
            callback=_explain,
            help="Explain a finding: what it means, the advice, its thresholds and their defaults (no capture needed).",
        ),
    ] = None,
    rules: Annotated[
        bool, typer.Option("--rules", is_eager=True, callback=_rules, help="List every finding the doctor knows (no capture needed).")
    ] = False,
    everything: Annotated[
        bool,
        typer.Option("--all", "-a", help="Show info findings too (what is normal but worth knowing); --json writes them all anyway."),
    ] = False,
    html: Annotated[
        Optional[Path],
        typer.Option(
            "--html", metavar="FILE", help="Also write the findings with timelines, a ladder and the inventory: kdissect report's page."
        ),
    ] = None,
) -> None:
    """Findings: rebalance storms, removed members, lag, refused commits, throttling, versions Kafka 4.0 removed,
    latency outliers, what the capture lost... each with why it matters, what to check, and its evidence."""
    from kdissect.doctor.engine import RULES, Doctor
    from kdissect.doctor.finding import SEVERITIES
    from kdissect.doctor.rule import SettingError
    from kdissect.events import Exchange
    from kdissect.views.output import Closing

    if fail_on is not None and fail_on not in FAIL_ON:
        raise UserError(f"--fail-on {fail_on}: say warning or error")
    chosen = set(split_list(finding) or ())
    if chosen - set(RULES):
        raise UserError(f"--finding {','.join(sorted(chosen - set(RULES)))}: no such finding (kdissect doctor --rules lists them)")
    wanted = common.wanted
    try:
        doctor = Doctor(settings or (), wanted, values=common.values, every=common.write is not None)
    except SettingError as exc:
        raise UserError(str(exc)) from None
    page = None
    if html is not None:
        from kdissect.report.build import Build

        page = Build(doctor, wanted)
    # the rules read every body, whatever the filter shows
    with Reading(common, options=replace(common.options, keep=None)) as run:
        output = run.writes("doctor", everything=everything)
        for event in run.events():
            if page is not None:
                shown = page.add(event)
            else:
                doctor.add(event)
                shown = isinstance(event, Exchange) and wanted.matches(event)
            if shown:
                run.took()
        report = doctor.report(lambda: run.interrupted)
        if chosen:  # what is told, the verdict with it, and what -w writes
            report = replace(report, findings=tuple(f for f in report.findings if f.id in chosen))
        for each in report.findings:
            output.finding(each)
        output.end(Closing(report=report))
        if page is not None and html is not None:
            _write_html(html, page, common, tuple(run.notes()))
    if common.write is not None:  # interrupted: no second reading for the evidence, and no file (run.finish says so)
        run.selection = None if run.interrupted else _evidence(common, report.findings)
    run.finish()
    findings = report.findings
    if fail_on is not None and any(SEVERITIES.index(f.severity) >= SEVERITIES.index(fail_on) for f in findings):
        raise ExitStatus(1)


def _write_html(path: Path, page: Any, common: Common, notes: tuple[Any, ...]) -> None:
    """--html: the report page, as `kdissect report` writes it."""
    from kdissect.commands.options import open_output
    from kdissect.report.page import Told

    with open_output(path) as stream:
        page.write(stream, Told(common.captures or ("-",), common.wanted.text, notes))


def _evidence(common: Common, findings: tuple) -> object:
    """The findings' evidence as a cut's selection: the capture read again, each exchange numbered as before, the
    evidence exchanges and every exchange of an evidence connection chosen."""
    from kdissect.rewrite.cut import choose

    ids = {i for f in findings for i in f.evidence.ids}
    connections = {c for f in findings for c in f.evidence.every_connection}
    with open_source(common.captures) as source:
        return choose(dissector_for(source, replace(common.options, keep=None)).run(source.packets()), ids, connections)
