"""`kdissect records`: every produced and fetched record, one per line, as kcat prints them."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kdissect.commands.options import READS, Common, UserError, takes
from kdissect.commands.reading import Reading


@takes(
    *READS,
    "write",
    helps={
        "json_out": "Write NDJSON, one object per record (docs/json.md).",
        "quiet": "No progress bar.",
        "count": "Stop after N records.",
    },
)
def records(
    common: Common,
    fmt: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help="Each record's line, as kcat -f: %t topic, %p partition, %o offset, %k key, %s value, %h headers, "
            "%T timestamp (ms), %K/%S key/value length, %Z time (UTC), %d direction, %e exchange; \\n \\t escapes. "
            "Keys and values are written as sent.",
            rich_help_panel="Output",
        ),
    ] = None,
    direction: Annotated[
        Optional[str],
        typer.Option("--direction", metavar="produce|fetch", help="Only records produced, or only records fetched."),
    ] = None,
    decode: Annotated[
        bool,
        typer.Option(
            "--decode",
            "-s",
            help="With -f, %k and %s write a key or value a schema (or JSON) reads as compact JSON, as kcat -s value=avro "
            "(docs/values.md); others as sent.",
            rich_help_panel="Output",
        ),
    ] = False,
) -> None:
    """Every record produced and fetched, one per line (topic, partition, offset, time, key, value, headers):
    what exactly a producer sent and a consumer got. Transaction markers are left out."""
    from kdissect.decode.streamed import DIRECTIONS, exchange_records
    from kdissect.events import Exchange
    from kdissect.views.output import Closing

    if direction is not None and direction not in DIRECTIONS:
        raise UserError(f"--direction {direction}: choose produce or fetch")
    if fmt is not None and common.format != "text":
        raise UserError(f"choose one of --format and -T {common.format}")
    directions = frozenset([direction] if direction else DIRECTIONS)
    topics = set(common.topics)
    wanted = common.wanted
    per_record = any(name == "record" or name.startswith("record.") for name in wanted.fields)
    """A filter on record fields keeps the records that match, not every record of an exchange that does."""
    if per_record:
        from kdissect.filter.record_fields import InRecord
    with Reading(common) as run:
        output = run.writes("records", record_format=fmt, record_decode=decode)
        for event in run.events():
            if not isinstance(event, Exchange) or not wanted.matches(event):
                continue
            for item in exchange_records(event, directions, common.values):
                if topics and item.topic not in topics:
                    continue
                if per_record and not wanted.matches(InRecord(event, item.topic, item.record, item.decoded)):
                    continue
                output.record(item)
                run.took(event)
                if run.stopped_by:
                    break
        output.end(Closing())
    run.finish()
