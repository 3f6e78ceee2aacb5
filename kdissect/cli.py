"""The `kdissect` command: the typer app wiring the commands of commands/, and the one place errors become
exit codes.

Errors the user can fix (a missing file, a bad option) end in one line on stderr and exit code 2; output that
cannot be written (a full disk, an I/O error) in one line and exit code 1; kdissect never shows a traceback for
bad input.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from kdissect import __version__
from kdissect.commands.live import live
from kdissect.commands.options import PipeClosed, UserError
from kdissect.commands.read import read
from kdissect.commands.schema import schema
from kdissect.commands.show import show
from kdissect.commands.spark import spark
from kdissect.commands.stats import stats

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
    version: Annotated[
        Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = None,
) -> None:
    """A Kafka wire-protocol dissector: captures in, Kafka requests and responses out."""


for command in (read, show, stats, live, spark, schema):
    app.command()(command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the app and turns every user-fixable failure into one line and exit code 2."""
    command = typer.main.get_command(app)
    try:
        command.main(args=argv, prog_name="kdissect", standalone_mode=False)
    except UserError as exc:
        _fail(str(exc), getattr(exc, "exit_code", EXIT_USAGE))
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
                f"kdissect: internal error: {type(exc).__name__}: {exc} (please report it; KDISSECT_DEBUG=1 shows the traceback)",
                file=sys.stderr,
            )
            _exit(EXIT_INTERNAL)
        context = getattr(exc, "ctx", None)
        path = getattr(context, "command_path", "kdissect") or "kdissect"
        hint = f" (see '{path} --help')" if type(exc).__name__ != "ClickException" else ""
        _fail(f"{exc.format_message()}{hint}")
    _exit(0)


def _fail(message: str, code: int = EXIT_USAGE) -> None:
    print(f"kdissect: error: {message}", file=sys.stderr)
    _exit(code)


def _exit(code: int | None) -> None:
    """Exit, quietly even when a reader such as `head` has closed the pipe."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a closed pipe, or output that could not be written and was told already
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code or 0)
