"""`kdissect spark`: capture sets into tables on Spark; cli.py registers `spark` as the command."""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any

import typer

from kdissect.commands.options import Common, UserError, takes


@takes(
    "port",
    "filters",
    "quiet",
    "spec_dir",
    "key",
    "tls_keylog",
    "schemas",
    "schema_registry",
    helps={"quiet": "No progress lines on standard error."},
)
def spark(
    common: Common,
    captures: Annotated[
        list[str],
        typer.Argument(help="Captures: files, globs, directories, or URIs Spark can list (hdfs://, s3a://, ...).", show_default=False),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Directory or URI to write the tables under: exchanges/, records/, diagnostics/.",
            show_default=False,
        ),
    ],
    master: Annotated[
        str, typer.Option("--master", metavar="URL", help="Spark master URL: local[*], local[N], spark://HOST:7077, yarn, k8s://...")
    ] = "local[*]",
    fmt: Annotated[str, typer.Option("--format", metavar="parquet|orc|json", help="Table format.")] = "parquet",
) -> None:
    """Dissect captures on Spark into tables to query (exchanges, records, diagnostics, findings; docs/pipeline.md).
    Local Spark by default, a cluster with --master. Needs pip install 'kdissect[spark]' and Java 17.
    A filter keeps only the exchanges it matches (with their records and diagnostics), evaluated on the executors."""
    refuse_numbered(common)
    run_spark(
        captures,
        out,
        master,
        fmt,
        common.options.ports,
        common.quiet,
        filter_text=common.wanted.text,
        specs=common.specs,
        tls_keylog=keylog_text(common),
        values=common.values,
    )


def refuse_numbered(common: Common) -> None:
    """A UserError for a filter on `id` or `connection`, which the tables number their own way."""
    numbered = sorted(common.wanted.fields & {"id", "connection"})
    if numbered:
        raise UserError(
            f"the tables cannot be filtered on {' or '.join(numbered)}: each connection is dissected apart, and they "
            "number exchanges and connections their own way (exchange_id, connection_id); select on those columns instead"
        )


def job_options(common: Common) -> dict[str, Any]:
    """What the job's configuration takes from the shared options (pipeline/config.py): the filter's text, the
    users' specs as their files' text, the TLS key log."""
    return _options(common.wanted.text, common.specs, keylog_text(common))


def keylog_text(common: Common) -> bytes:
    """The key log's lines, for executors that cannot share the file this process read (`tls.keylog.KeyLogFile`)."""
    from kdissect.tls.keylog import KeyLog

    keylog = common.options.tls_keylog
    return keylog.text() if isinstance(keylog, KeyLog) else keylog


def _options(filter_text: str, specs: Any, tls_keylog: bytes) -> dict[str, Any]:
    options: dict[str, Any] = {"filter": filter_text} if filter_text else {}
    if specs:
        options |= {"spec_files": [[f.path, f.text] for f in specs.files], "spec_keys": list(specs.keys)}
    if tls_keylog:
        options["tls_keylog"] = tls_keylog
    return options


def run_spark(
    captures: list[str],
    out: str,
    master: str,
    fmt: str,
    ports: frozenset[int],
    quiet: bool,
    filter_text: str = "",
    specs: Any = None,
    tls_keylog: bytes = b"",
    values: Any = None,
) -> None:
    """Dissect captures on Spark into tables under `out`; progress on stderr, the summary table on stdout.

    The users' specs (`schema.user_specs.UserSpecs`) go to the executors as their files' text, in the job's config; so
    do the schemas of `values` (a `values.reader.ValueReader`: --schemas) and the registry it asks.
    """
    from kdissect.pipeline.session import SparkUnavailable, check_master, check_pyspark, start

    try:
        check_pyspark()  # before the job's modules, which import pyarrow
    except SparkUnavailable as exc:
        raise UserError(str(exc)) from None
    from kdissect.pipeline.inputs import InputError, expand, is_uri
    from kdissect.pipeline.job import FORMATS, JobError, check_local_out, run
    from kdissect.views.console import make_console
    from kdissect.views.spark_summary import print_summary

    started = time.perf_counter()
    errors = make_console(sys.stderr)

    def progress(line: str) -> None:
        if not quiet:
            errors.print(f"[dim]{time.perf_counter() - started:6.1f}s[/dim] {line}", markup=True, highlight=False)

    if not captures:
        raise UserError("name at least one capture, glob or directory")
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    try:
        check_master(master)
        if "://" not in out:
            check_local_out(os.path.abspath(out))
    except (SparkUnavailable, JobError) as exc:
        raise UserError(str(exc)) from None
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
    options = _options(filter_text, specs, tls_keylog)
    if values is not None:
        from kdissect.values.schemas import schema_record

        options |= {"schemas": [schema_record(s) for s in values.book]}
        if values.registry_url:
            options |= {"schema_registry": values.registry_url}
    try:
        totals = run(spark, captures, out, fmt, ports, progress=progress, options=options, files=files)
    except (InputError, JobError) as exc:
        raise UserError(str(exc)) from None
    finally:
        spark.stop()
    progress("done")
    print_summary(totals, out, time.perf_counter() - started, "kdissect spark")
