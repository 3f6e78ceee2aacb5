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
    from kdissect.views.output import Closing
    from kdissect.views.stats import Stats

    totals = Stats(common.values)
    wanted = common.wanted
    doctor = Doctor(wanted=wanted, values=common.values)
    with Reading(common) as run:
        output = run.writes("stats")
        for event in run.events():
            doctor.add(event)
            if isinstance(event, Exchange) and wanted.matches(event):
                totals.add(event)
                run.took()
            elif isinstance(event, ConnectionEnd):
                totals.add_connection(event)
        notes = tuple(n for n in run.notes() if n.code.startswith("run."))
        output.end(Closing(notes=notes, stats=totals, report=doctor.report(lambda: run.interrupted)))
    run.finish()
