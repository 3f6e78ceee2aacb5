"""`kdissect schema`: what kdissect decodes, the generated code that decodes it, and users' spec files checked."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, cast

import typer

from kdissect.commands.options import Common, UserError, takes, user_specs

if TYPE_CHECKING:
    from kdissect.decode.body import Direction


@takes("spec_dir", "key", install=False)
def schema(
    common: Common,
    json_out: Annotated[bool, typer.Option("--json", "-j", help="Write one JSON object per API key.")] = False,
    source: Annotated[
        Optional[str],
        typer.Option(
            "--source",
            metavar="API[:VERSION[:SIDE]]",
            help="Print the generated decoder of API[:VERSION[:request|response]], e.g. Fetch:13:response.",
        ),
    ] = None,
    check: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--check",
            metavar="DIR",
            help="Check the spec files of this folder (repeatable; with --key for their API keys): every problem on a line "
            "of its own, with file, line and field; exit status 2 if there is any.",
        ),
    ] = None,
) -> None:
    """What kdissect decodes: every API key, its versions, and where flexible versions start. With --spec-dir, what
    the folder's specs add, and from which files."""
    from kdissect.views.schema_table import print_loaded, print_schema, print_source

    if check:
        _check([*check, *common.spec_dirs], common.keys)
        return
    from kdissect.schema import catalog_with

    specs = user_specs(list(common.spec_dirs), list(common.keys))
    catalog = catalog_with(specs.definitions if specs else ())
    if source:
        print_source(catalog, *_target(source, catalog))
    elif specs is not None:
        print_loaded(specs, json_out)
    else:
        print_schema(catalog, json_out)


def _check(folders: list[Path], keys: tuple[str, ...]) -> None:
    """Every problem of the folders' spec files, one per line on stdout, then a UserError counting them (exit 2)."""
    from kdissect.printable import printable
    from kdissect.schema.user_specs import from_folders

    specs = from_folders(folders, keys)
    for problem in specs.problems:
        print(printable(str(problem)))  # a spec's names are the writer's: shown, never acted on
    files = f"{len(specs.files)} spec file{'s' if len(specs.files) != 1 else ''}"
    if specs.problems:
        count = len(specs.problems)
        sys.stdout.flush()
        raise UserError(f"{count} problem{'s' if count != 1 else ''} in {files}")
    print(f"{files}, {len(specs.apis)} API{'s' if len(specs.apis) != 1 else ''}: no problems")


def _target(spec: str, catalog: Any) -> tuple[int, int, Direction]:
    """API[:VERSION[:request|response]] as (API key, version, direction); the newest version by default."""
    from kdissect.filter import FilterError
    from kdissect.filter.shorthands import parse_apis
    from kdissect.views.schema_table import ranges

    parts = spec.split(":")
    try:
        key = parse_apis(parts[0], catalog)[0]
    except FilterError as exc:
        raise UserError(f"{exc.message}: give API[:VERSION[:request|response]], e.g. Fetch:13:response") from None
    api = catalog.api(key)
    if api is None:
        raise UserError(f"API key {key} is unknown")
    version = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else api.max_version
    direction = parts[2] if len(parts) > 2 else "request"
    if direction not in ("request", "response") or version not in api.versions:
        raise UserError(f"give API[:VERSION[:request|response]] with a version in {ranges(api.versions)}")
    return key, version, cast("Direction", direction)  # one of the two, checked above
