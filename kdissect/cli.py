"""The `kdissect` command: the typer app wiring the commands of commands/, its help, and the one place errors
become exit codes.

Exit codes (README): 0 clean; 1 the capture lost bytes (`Diagnostic.lost`: a truncated file, a gap in a TCP
stream) and the output says what is missing, or the output cannot be written (a full disk, an I/O
error), in one line; 2 a mistake the user can fix (a missing file, a bad option), in one line on stderr, never a
traceback; 130 interrupted by Ctrl-C after writing what was decoded.
"""

from __future__ import annotations

import copy
import gc
import os
import sys
from typing import Annotated, Any, NoReturn, Optional

import typer

from kdissect import __version__
from kdissect.commands.anonymize import anonymize
from kdissect.commands.browse import browse
from kdissect.commands.doctor import doctor
from kdissect.commands.live import live
from kdissect.commands.options import ExitStatus, PipeClosed, UserError
from kdissect.commands.read import read
from kdissect.commands.records import records
from kdissect.commands.report import report
from kdissect.commands.schema import schema
from kdissect.commands.schemas import schemas
from kdissect.commands.show import show
from kdissect.commands.spark import spark
from kdissect.commands.sql import sql
from kdissect.commands.stats import stats
from kdissect.commands.tables import tables
from kdissect.printable import printable

app = typer.Typer(
    name="kdissect",
    help="A Kafka wire-protocol dissector: captures in, Kafka requests and responses out.",
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

GC_YOUNG = 50_000
"""Allocations between young-generation collections (Python's default is 700). A capture of many connections
keeps millions of objects alive, each connection's with reference cycles, and collecting every 700 allocations
made a 7 MB SYN flood take 35 s instead of 8 (benchmarks/bench_memory.py). Measured: without it, `kdissect read
--json -q --jobs 1` of bench_memory.py's syn-flood family at --scale 0.3 (30,000 SYNs) takes 1.59x the CPU time
(whole processes, 5 alternated pairs, median)."""
EXIT_USAGE = 2
EXIT_INTERNAL = 3


def _version(value: bool) -> None:
    if value:
        print(f"kdissect {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = None,
) -> None:
    """A Kafka wire-protocol dissector: captures in, Kafka requests and responses out."""


PANELS = ("Arguments", "Input", "Filters", "Output", "Limits", "Options")
"""The order of the help's sections; options.py names each shared option's section (its `rich_help_panel`)."""
METAVARS = {"int": "N", "float": "N", "path": "FILE", "str": "TEXT"}
"""What a value is called in the help when its option does not say, by its click type's name."""


class GroupedHelp(typer.core.TyperCommand):
    """Plain-text help with the options in sections (input, filters, output, limits) and values named for people."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            if param.param_type_name == "option" and not param.is_flag and param.metavar is None:  # type: ignore[attr-defined]  # an option: click.Option has is_flag
                kind = param.type.name  # a list that splits `a,b` says so in its own metavar
                param.metavar = METAVARS.get(kind, kind.upper())
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                sections.setdefault("Arguments", []).append((param.metavar or param.name.upper(), record[1]))  # type: ignore[union-attr]  # click names every argument
            else:
                sections.setdefault(getattr(param, "rich_help_panel", None) or "Options", []).append(record)
        for panel in sorted(sections, key=lambda p: PANELS.index(p) if p in PANELS else len(PANELS)):
            with formatter.section(panel):
                formatter.write_dl(sections[panel])


for command in (read, show, stats, doctor, report, records, browse, anonymize, live, tables, sql, spark, schema, schemas):
    app.command(cls=GroupedHelp)(command)


def _command(argv: list[str]) -> Any:
    """The click command typer makes of the app: of its one command named first (making all fourteen costs about 8 ms
    of every start), or of all of them for anything else (the help, completion, a mistyped name). Measured when there
    were nine: making all nine made `kdissect schema` take 1.04x the CPU time and `kdissect read
    captures/client-confluent.pcap` 1.03x and 1.05x in two runs (whole processes, 25 alternated pairs each, medians)."""
    named = [info for info in app.registered_commands if argv and info.callback is not None and info.callback.__name__ == argv[0]]
    if not named:
        return typer.main.get_command(app)
    one = copy.copy(app)
    one.registered_commands = named
    return typer.main.get_command(one)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the app and turns every user-fixable failure into one line and exit code 2."""
    gc.set_threshold(GC_YOUNG, 20, 20)
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        argv = ["--help"]  # bare `kdissect`: the help, as an answer rather than an error
    command = _command(argv)
    try:
        status = command.main(args=argv, prog_name="kdissect", standalone_mode=False)
    except UserError as exc:
        _fail(str(exc), getattr(exc, "exit_code", EXIT_USAGE))
    except ExitStatus as exc:
        if exc.message:
            print(f"kdissect: {printable(exc.message)}", file=sys.stderr)
        _exit(exc.code)
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
            print(
                f"kdissect: internal error: {type(exc).__name__}: {printable(str(exc))} (please report it; KDISSECT_DEBUG=1 shows "
                "the traceback)",
                file=sys.stderr,
            )
            _exit(EXIT_INTERNAL)
        context = getattr(exc, "ctx", None)
        path = getattr(context, "command_path", "kdissect") or "kdissect"
        hint = f" (see '{path} --help')" if type(exc).__name__ != "ClickException" else ""
        _fail(f"{exc.format_message()}{hint}")
    _exit(status if isinstance(status, int) else 0)  # typer returns 130 for a KeyboardInterrupt it caught


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    print(f"kdissect: error: {printable(message)}", file=sys.stderr)
    _exit(code)


def _exit(code: int | None) -> NoReturn:
    """Exit, quietly even when a reader such as `head` has closed the pipe."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a closed pipe, or output that could not be written and was told already
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code or 0)
