"""`kdissect stats`: what a capture adds up to, per API, topic, client and consumer group, and the doctor's
findings (kdissect/doctor/) as a last section."""

from __future__ import annotations

from kdissect.commands.options import READS, Common, takes
from kdissect.commands.reading import Reading


@takes(
    *READS,
    helps={
        "json_out": "Write NDJSON, one object per table (apis, topics, clients, groups, rebalances, findings).",
        "quiet": "No progress bar (stats prints only totals anyway).",
    },
)
def stats(common: Common) -> None:
    """Totals: per API and version (errors, latency percentiles), per topic and partition, per client id,
    consumer groups with their rebalances and offset commits, and the doctor's findings (`kdissect doctor`
    explains them)."""
    from kdissect.doctor.engine import Doctor
    from kdissect.events import ConnectionEnd, Exchange
    from kdissect.views.stats import Stats, print_stats

    totals = Stats()
    wanted = common.wanted
    doctor = Doctor(shown=wanted.matches if wanted.active else None)
    with Reading(common) as run:
        for event in run.events():
            doctor.add(event)
            if isinstance(event, Exchange) and wanted.matches(event):
                totals.add(event)
                run.took()
            elif isinstance(event, ConnectionEnd):
                totals.add_connection(event)
        findings = doctor.findings(lambda: run.interrupted)
        if common.json:
            from kdissect.views.json_lines import LAYOUT, JsonLinesWriter, finding_json

            writer = JsonLinesWriter(run.stream)
            for name, rows in totals.tables():
                writer.write({"type": "stats", "layout": LAYOUT, "table": name, "rows": rows})
            writer.write({"type": "stats", "layout": LAYOUT, "table": "findings", "rows": [finding_json(f) for f in findings]})
        else:
            from kdissect.views.doctor import print_findings

            print_stats(totals, run.console, [n for n in run.notes() if n.code.startswith("run.")])
            run.console.print("[bold]Findings[/] (kdissect doctor --explain ID tells more)")
            print_findings(findings, run.console, common.capture, brief=True)
    run.finish()
