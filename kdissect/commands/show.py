"""`kdissect show`: chosen exchanges in full, every field of request and response, optionally with bytes."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Optional

import typer

from kdissect.commands.options import READS, Common, UserError, split_list, takes
from kdissect.commands.reading import Reading


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
    found = 0
    with Reading(common, replace(common.options, spans=hexdump)) as run:
        output = run.writes("show", detail=True, hexdump=hexdump)
        for event in run.events():
            if not isinstance(event, Exchange) or not wanted.matches(event):
                continue
            if chosen and not (
                event.id in ids
                or event.correlation_id in correlations
                or _spans_packet(event, packet_numbers)
                or (stable and exchange_id(event) in stable)
            ):
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
