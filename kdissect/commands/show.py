"""`kdissect show`: chosen exchanges in full, every field of request and response, optionally with bytes."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Optional

import typer

from kdissect.commands.options import CAPTURE, Common, UserError, open_source, packets, takes


@takes("input", "filters", "output", "secrets")
def show(
    common: Common,
    capture: CAPTURE,
    exchange: Annotated[
        Optional[list[int]], typer.Option("--exchange", "-e", help="Exchange number as `read` lists it (repeatable).")
    ] = None,
    correlation_id: Annotated[
        Optional[list[int]],
        typer.Option("--correlation-id", "-c", help="Exchanges with this correlation id (repeatable; combine with --connection)."),
    ] = None,
    frame: Annotated[
        Optional[list[int]],
        typer.Option("--frame", "-f", help="The exchange whose request or response spans this packet number (repeatable)."),
    ] = None,
    hexdump: Annotated[bool, typer.Option("--hex", help="Show each field's offset and bytes, and each frame's hex dump.")] = False,
) -> None:
    """Show exchanges in full: every field of request and response, record batches and records included."""
    from kdissect.dissector import make_dissector
    from kdissect.events import Exchange

    wanted = common.wanted
    ids, correlations, packet_numbers = set(exchange or ()), set(correlation_id or ()), set(frame or ())
    if not (ids or correlations or packet_numbers or wanted.active):
        raise UserError("say which exchanges to show: --exchange N, --correlation-id C, --frame P, or a filter such as --api")
    last = max(ids) if ids and not (correlations or packet_numbers) else None
    found = 0
    with open_source(capture) as source, common.open_output() as stream:
        if common.json:
            from kdissect.views.json_lines import JsonLinesWriter, exchange_json

            writer = JsonLinesWriter(stream)
            emit = lambda ex: writer.write(exchange_json(ex))
        else:
            from kdissect.views.console import make_console
            from kdissect.views.detail import DetailView

            console, view = make_console(stream), DetailView(hexdump, common.options.show_secrets)
            emit = lambda ex: console.print(view.render(ex))
        for event in make_dissector(replace(common.options, spans=hexdump)).run(packets(source, common.quiet)):
            if not isinstance(event, Exchange) or not wanted.matches(event):
                continue
            if (ids or correlations or packet_numbers) and not (
                event.id in ids or event.correlation_id in correlations or _spans_packet(event, packet_numbers)
            ):
                continue
            emit(event)
            found += 1
            if last is not None and event.id >= last and found >= len(ids):
                break
    if not found:
        raise UserError("no exchange in the capture matches")


def _spans_packet(exchange: Any, numbers: set[int]) -> bool:
    for message in (exchange.request, exchange.response):
        if message is not None and any(message.frame.first_packet <= p <= message.frame.last_packet for p in numbers):
            return True
    return False
