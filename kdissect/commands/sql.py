"""`kdissect sql`: SQL (DuckDB) over the tables, or over a capture's tables made once and kept in the cache."""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated

import typer

from kdissect.commands.options import Common, ExitStatus, UserError, takes
from kdissect.commands.tables import need_tables_extra


@takes("port", "quiet", helps={"quiet": "No progress lines on standard error."})
def sql(
    common: Common,
    source: Annotated[str, typer.Argument(metavar="CAPTURE|TABLES", help="A capture, or a folder of tables.")],
    text: Annotated[str, typer.Argument(metavar="QUERY", help="The query, over exchanges, records, diagnostics and findings.")],
    csv_out: Annotated[bool, typer.Option("--csv", help="Write CSV: a header line, then one line per row.")] = False,
    json_out: Annotated[bool, typer.Option("--json", "-j", help="Write NDJSON: one object per row.")] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Make a capture's tables for this query only, not kept in the cache ($KDISSECT_CACHE).")
    ] = False,
) -> None:
    """Ask SQL questions of a capture or of tables (DuckDB; docs/sql.md): a capture's tables are made once and kept
    in the cache (keyed by the file's identity, never stale), so the next query on it starts at once."""
    need_tables_extra("pyarrow", "duckdb")
    from kdissect.commands import jobs
    from kdissect.pipeline.inputs import InputError
    from kdissect.pipeline.local import WorkerFailed
    from kdissect.pipeline.sql import SqlError, is_tables, query
    from kdissect.pipeline.table_cache import tables_of
    from kdissect.views.console import make_console
    from kdissect.views.sql_result import print_result

    if csv_out and json_out:
        raise UserError("choose one of --csv and --json")
    fmt = "csv" if csv_out else "json" if json_out else "text"
    started = time.perf_counter()
    errors = make_console(sys.stderr)

    def progress(line: str) -> None:
        if not common.quiet:
            errors.print(f"{time.perf_counter() - started:6.1f}s {line}", markup=False, highlight=False)

    try:
        if is_tables(source):
            columns, rows = query(source, text)
        elif os.path.isfile(source):
            cores = jobs.available()  # a capture's tables are made by a process per core, as `kdissect tables` makes them
            config = {"ports": sorted(common.options.ports)}
            with tables_of(source, config, not no_cache, progress, lambda path: jobs.splits(path, cores)) as folder:
                columns, rows = query(folder, text)
        else:
            raise UserError(f"{source}: neither a capture nor a folder of tables")
    except (SqlError, InputError) as exc:
        raise UserError(str(exc)) from None
    except WorkerFailed as exc:
        raise ExitStatus(1, str(exc)) from None
    print_result(columns, rows, fmt)
