"""`kdissect schemas`: what schemas a capture's values are written with, and where kdissect learnt each."""

from __future__ import annotations

from kdissect.commands.options import Common, takes
from kdissect.commands.reading import Reading


@takes(
    "capture",
    "input",
    "values",
    "filters",
    "output",
    helps={"json_out": "Write NDJSON, one object per schema (docs/json.md).", "quiet": "No progress bar."},
)
def schemas(common: Common) -> None:
    """Every schema known: id, subject, version, format, where it was learnt (--schemas, --schema-registry, the
    registry's HTTP answers or the _schemas topic in the capture), and the topics and records that use it."""
    from kdissect.decode.streamed import exchange_records
    from kdissect.events import Exchange
    from kdissect.views.output import Closing
    from kdissect.views.schema_list import SchemaUsage

    usage = SchemaUsage(common.values)
    wanted = common.wanted
    with Reading(common) as run:
        output = run.writes("schemas")
        for event in run.events():
            if isinstance(event, Exchange) and wanted.matches(event):
                for item in exchange_records(event, values=common.values):
                    usage.add(item)
        common.values.learn_now()
        output.end(Closing(schemas=tuple(usage.rows())))
    run.finish()
