"""`kdissect tables`: captures into the Spark job's tables on this machine, without a JVM (pipeline/local.py);
cli.py registers `tables` as the command."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any, Optional

import typer

from kdissect.commands.options import Common, ExitStatus, UserError, takes
from kdissect.commands.spark import job_options, refuse_numbered


@takes("port", "filters", "quiet", "spec_dir", "key", "tls_keylog", helps={"quiet": "No progress lines on standard error."})
def tables(
    common: Common,
    captures: Annotated[
        list[str],
        typer.Argument(help="Captures: files, globs and directories (read recursively).", show_default=False),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Directory to write the tables under: exchanges/, records/, diagnostics/, findings/.",
            show_default=False,
        ),
    ],
    jobs: Annotated[
        Optional[int],
        typer.Option(
            "--jobs",
            metavar="N",
            help="Processes to read the captures with: a file of 8 MB or more shared by connection, smaller ones dealt "
            "out whole (default, and 0: the cores available; the tables are the same).",
            rich_help_panel="Limits",
        ),
    ] = None,
) -> None:
    """Dissect captures into the tables `kdissect spark` writes (exchanges, records, diagnostics, findings; docs/pipeline.md),
    on this machine, without Spark or Java. A filter keeps only the exchanges it matches (with their records and
    diagnostics); the findings judge every exchange, their evidence restricted to what the filter shows."""
    from kdissect.commands import jobs as split
    from kdissect.commands.signals import Stopper
    from kdissect.pipeline.inputs import InputError
    from kdissect.pipeline.job import JobError
    from kdissect.pipeline.local import LocalJob, Stopped, WorkerFailed, captures_of, check_out
    from kdissect.views.console import make_console
    from kdissect.views.spark_summary import print_summary

    need_tables_extra("pyarrow")
    refuse_numbered(common)
    processes = split.processes(jobs)
    started = time.perf_counter()
    errors = make_console(sys.stderr)

    def progress(line: str) -> None:
        if not common.quiet:
            errors.print(f"[dim]{time.perf_counter() - started:6.1f}s[/dim] ", end="", markup=True, highlight=False)
            errors.print(line, markup=False, highlight=False)

    if not captures:
        raise UserError("name at least one capture, glob or directory")
    try:
        check_out(out)
        paths, skipped = captures_of(captures)
    except (InputError, JobError) as exc:
        raise UserError(str(exc)) from None
    config: dict[str, Any] = {"ports": sorted(common.options.ports), **job_options(common)}
    stopper = Stopper()
    stopper.install()
    try:
        job = LocalJob(paths, out, config, progress, lambda path: split.splits(path, processes), processes)
        totals = job.run(stopping=lambda: stopper.stopping is not None)
    except Stopped:
        raise ExitStatus(stopper.exit_code, f"interrupted ({stopper.stopping}): no tables were left under {out}") from None
    except WorkerFailed as exc:
        raise ExitStatus(1, f"{exc}: no tables were left under {out}") from None
    finally:
        stopper.restore()
    totals.skipped = skipped
    progress("done")
    print_summary(totals, out, time.perf_counter() - started, "kdissect tables")


def need_tables_extra(*modules: str) -> None:
    """A UserError naming the extra to install when pyarrow or DuckDB is missing."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise UserError(f"{' and '.join(missing)} missing: pip install 'kdissect[tables]'")
