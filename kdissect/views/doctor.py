"""The doctor's report on a terminal: findings grouped by severity, each with its explanation, advice and
evidence; `--explain ID` and the list of rules."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kdissect.doctor.finding import SEVERITIES, Finding
from kdissect.doctor.rule import Rule
from kdissect.doctor.trail import where
from kdissect.printable import printable
from kdissect.views.terminal import stamp

STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def evidence_lines(finding: Finding) -> list[str]:
    e = finding.evidence
    lines = []
    if e.exchanges:
        more = f" (of {e.exchange_count})" if e.exchange_count > len(e.exchanges) else ""
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
    return lines


def _hanging(console: Console, text: Text, first: int, rest: int) -> None:
    """Long explanations wrap under their own start, not at the left edge, at any width."""
    for n, line in enumerate(text.wrap(console, max(20, console.width - rest))):
        line.rstrip()
        console.print(Text(" " * (rest if n else first)) + line, soft_wrap=True)


def print_findings(findings: Iterable[Finding], console: Console, capture: str = "FILE", brief: bool = False) -> None:
    """Worst first. `brief` leaves out the explanations and advice (the section of `stats`)."""
    findings = list(findings)
    if not findings:
        console.print(Text("No findings."), soft_wrap=False)
        return
    for severity in reversed(SEVERITIES):
        these = [f for f in findings if f.severity == severity]
        if not these:
            continue
        console.print(Text(severity.upper(), style=STYLES[severity]) + Text(f" ({len(these)})"), soft_wrap=False)
        for finding in these:
            _hanging(console, Text(finding.id, style=STYLES[severity]) + Text(f"  {printable(finding.title)}"), 2, 4)
            if not brief:
                _hanging(console, Text(printable(finding.explanation), style="dim"), 4, 4)
                _hanging(console, Text("advice", style="bold") + Text(f" {printable(finding.advice)}"), 4, 4)
            for line in evidence_lines(finding):
                _hanging(console, Text(printable(line)), 4, 4)
            if finding.evidence.exchanges and not brief:
                opener = f"kdissect show {printable(capture)} --exchange {finding.evidence.exchanges[0]}"
                _hanging(console, Text(f"open one: {opener}", style="dim"), 4, 4)
        console.print()


def print_rule(rule: Rule, console: Console) -> None:
    console.print(Text(rule.id, style="bold") + Text(f" ({rule.severity}): {rule.summary}"), soft_wrap=False)
    console.print(Text(rule.explanation), soft_wrap=False)
    console.print(Text("advice", style="bold") + Text(f" {rule.advice}"), soft_wrap=False)
    for t in rule.thresholds:
        setting = Text(f"--set {rule.id}.{t.name}=N", style="bold") + Text(f" ({t.unit}, default {t.default:g})")
        console.print(setting + Text(f": {t.meaning}"), soft_wrap=False)


def print_rules(rules: Iterable[Rule], console: Console) -> None:
    table = Table(title="Findings the doctor knows", title_justify="left", title_style="bold", header_style="bold")
    for name in ("id", "severity", "what it looks for"):
        table.add_column(name)
    for rule in rules:
        table.add_row(Text(rule.id), Text(rule.severity), Text(rule.summary))
    console.print(table)
