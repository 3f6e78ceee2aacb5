"""`kdissect stats`: what a capture adds up to, per API, topic, client and consumer group."""

from __future__ import annotations

from kdissect.commands.options import CAPTURE, Common, open_source, packets, takes


@takes(
    "input",
    "filters",
    "output",
    helps={
        "json_out": "Write NDJSON, one object per table (apis, topics, clients, groups, rebalances).",
    },
)
def stats(common: Common, capture: CAPTURE) -> None:
    """Totals: per API and version (errors, latency percentiles), per topic and partition, per client id,
    and consumer groups with their rebalances and offset commits."""
    from kdissect.dissector import make_dissector
    from kdissect.events import ConnectionEnd, Exchange
    from kdissect.views.stats import Stats, print_stats

    totals = Stats()
    wanted = common.wanted
    with open_source(capture) as source, common.open_output() as stream:
        dissector = make_dissector(common.options)
        for event in dissector.run(packets(source, common.quiet, dissector)):
            if isinstance(event, Exchange) and wanted.matches(event):
                totals.add(event)
            elif isinstance(event, ConnectionEnd):
                totals.add_connection(event)
        if common.json:
            from kdissect.views.json_lines import LAYOUT, JsonLinesWriter

            writer = JsonLinesWriter(stream)
            for name, rows in totals.tables():
                writer.write({"type": "stats", "layout": LAYOUT, "table": name, "rows": rows})
        else:
            from kdissect.views.console import make_console

            print_stats(totals, make_console(stream))
