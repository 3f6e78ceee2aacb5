"""`kdissect doctor`: what is wrong in a capture, why it matters, and what to do (findings: kdissect/doctor/)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from kdissect.commands.options import Common, UserError, open_source, packets, takes

FAIL_ON = ("warning", "error")


@takes(
    "input",
    "filters",
    "output",
    helps={
        "filter": "Restrict the evidence to exchanges this display filter shows (repeatable; docs/filters.md); the rules "
        "still see every exchange, and a finding with no evidence shown is left out.",
        "json_out": "Write NDJSON, one object per finding (layout: docs/json.md).",
    },
)
def doctor(
    common: Common,
    capture: Annotated[
        Optional[Path], typer.Argument(help="A pcap or pcapng capture, plain or compressed (gzip, zstd, lz4).", show_default=False)
    ] = None,
    explain: Annotated[
        Optional[str], typer.Option("--explain", help="Explain a finding: what it means, the advice, its thresholds (no capture needed).")
    ] = None,
    rules: Annotated[bool, typer.Option("--rules", help="List every finding the doctor knows (no capture needed).")] = False,
    settings: Annotated[
        Optional[list[str]],
        typer.Option("--set", help="Change a threshold, ID.NAME=VALUE, e.g. group.rebalance-storm.threshold=10 (repeatable)."),
    ] = None,
    fail_on: Annotated[
        Optional[str], typer.Option("--fail-on", help="Exit with status 1 when a finding is at least this severe: warning or error.")
    ] = None,
) -> None:
    """Findings: rebalance storms, removed members, lag, refused commits, throttling, versions Kafka 4.0 removed,
    latency outliers, what the capture lost... each with why it matters, what to check, and its evidence."""
    from kdissect.doctor.engine import RULES, Doctor
    from kdissect.doctor.finding import SEVERITIES
    from kdissect.doctor.rule import SettingError
    from kdissect.views.console import make_console

    if fail_on is not None and fail_on not in FAIL_ON:
        raise UserError(f"--fail-on {fail_on}: say warning or error")
    try:
        doctor = Doctor(settings or (), common.wanted.matches if common.wanted.active else None)
    except SettingError as exc:
        raise UserError(str(exc)) from None
    if explain is not None or rules:
        from kdissect.views.doctor import print_rule, print_rules

        with common.open_output() as stream:
            console = make_console(stream)
            if rules:
                print_rules(RULES.values(), console)
            if explain is not None:
                if explain not in RULES:
                    raise UserError(f"--explain {explain}: no such finding (kdissect doctor --rules lists them)")
                print_rule(RULES[explain], doctor.settings, console)
        return
    if capture is None:
        raise UserError("give a capture file (or --explain ID, --rules)")
    from kdissect.dissector import make_dissector

    options = replace(common.options, keep=None)  # the rules read every body, whatever the filter shows
    with open_source(capture) as source, common.open_output() as stream:
        for event in make_dissector(options).run(packets(source, common.quiet)):
            doctor.add(event)
        findings = doctor.findings()
        if common.json:
            from kdissect.views.json_lines import JsonLinesWriter, finding_json

            writer = JsonLinesWriter(stream)
            for finding in findings:
                writer.write(finding_json(finding))
        else:
            from kdissect.views.doctor import print_findings

            print_findings(findings, make_console(stream), str(capture))
    if fail_on is not None and any(SEVERITIES.index(f.severity) >= SEVERITIES.index(fail_on) for f in findings):
        raise typer.Exit(1)
