"""`kdissect show`: chosen exchanges in full, every field of request and response, optionally with bytes."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Optional

import typer

from kdissect.commands.options import READS, Common, UserError, split_list, takes
from kdissect.commands.reading import Reading, damaged


@takes(
    *READS,
    "write",
    "detail",
    "secrets",
    helps={
        "detail": "Every field of each exchange (what show always prints; accepted for tshark's habit).",
        "quiet": "No progress bar.",
    },
)
def show(
    common: Common,
    exchange: Annotated[
        Optional[list[str]],
        typer.Option("--exchange", metavar="N,...", help="Exchange numbers as `read` lists them (-e is read's field, as in tshark)."),
    ] = None,
    correlation_id: Annotated[
        Optional[list[str]],
        typer.Option("--correlation-id", metavar="ID,...", help="Exchanges with these correlation ids (combine with --connection)."),
    ] = None,
    frame: Annotated[
        Optional[list[str]],
        typer.Option("--frame", metavar="PACKET,...", help="The exchanges whose request or response spans these packet numbers."),
    ] = None,
    stable_id: Annotated[
        Optional[list[str]],
        typer.Option("--id", metavar="EXCHANGE_ID,...", help="Exchanges by the exchange_id of `kdissect spark`'s tables."),
    ] = None,
    hexdump: Annotated[
        bool, typer.Option("--hex", "-x", help="Show each field's offset and bytes, and each frame's hex dump (tshark -x).")
    ] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither answer from the capture's index nor use one: read the file whole (docs/index.md).")
    ] = False,
) -> None:
    """Show exchanges in full: every field of request and response, record batches and records included."""
    from kdissect.events import Exchange
    from kdissect.pipeline.rows import exchange_id
    from kdissect.views.output import Closing

    wanted = common.wanted
    ids, correlations, packet_numbers, stable = (
        _numbers(exchange, "--exchange"),
        _numbers(correlation_id, "--correlation-id"),
        _numbers(frame, "--frame"),
        _numbers(stable_id, "--id"),
    )
    chosen = ids or correlations or packet_numbers or stable
    if not (chosen or wanted.active):
        raise UserError("say which exchanges to show: --exchange N, --correlation-id C, --frame P, --id X, or a filter such as --api")
    last = max(ids) if ids and not (correlations or packet_numbers or stable) else None

    def picked(event: Exchange) -> bool:
        return not chosen or (
            event.id in ids
            or event.correlation_id in correlations
            or _spans_packet(event, packet_numbers)
            or bool(stable and exchange_id(event) in stable)
        )

    options = replace(common.options, spans=hexdump)
    if not no_cache and common.write is None and not stable:
        from kdissect.commands import indexed

        answered = indexed.answer(common, options, lambda index: _positions(index, common.wanted.keep, ids, correlations, packet_numbers))
        if answered is not None:
            if not indexed.write(common, answered[0], "show", picked, detail=True, hexdump=hexdump):
                raise UserError("no exchange in the capture matches")
            damaged(answered[1])
            return
    found = 0
    with Reading(common, options) as run:
        output = run.writes("show", detail=True, hexdump=hexdump)
        for event in run.events():
            if not isinstance(event, Exchange) or not wanted.matches(event) or not picked(event):
                continue
            output.exchange(event)
            found += 1
            run.took(event)
            if last is not None and event.id >= last and found >= len(ids):
                run.stop()
        output.end(Closing())
    if not found and not run.interrupted:
        raise UserError("no exchange in the capture matches")
    run.finish()


def _positions(index: Any, keep: Any, ids: set[int], correlations: set[int], packets: set[int]) -> list[int]:
    """The index's positions of the exchanges show may print: those chosen by number, correlation id or packet (a
    packet between an exchange's first and last, which `_spans_packet` then narrows), that the filter does not reject."""
    from kdissect.index.answer import candidates

    c = index.columns
    chosen = {i - 1 for i in ids if 0 < i <= len(c)}
    if correlations or packets:
        chosen.update(i for i in range(len(c)) if c.correlation[i] in correlations or any(c.first[i] <= p <= c.last[i] for p in packets))
    if not (ids or correlations or packets):
        chosen = set(range(len(c)))
    return sorted(chosen.intersection(candidates(index, keep)) if keep is not None else chosen)


def _numbers(values: list[str] | None, option: str) -> set[int]:
    items = split_list(values) or []
    if not all(item.isdigit() for item in items):
        raise UserError(f"{option} {','.join(items)}: give numbers")
    return {int(item) for item in items}


def _spans_packet(exchange: Any, numbers: set[int]) -> bool:
    for message in (exchange.request, exchange.response):
        if message is not None and any(message.frame.first_packet <= p <= message.frame.last_packet for p in numbers):
            return True
    return False
