"""The doctor's report on a terminal: findings grouped by severity, each with its explanation, advice and
evidence; `--explain ID` and the list of rules."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kdissect.doctor.engine import Report
from kdissect.doctor.finding import SEVERITIES, Finding
from kdissect.doctor.rule import Rule
from kdissect.doctor.trail import plural, where
from kdissect.printable import printable
from kdissect.views.terminal import stamp

STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


FILTER_SHOWN = 400
"""Longest evidence filter printed as a `check:` command; a longer one is in `doctor --json`."""


def evidence_lines(finding: Finding) -> list[str]:
    e = finding.evidence
    lines = []
    if e.exchanges:
        more = f" (of {e.count})" if e.unit == "exchange" and e.count > len(e.exchanges) else ""
        lines.append(f"exchanges {', '.join(map(str, e.exchanges))}{more}")
    for label, items in (
        ("connections", [str(c) for c in e.connections]),
        ("client ids", list(e.client_ids)),
        ("groups", list(e.groups)),
        ("partitions", [where(t, p) for t, p in e.partitions]),
    ):
        if items:
            lines.append(f"{label} {', '.join(items)}")
    if e.first_ts is not None and e.last_ts is not None:
        lines.append(f"from {stamp(e.first_ts)} to {stamp(e.last_ts)} UTC")
    if finding.software:
        lines.append(f"client software {finding.software}")
    return lines


def check_line(finding: Finding, capture: str) -> str | None:
    """The command that shows (and counts) a finding's evidence, as the user can paste it."""
    chosen = finding.evidence.filter
    if not chosen:
        return None
    if len(chosen) > FILTER_SHOWN:
        return f"check: its {len(chosen)}-character filter is in kdissect doctor --json (evidence.filter)"
    unit = " -e connection" if finding.evidence.unit == "connection" else ""
    return f"check: kdissect read {shlex.quote(capture)} -Y {shlex.quote(chosen)} -T fields -e id{unit}"


def _hanging(console: Console, text: Text, first: int, rest: int) -> None:
    """Long explanations wrap under their own start, not at the left edge, at any width."""
    for n, line in enumerate(text.wrap(console, max(20, console.width - rest))):
        line.rstrip()
        console.print(Text(" " * (rest if n else first)) + line, soft_wrap=True)


def print_verdict(report: Report, console: Console, capture: str, hint: bool = False) -> None:
    """The one line that sums the doctor up; with `hint`, how to read more when there is more to read."""
    style = "bold red" if any(f.severity == "error" for f in report.problems) else "yellow" if report.problems else "green"
    more = f" (kdissect doctor {printable(capture)} tells more)" if hint and report.findings else ""
    _hanging(console, Text("Doctor: ", style="bold") + Text(printable(report.verdict), style=style) + Text(more, style="dim"), 0, 2)


def print_findings(
    findings: Iterable[Finding],
    console: Console,
    capture: str = "FILE",
    brief: bool = False,
    everything: bool = True,
    hidden_by: str = "--all",
) -> None:
    """Worst first. `brief` leaves out the explanations, advice and commands (the section of `stats`); without
    `everything`, info findings are only counted, and `hidden_by` says what shows them."""
    findings = list(findings)
    shown = findings if everything else [f for f in findings if f.severity != "info"]
    for severity in reversed(SEVERITIES):
        these = [f for f in shown if f.severity == severity]
        if not these:
            continue
        console.print(Text(severity.upper(), style=STYLES[severity]) + Text(f" ({len(these)})"), soft_wrap=False)
        for finding in these:
            _print_finding(finding, console, capture, brief)
        console.print()
    hidden = [f for f in findings if f not in shown]
    if hidden:
        counts = Counter(f.id for f in hidden)
        ids = ", ".join(name if n == 1 else f"{name} ×{n}" for name, n in counts.items())
        _hanging(console, Text(f"{plural(len(hidden), 'info finding')} not shown ({hidden_by} shows them): {ids}", style="dim"), 0, 2)


def _print_finding(finding: Finding, console: Console, capture: str, brief: bool) -> None:
    _hanging(console, Text(finding.id, style=STYLES[finding.severity]) + Text(f"  {printable(finding.title)}"), 2, 4)
    if not brief:
        _hanging(console, Text(printable(finding.explanation), style="dim"), 4, 4)
        _hanging(console, Text("advice", style="bold") + Text(f" {printable(finding.advice)}"), 4, 4)
    if finding.caused_by:
        _hanging(console, Text("caused by ", style="bold") + Text(", ".join(finding.caused_by)), 4, 4)
    for line in evidence_lines(finding):
        _hanging(console, Text(printable(line)), 4, 4)
    if not brief:
        check = check_line(finding, capture)
        if check is not None:
            _hanging(console, Text(printable(check), style="dim"), 4, 4)
        if finding.evidence.exchanges:
            opener = f"kdissect show {shlex.quote(capture)} --exchange {finding.evidence.exchanges[0]}"
            _hanging(console, Text(printable(f"open one: {opener}"), style="dim"), 4, 4)


def print_rule(rule: Rule, console: Console) -> None:
    console.print(Text(rule.id, style="bold") + Text(f" ({rule.severity}): {rule.summary}"), soft_wrap=False)
    console.print(Text(rule.explanation), soft_wrap=False)
    console.print(Text("advice", style="bold") + Text(f" {rule.advice}"), soft_wrap=False)
    for t in rule.thresholds:
        setting = Text(f"--set {rule.id}.{t.name}=N", style="bold") + Text(f" ({t.unit}, default {t.default:g})")
        console.print(setting + Text(f": {t.meaning}"), soft_wrap=False)


def print_rules(rules: Iterable[Rule], console: Console) -> None:
    table = Table(title="Findings the doctor knows", title_justify="left", title_style="bold", header_style="bold")
    table.add_column("id", no_wrap=True)  # an id is what a reader copies into --explain
    table.add_column("severity", no_wrap=True)
    table.add_column("what it looks for")
    for rule in rules:
        table.add_row(Text(rule.id), Text(rule.severity), Text(rule.summary))
    console.print(table)
