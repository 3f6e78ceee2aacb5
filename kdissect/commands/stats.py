"""`kdissect stats`: what a capture adds up to, per API, topic, client and consumer group."""

from __future__ import annotations

from kdissect.commands.options import READS, Common, takes
from kdissect.commands.reading import Reading


@takes(
    *READS,
    helps={
        "json_out": "Write NDJSON, one object per table (apis, topics, clients, groups, rebalances).",
        "quiet": "No progress bar (stats prints only totals anyway).",
    },
)
def stats(common: Common) -> None:
    """Totals: per API and version (errors, latency percentiles), per topic and partition, per client id,
    and consumer groups with their rebalances and offset commits."""
    from kdissect.events import Exchange
    from kdissect.views.stats import Stats, print_stats

    totals = Stats()
    wanted = common.wanted
    with Reading(common) as run:
        for event in run.events():
            if isinstance(event, Exchange) and wanted.matches(event):
                totals.add(event)
                run.took()
        if common.json:
            from kdissect.views.json_lines import LAYOUT, JsonLinesWriter

            writer = JsonLinesWriter(run.stream)
            for name, rows in totals.tables():
                writer.write({"type": "stats", "layout": LAYOUT, "table": name, "rows": rows})
        else:
            print_stats(totals, run.console, [n for n in run.notes() if n.code.startswith("run.")])
    run.finish()
