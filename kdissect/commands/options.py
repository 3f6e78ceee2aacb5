"""What every command shares: the typed options, how they become the core's options and the filter,
where output goes, and the one-line errors users see."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import typer


class UserError(Exception):
    """A problem the user can fix; printed as one line."""


class PipeClosed(Exception):
    """The reader of our output went away (`| head`): stop quietly. Not an OSError, so typer lets it through."""


CaptureArg = Annotated[Path, typer.Argument(help="A pcap or pcapng capture, plain or compressed (gzip, zstd, lz4).", show_default=False)]
PortOpt = Annotated[
    Optional[list[int]],
    typer.Option("--port", "-p", help="A Kafka broker port (repeatable; default 9092). Other ports are recognised by their traffic."),
]
JsonOpt = Annotated[bool, typer.Option("--json", "-j", help="Write NDJSON, one object per exchange (layout: docs/json.md).")]
OutputOpt = Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of standard output.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
NoDecodeOpt = Annotated[bool, typer.Option("--headers-only", help="Read headers only: pair and time exchanges without decoding bodies (faster).")]
NoReorderOpt = Annotated[bool, typer.Option("--no-reorder", help="Do not hold out-of-order TCP segments: any hole becomes a gap at once.")]
def _limit_names() -> str:
    from dataclasses import fields

    from kdissect.limits import Limits

    return ", ".join(f"{f.name} ({f.default})" for f in fields(Limits))


LimitOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--limit",
        help="Change a resource bound, NAME=VALUE (repeatable; VALUE may end in KiB, MiB or GiB), e.g. "
        f"max_frame_size=1GiB. Bounds and defaults: {_limit_names()}.",
    ),
]
SecretsOpt = Annotated[bool, typer.Option("--show-secrets", help="Show SASL passwords, proofs and tokens instead of redacting them.")]
ApiOpt = Annotated[Optional[str], typer.Option("--api", help="Only these APIs: names or keys, comma-separated (Produce,Fetch or 0,1).")]
VersionOpt = Annotated[Optional[str], typer.Option("--version", "-V", help="Only these API versions: N, N-M, or a comma-separated list.")]
TopicOpt = Annotated[Optional[list[str]], typer.Option("--topic", help="Only exchanges naming this topic (repeatable).")]
ClientIdOpt = Annotated[Optional[list[str]], typer.Option("--client-id", help="Only exchanges from this client id (repeatable).")]
GroupOpt = Annotated[Optional[list[str]], typer.Option("--group", help="Only exchanges naming this consumer group (repeatable).")]
ErrorsOpt = Annotated[bool, typer.Option("--errors", help="Only exchanges with an error code or a diagnostic.")]
ConnectionOpt = Annotated[Optional[str], typer.Option("--connection", help="Only these connections: ids as listed in the flows table, comma-separated.")]
MinLatencyOpt = Annotated[Optional[float], typer.Option("--min-latency", help="Only exchanges at least this slow, in milliseconds.", min=0)]

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def make_limits(settings: list[str] | None):
    """`Limits` with the user's NAME=VALUE settings applied; a wrong name or value is a UserError."""
    from dataclasses import fields, replace

    from kdissect.limits import DEFAULT_LIMITS

    changes = {}
    known = {f.name for f in fields(DEFAULT_LIMITS)}
    for setting in settings or ():
        name, _, text = setting.partition("=")
        unit = next((u for u in UNITS if text.endswith(u)), None)
        try:
            value = int(text[: -len(unit)] if unit else text) * (UNITS[unit] if unit else 1)
        except ValueError:
            value = -1
        if name not in known or value < 1:
            raise UserError(f"--limit {setting}: give NAME=VALUE with a positive VALUE and NAME one of {', '.join(sorted(known))}")
        changes[name] = value
    return replace(DEFAULT_LIMITS, **changes)


def make_options(ports: list[int] | None, headers_only: bool, no_reorder: bool, limits: list[str] | None, show_secrets: bool, spans: bool = False):
    from kdissect.dissector import DEFAULT_PORTS, Options

    return Options(
        ports=frozenset(ports) if ports else DEFAULT_PORTS,
        limits=make_limits(limits),
        reorder=not no_reorder,
        decode=not headers_only,
        show_secrets=show_secrets,
        spans=spans,
    )


def make_filter(api, version, topic, client_id, group, errors, connection, min_latency):
    from kdissect.views import filters

    try:
        return filters.make_filter(api, version, topic, client_id, group, errors, connection, min_latency)
    except filters.FilterError as exc:
        raise UserError(str(exc)) from None


@contextmanager
def open_output(path: Path | None) -> Iterator[Any]:
    if path is None:
        try:
            yield sys.stdout
            sys.stdout.flush()
        except BrokenPipeError:
            raise PipeClosed from None
        return
    try:
        stream = open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: {exc.strerror or exc}") from None
    with stream:
        yield stream


def open_source(path: Path):
    from kdissect.capture import CaptureError, open_capture

    try:
        return open_capture(path)
    except CaptureError as exc:
        raise UserError(str(exc)) from None


def packets(capture, quiet: bool):
    """The capture's packets, with a progress bar on stderr when it is a terminal."""
    if quiet or not sys.stderr.isatty():
        yield from capture.packets()
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    done, total = capture.progress()
    with Progress(
        TextColumn("[bold]reading"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
        console=Console(stderr=True), transient=True,
    ) as progress:
        task = progress.add_task("read", total=total or None)
        for i, packet in enumerate(capture.packets()):
            if not i & 0xFFF:
                progress.update(task, completed=capture.progress()[0])
            yield packet
