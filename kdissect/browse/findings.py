"""The findings tab's words: one finding told in full, and the display filters that put its evidence on the list.

A finding's evidence names the first few exchanges (the doctor keeps ten), its connections, client ids, groups
and partitions; each kind becomes a filter of the `-Y` language, so the list, the status line and `/` show and
change it like any other filter.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

from kdissect.doctor.finding import Evidence, Finding
from kdissect.filter.lexer import quote
from kdissect.views.doctor import STYLES, evidence_lines

KINDS = ("exchanges", "connections", "groups", "client ids", "partitions")
"""What Enter on a finding shows: the first kind of evidence it has, in this order."""


def evidence_filter(evidence: Evidence, kind: str | None = None) -> str | None:
    """The filter that lists the evidence of `kind` (the first kind there is, when None); None when it has none."""
    for each in (kind,) if kind else KINDS:
        if each == "exchanges" and evidence.exchanges:
            return f"id in {{{', '.join(map(str, evidence.exchanges))}}}"
        if each == "connections" and evidence.connections:
            return _among("connection", [str(c) for c in evidence.connections])
        if each == "groups" and evidence.groups:
            return _among("group", [quote(g) for g in evidence.groups])
        if each == "client ids" and evidence.client_ids:
            return _among("client_id", [quote(c) for c in evidence.client_ids])
        if each == "partitions" and evidence.partitions:
            return _among("topic", [quote(t) for t in dict.fromkeys(t for t, _ in evidence.partitions)])
    return None


def _among(field: str, values: list[str]) -> str:
    return f"{field} == {values[0]}" if len(values) == 1 else f"{field} in {{{', '.join(values)}}}"


def finding_text(finding: Finding) -> Text:
    """The finding as `kdissect doctor` prints it, with the keys that show its evidence."""
    style = STYLES[finding.severity]
    lines = [
        f"[{style}]{finding.severity.upper()}  {finding.id}[/]",
        f"[bold]{escape(finding.title)}[/]",
        "",
        escape(finding.explanation),
        "",
        f"[bold]advice[/] {escape(finding.advice)}",
        "",
        "[bold]evidence[/]",
        *(f"  {escape(line)}" for line in evidence_lines(finding)),
    ]
    evidence = finding.evidence
    keys = []
    first = evidence_filter(evidence)
    if first is not None:
        keys.append(f"[b]Enter[/] lists them: {escape(first)}")
    if evidence.connections:
        keys.append("[b]c[/] its connections")
    if evidence.groups:
        keys.append("[b]g[/] its groups")
    if keys:
        lines += ["", "  ".join(keys)]
    return Text.from_markup("\n".join(lines))
