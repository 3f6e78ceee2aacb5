"""`kdissect records`: every produced and fetched record, one per line, as kcat prints them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

from kdissect.commands.options import READS, Common, UserError, takes
from kdissect.commands.reading import Reading, damaged


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
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither answer from the capture's index nor use one: read the file whole (docs/index.md).")
    ] = False,
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
    from kdissect.decode.streamed import DIRECTIONS
    from kdissect.events import Exchange
    from kdissect.views.output import Closing

    if direction is not None and direction not in DIRECTIONS:
        raise UserError(f"--direction {direction}: choose produce or fetch")
    if fmt is not None and common.format != "text":
        raise UserError(f"choose one of --format and -T {common.format}")
    chosen = _Chosen(common, frozenset([direction] if direction else DIRECTIONS))
    settings = {"record_format": fmt, "record_decode": decode}
    if not no_cache and common.write is None and _from_index(common, chosen, settings):
        return

    def took(event: Exchange) -> bool:
        run.took(event)
        return run.stopped_by is not None

    with Reading(common) as run:
        output = run.writes("records", **settings)
        for event in run.events():
            if isinstance(event, Exchange) and common.wanted.matches(event):
                chosen.write(event, output, took)
        output.end(Closing())
    run.finish()


class _Chosen:
    """Which records of an exchange the filters keep: its directions', its topics', and with a filter on record
    fields those that match (not every record of an exchange that does)."""

    def __init__(self, common: Common, directions: frozenset[str]) -> None:
        self.common = common
        self.directions = directions
        self.topics = set(common.topics)
        self.in_record: Any = None
        """`filter.record_fields.InRecord` when the filter names record fields: a record is then tested alone."""
        if any(name == "record" or name.startswith("record.") for name in common.wanted.fields):
            from kdissect.filter.record_fields import InRecord

            self.in_record = InRecord

    def write(self, event: Any, output: Any, took: Callable[[Any], bool]) -> None:
        """The records of `event` the filters keep, each written; `took` says when --count is reached."""
        from kdissect.decode.streamed import exchange_records

        wanted, topics, in_record = self.common.wanted, self.topics, self.in_record
        for item in exchange_records(event, self.directions, self.common.values):
            if topics and item.topic not in topics:
                continue
            if in_record is not None and not wanted.matches(in_record(event, item.topic, item.record, item.decoded)):
                continue
            output.record(item)
            if took(event):
                break


def _from_index(common: Common, chosen: _Chosen, settings: dict[str, Any]) -> bool:
    """The records answered from the capture's index (kdissect/index/); False when it cannot answer."""
    from kdissect.commands import indexed

    answered = indexed.answer(common, common.options, lambda index: _positions(index, common.wanted.keep))
    if answered is None:
        return False
    written = 0

    def counted(event: Any) -> bool:
        nonlocal written
        written += 1
        return written == common.count

    with indexed.opened(common, "records", **settings) as output:
        for event in answered[0]:
            if written != common.count and common.wanted.matches(event):
                chosen.write(event, output, counted)
    damaged(answered[1])
    return True


def _positions(index: Any, keep: Any) -> list[int]:
    """The index's positions of the exchanges that can carry records (Produce, Fetch) the filter does not reject."""
    from kdissect.index.answer import candidates
    from kdissect.schema import ApiKey

    carriers = (ApiKey.PRODUCE, ApiKey.FETCH)
    api = index.columns.api
    chosen = candidates(index, keep) if keep is not None else range(len(api))
    return [i for i in chosen if api[i] in carriers]
