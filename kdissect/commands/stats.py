"""`kdissect stats`: what a capture adds up to, per API, topic, client and consumer group, and the doctor's
findings (kdissect/doctor/) as a last section."""

from __future__ import annotations

from kdissect.commands.options import CAPTURE, Common, open_source, packets, takes


@takes(
    "input",
    "filters",
    "output",
    helps={
        "json_out": "Write NDJSON, one object per table (apis, topics, clients, groups, rebalances, findings).",
    },
)
def stats(common: Common, capture: CAPTURE) -> None:
    """Totals: per API and version (errors, latency percentiles), per topic and partition, per client id,
    consumer groups with their rebalances and offset commits, and the doctor's findings (`kdissect doctor`
    explains them)."""
    from kdissect.dissector import make_dissector
    from kdissect.doctor.engine import Doctor
    from kdissect.events import Exchange
    from kdissect.views.stats import Stats, print_stats

    totals = Stats()
    wanted = common.wanted
    doctor = Doctor(shown=wanted.matches if wanted.active else None)
    with open_source(capture) as source, common.open_output() as stream:
        for event in make_dissector(common.options).run(packets(source, common.quiet)):
            doctor.add(event)
            if isinstance(event, Exchange) and wanted.matches(event):
                totals.add(event)
        findings = doctor.findings()
        if common.json:
            from kdissect.views.json_lines import LAYOUT, JsonLinesWriter, finding_json

            writer = JsonLinesWriter(stream)
            for name, rows in totals.tables():
                writer.write({"type": "stats", "layout": LAYOUT, "table": name, "rows": rows})
            writer.write({"type": "stats", "layout": LAYOUT, "table": "findings", "rows": [finding_json(f) for f in findings]})
        else:
            from kdissect.views.console import make_console
            from kdissect.views.doctor import print_findings

            console = make_console(stream)
            print_stats(totals, console)
            console.print("[bold]Findings[/] (kdissect doctor --explain ID tells more)")
            print_findings(findings, console, str(capture), brief=True)
