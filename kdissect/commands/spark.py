"""`kdissect spark`: capture sets into tables on Spark; cli.py registers `spark` as the command."""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer

from kdissect.commands.options import PortOpt, QuietOpt, UserError
from kdissect.pipeline.splits import DEFAULT_SPLIT


def spark(
    captures: Annotated[list[str], typer.Argument(help="Captures: files, globs, directories, or URIs Spark can list (hdfs://, s3a://, ...).", show_default=False)],
    out: Annotated[str, typer.Option("--out", help="Directory or URI to write the tables under: exchanges/, records/, diagnostics/.", show_default=False)],
    master: Annotated[str, typer.Option("--master", help="Spark master URL: local[*], local[N], spark://HOST:7077, yarn, k8s://...")] = "local[*]",
    fmt: Annotated[str, typer.Option("--format", help="Table format: parquet, orc or json.")] = "parquet",
    port: PortOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Dissect captures on Spark into tables to query (exchanges, records, diagnostics; docs/pipeline.md).
    Local Spark by default, a cluster with --master. Needs pip install 'kdissect[spark]' and Java 17."""
    from kdissect.dissector import DEFAULT_PORTS

    run_spark(captures, out, master, fmt, frozenset(port) if port else DEFAULT_PORTS, quiet)


def run_spark(
    captures: list[str],
    out: str,
    master: str,
    fmt: str,
    ports: frozenset[int],
    quiet: bool,
    split_size: int = DEFAULT_SPLIT,
) -> None:
    """Dissect captures on Spark into tables under `out`; progress on stderr, the summary table on stdout."""
    from kdissect.pipeline.inputs import InputError, expand, is_uri
    from kdissect.pipeline.job import FORMATS, JobError, run
    from kdissect.pipeline.session import SparkUnavailable, start
    from kdissect.views.console import make_console

    started = time.perf_counter()
    errors = make_console(sys.stderr)

    def progress(line: str) -> None:
        if not quiet:
            errors.print(f"[dim]{time.perf_counter() - started:6.1f}s[/dim] {line}", markup=True, highlight=False)

    if not captures:
        raise UserError("name at least one capture, glob or directory")
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    files = None
    if not any(is_uri(c) for c in captures):
        try:
            files = expand(captures)  # local inputs are checked before Spark takes seconds to start
        except InputError as exc:
            raise UserError(str(exc)) from None
    progress(f"starting Spark ({master})")
    try:
        spark = start(master)
    except SparkUnavailable as exc:
        raise UserError(str(exc)) from None
    try:
        totals = run(spark, captures, out, fmt, ports, split_size=split_size, progress=progress, files=files)
    except (InputError, JobError) as exc:
        raise UserError(str(exc)) from None
    finally:
        spark.stop()
    progress("done")
    print_summary(totals, out, time.perf_counter() - started)


def print_summary(totals, out: str, seconds: float) -> None:
    from rich.table import Table

    from kdissect.views.console import make_console

    console = make_console(sys.stdout)
    table = Table(title=f"kdissect spark → {out}", title_justify="left")
    table.add_column("files", justify="right")
    table.add_column("packets", justify="right")
    table.add_column("connections", justify="right")
    table.add_column("exchanges", justify="right")
    table.add_column("records", justify="right")
    table.add_column("diagnostics", justify="right")
    table.add_column("time", justify="right")
    table.add_row(
        f"{totals.files:,}",
        f"{totals.packets:,}",
        f"{totals.connections:,}",
        f"{totals.exchanges:,}",
        f"{totals.records:,}",
        f"{totals.diagnostics:,}",
        f"{seconds:.1f} s",
    )
    console.print(table)
    if totals.skipped:
        console.print(f"{len(totals.skipped)} file(s) in the named directories were not captures and were skipped.")
