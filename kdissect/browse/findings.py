"""The findings pane: what `kdissect doctor` finds in the capture, each finding told in full, and the display
filters that put its evidence on the list.

A finding's evidence names the first few exchanges (the doctor keeps ten), its connections, client ids, groups
and partitions; each kind becomes a filter of the `-Y` language, so the list, the status line and `/` show and
change it like any other filter. The findings come from the index's pass (its doctor judges the capture as a
whole, so they come when it ends; live, the findings so far are asked for while this pane is shown).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from kdissect.browse.wire_text import literal, wire
from kdissect.doctor.finding import Evidence, Finding
from kdissect.views.doctor import STYLES, evidence_lines

KINDS = ("exchanges", "connections", "groups", "client ids", "partitions")
"""What Enter on a finding shows: the first kind of evidence it has, in this order."""


def evidence_filter(evidence: Evidence, kind: str | None = None) -> str | None:
    """The filter that lists the evidence of `kind`; without one, the finding's own (the filter that selects exactly
    its evidence), else the first kind there is; None when it has none."""
    if kind is None and evidence.filter:
        return evidence.filter
    for each in (kind,) if kind else KINDS:
        if each == "exchanges" and evidence.exchanges:
            return f"id in {{{', '.join(map(str, evidence.exchanges))}}}"
        if each == "connections" and evidence.connections:
            return _among("connection", [str(c) for c in evidence.connections])
        if each == "groups" and evidence.groups:
            return _among("group", [literal(g) for g in evidence.groups])
        if each == "client ids" and evidence.client_ids:
            return _among("client_id", [literal(c) for c in evidence.client_ids])
        if each == "partitions" and evidence.partitions:
            return _among("topic", [literal(t) for t in dict.fromkeys(t for t, _ in evidence.partitions)])
    return None


def _among(field: str, values: list[str]) -> str:
    return f"{field} == {values[0]}" if len(values) == 1 else f"{field} in {{{', '.join(values)}}}"


def finding_text(finding: Finding) -> Text:
    """The finding as `kdissect doctor` prints it, with the keys that show its evidence."""
    text = Text(f"{finding.severity.upper()}  {finding.id}\n", style=STYLES[finding.severity])
    text += wire(finding.title, style="bold") + "\n\n" + wire(finding.explanation) + "\n\n"
    text += Text("advice", style="bold") + " " + wire(finding.advice) + "\n\n"
    text += Text("evidence", style="bold")
    for line in evidence_lines(finding):
        text += Text("\n  ") + wire(line)
    evidence = finding.evidence
    keys = []
    first = evidence_filter(evidence)
    if first is not None:
        keys.append(Text("Enter", style="bold") + " lists them: " + wire(first))
    if evidence.connections:
        keys.append(Text("c", style="bold") + " its connections")
    if evidence.groups:
        keys.append(Text("g", style="bold") + " its groups")
    if keys:
        text += Text("\n\n") + Text("  ").join(keys)
    return text


class FindingsPane(Vertical):
    """The findings pane: the findings in a table, the one under the cursor told below it."""

    BINDINGS = [
        Binding("c", "evidence('connections')", "its connections"),
        Binding("g", "evidence('groups')", "its groups"),
    ]

    class Evidence(Message):
        """A finding's evidence, as the filter that lists it, is wanted on the list."""

        def __init__(self, expression: str) -> None:
            super().__init__()
            self.expression = expression

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.findings: list[Finding] | None = None
        """None until the doctor has judged."""

    def compose(self) -> ComposeResult:
        yield DataTable(id="findings", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="finding-scroll"):
            yield Static("", id="finding")

    def on_mount(self) -> None:
        self.query_one("#findings", DataTable).add_columns("severity", "finding", "title")

    def waiting(self, why: str) -> None:
        """No findings yet: why."""
        self.query_one("#finding", Static).update(Text(why, style="yellow"))

    def show(self, findings: list[Finding]) -> None:
        self.findings = findings
        table = self.query_one("#findings", DataTable)
        row = table.cursor_row
        table.clear()
        for finding in findings:
            table.add_row(Text(finding.severity, style=STYLES[finding.severity]), Text(finding.id), wire(finding.title))
        if findings:
            row = min(max(row, 0), len(findings) - 1)
            table.move_cursor(row=row)
            self._tell(row)
        else:
            self.query_one("#finding", Static).update(Text("No findings: the doctor's rules found nothing to say about this capture."))

    def _tell(self, row: int) -> None:
        if self.findings and 0 <= row < len(self.findings):
            self.query_one("#finding", Static).update(finding_text(self.findings[row]))

    def chosen(self) -> Finding | None:
        """The finding under the cursor."""
        row = self.query_one("#findings", DataTable).cursor_row
        return self.findings[row] if self.findings and 0 <= row < len(self.findings) else None

    @on(DataTable.RowHighlighted, "#findings")
    def highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._tell(event.cursor_row)

    @on(DataTable.RowSelected, "#findings")
    def selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_evidence(None)

    def action_evidence(self, kind: str | None) -> None:
        """The evidence of `kind` (or the first kind the finding has) onto the list."""
        finding = self.chosen()
        expression = None if finding is None else evidence_filter(finding.evidence, kind)
        if expression is None:
            self.notify(f"this finding names no {kind or 'evidence'}", severity="warning", markup=False)
            return
        self.post_message(self.Evidence(expression))
