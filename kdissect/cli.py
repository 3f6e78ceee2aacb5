"""The `kdissect` command: typer commands over the core, the decoders and the views.

Errors the user can fix (a missing file, a bad option) end in one line on stderr and exit code 2; kdissect
never shows a traceback for bad input.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, Optional

import typer

from kdissect import __version__
from kdissect.commands.options import (
    ApiOpt,
    CaptureArg,
    ClientIdOpt,
    ConnectionOpt,
    ErrorsOpt,
    GroupOpt,
    JsonOpt,
    LimitOpt,
    MinLatencyOpt,
    NoDecodeOpt,
    NoReorderOpt,
    OutputOpt,
    PipeClosed,
    PortOpt,
    QuietOpt,
    SecretsOpt,
    TopicOpt,
    UserError,
    VersionOpt,
    make_filter,
    make_options,
    open_output,
    open_source,
    packets,
)

app = typer.Typer(
    name="kdissect",
    help="A Kafka wire-protocol dissector: captures in, Kafka requests and responses out.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_USAGE = 2
EXIT_INTERNAL = 3


def _version(value: bool) -> None:
    if value:
        print(f"kdissect {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None,
) -> None:
    """A Kafka wire-protocol dissector: captures in, Kafka requests and responses out."""


@app.command()
def read(
    capture: CaptureArg,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    port: PortOpt = None,
    api: ApiOpt = None,
    version: VersionOpt = None,
    topic: TopicOpt = None,
    client_id: ClientIdOpt = None,
    group: GroupOpt = None,
    errors: ErrorsOpt = False,
    connection: ConnectionOpt = None,
    min_latency: MinLatencyOpt = None,
    all_events: Annotated[bool, typer.Option("--all-events", help="With --json, also write stream notices and connection summaries.")] = False,
    headers_only: NoDecodeOpt = False,
    no_reorder: NoReorderOpt = False,
    limit: LimitOpt = None,
    show_secrets: SecretsOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Read a capture: every Kafka exchange as it completes, then flows, errors and diagnostics."""
    from kdissect.dissector import make_dissector
    from kdissect.views.sink import EventSink

    options = make_options(port, headers_only, no_reorder, limit, show_secrets)
    wanted = make_filter(api, version, topic, client_id, group, errors, connection, min_latency)
    with open_source(capture) as source, open_output(output) as stream:
        dissector = make_dissector(options)
        if json_out:
            from kdissect.views.json_lines import JsonLinesWriter

            sink = EventSink(wanted, writer=JsonLinesWriter(stream), all_events=all_events)
        else:
            from kdissect.views.console import make_console
            from kdissect.views.terminal import ReadView

            view = ReadView(make_console(stream))
            view.title(str(capture), source.format, source.compression)
            sink = EventSink(wanted, view=view)
        for event in dissector.run(packets(source, quiet)):
            sink.add(event)
        if not json_out:
            view.closing(sink.summary, dissector.counters, source.linktypes(), source.diagnostics())


@app.command()
def show(
    capture: CaptureArg,
    exchange: Annotated[Optional[list[int]], typer.Option("--exchange", "-e", help="Exchange number as `read` lists it (repeatable).")] = None,
    correlation_id: Annotated[Optional[list[int]], typer.Option("--correlation-id", "-c", help="Exchanges with this correlation id (repeatable; combine with --connection).")] = None,
    frame: Annotated[Optional[list[int]], typer.Option("--frame", "-f", help="The exchange whose request or response spans this packet number (repeatable).")] = None,
    hexdump: Annotated[bool, typer.Option("--hex", help="Show each field's offset and bytes, and each frame's hex dump.")] = False,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    port: PortOpt = None,
    api: ApiOpt = None,
    version: VersionOpt = None,
    topic: TopicOpt = None,
    client_id: ClientIdOpt = None,
    group: GroupOpt = None,
    errors: ErrorsOpt = False,
    connection: ConnectionOpt = None,
    min_latency: MinLatencyOpt = None,
    no_reorder: NoReorderOpt = False,
    limit: LimitOpt = None,
    show_secrets: SecretsOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Show exchanges in full: every field of request and response, record batches and records included."""
    from kdissect.dissector import make_dissector
    from kdissect.events import Exchange

    options = make_options(port, False, no_reorder, limit, show_secrets, spans=hexdump)
    wanted = make_filter(api, version, topic, client_id, group, errors, connection, min_latency)
    ids, correlations, packet_numbers = set(exchange or ()), set(correlation_id or ()), set(frame or ())
    if not (ids or correlations or packet_numbers or wanted.active):
        raise UserError("say which exchanges to show: --exchange N, --correlation-id C, --frame P, or a filter such as --api")
    last = max(ids) if ids and not (correlations or packet_numbers) else None
    found = 0
    with open_source(capture) as source, open_output(output) as stream:
        if json_out:
            from kdissect.views.json_lines import JsonLinesWriter, exchange_json

            writer = JsonLinesWriter(stream)
            emit = lambda ex: writer.write(exchange_json(ex))
        else:
            from kdissect.views.console import make_console
            from kdissect.views.detail import DetailView

            console, view = make_console(stream), DetailView(hexdump)
            emit = lambda ex: console.print(view.render(ex))
        for event in make_dissector(options).run(packets(source, quiet)):
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


def _spans_packet(exchange: Any, packets: set[int]) -> bool:
    for message in (exchange.request, exchange.response):
        if message is not None and any(message.frame.first_packet <= p <= message.frame.last_packet for p in packets):
            return True
    return False


@app.command()
def stats(
    capture: CaptureArg,
    json_out: Annotated[bool, typer.Option("--json", "-j", help="Write NDJSON, one object per table (apis, topics, clients, groups, rebalances).")] = False,
    output: OutputOpt = None,
    port: PortOpt = None,
    api: ApiOpt = None,
    version: VersionOpt = None,
    topic: TopicOpt = None,
    client_id: ClientIdOpt = None,
    group: GroupOpt = None,
    errors: ErrorsOpt = False,
    connection: ConnectionOpt = None,
    min_latency: MinLatencyOpt = None,
    no_reorder: NoReorderOpt = False,
    limit: LimitOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Totals: per API and version (errors, latency percentiles), per topic and partition, per client id,
    and consumer groups with their rebalances and offset commits."""
    from kdissect.dissector import make_dissector
    from kdissect.events import Exchange
    from kdissect.views.stats import Stats, print_stats

    options = make_options(port, False, no_reorder, limit, False)
    wanted = make_filter(api, version, topic, client_id, group, errors, connection, min_latency)
    totals = Stats()
    with open_source(capture) as source, open_output(output) as stream:
        for event in make_dissector(options).run(packets(source, quiet)):
            if isinstance(event, Exchange) and wanted.matches(event):
                totals.add(event)
        if json_out:
            from kdissect.views.json_lines import LAYOUT, JsonLinesWriter

            writer = JsonLinesWriter(stream)
            for name, rows in totals.tables():
                writer.write({"type": "stats", "layout": LAYOUT, "table": name, "rows": rows})
        else:
            from kdissect.views.console import make_console

            print_stats(totals, make_console(stream))


@app.command()
def schema(
    json_out: JsonOpt = False,
    source: Annotated[Optional[str], typer.Option("--source", help="Print the generated decoder of API[:VERSION[:request|response]], e.g. Fetch:13:response.")] = None,
) -> None:
    """What kdissect decodes: every API key, its versions, and where flexible versions start."""
    from kdissect.views.schema_table import print_schema, print_source

    if source:
        print_source(source)
    else:
        print_schema(json_out)


from kdissect.commands.live import run_live  # noqa: E402  (commands in their own modules, registered here)
from kdissect.commands.spark import spark  # noqa: E402

app.command("live")(run_live)
app.command("spark")(spark)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the app and turns every user-fixable failure into one line and exit code 2."""
    command = typer.main.get_command(app)
    try:
        command.main(args=argv, prog_name="kdissect", standalone_mode=False)
    except UserError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _exit(130)
    except (BrokenPipeError, PipeClosed):
        _exit(0)
    except Exception as exc:
        # typer's parsing errors (its vendored click's UsageError, Exit, Abort): known by their shape
        if hasattr(exc, "exit_code") and not hasattr(exc, "format_message"):
            _exit(exc.exit_code)
        if not hasattr(exc, "format_message"):
            if os.environ.get("KDISSECT_DEBUG"):
                raise
            print(f"kdissect: internal error: {type(exc).__name__}: {exc} (please report it; KDISSECT_DEBUG=1 shows the traceback)", file=sys.stderr)
            _exit(EXIT_INTERNAL)
        context = getattr(exc, "ctx", None)
        path = getattr(context, "command_path", "kdissect") or "kdissect"
        hint = f" (see '{path} --help')" if type(exc).__name__ != "ClickException" else ""
        _fail(f"{exc.format_message()}{hint}")
    _exit(0)


def _fail(message: str) -> None:
    print(f"kdissect: error: {message}", file=sys.stderr)
    _exit(EXIT_USAGE)


def _exit(code: int | None) -> None:
    """Exit, quietly even when a reader such as `head` has closed the pipe."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code or 0)
