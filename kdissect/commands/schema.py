"""`kdissect schema`: what kdissect decodes, and the generated code that decodes it."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kdissect.commands.options import UserError


def schema(
    json_out: Annotated[bool, typer.Option("--json", "-j", help="Write one JSON object per API key.")] = False,
    source: Annotated[
        Optional[str],
        typer.Option("--source", help="Print the generated decoder of API[:VERSION[:request|response]], e.g. Fetch:13:response."),
    ] = None,
) -> None:
    """What kdissect decodes: every API key, its versions, and where flexible versions start."""
    from kdissect.views.schema_table import print_schema, print_source

    if source:
        print_source(*_target(source))
    else:
        print_schema(json_out)


def _target(spec: str) -> tuple[int, int, str]:
    """API[:VERSION[:request|response]] as (API key, version, direction); the newest version by default."""
    from kdissect.filter import FilterError
    from kdissect.filter.shorthands import parse_apis
    from kdissect.schema import APIS
    from kdissect.views.schema_table import ranges

    parts = spec.split(":")
    try:
        key = parse_apis(parts[0])[0]
    except FilterError as exc:
        raise UserError(f"{exc.message}: give API[:VERSION[:request|response]], e.g. Fetch:13:response") from None
    api = APIS.get(key)
    if api is None:
        raise UserError(f"API key {key} is unknown")
    version = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else api.max_version
    direction = parts[2] if len(parts) > 2 else "request"
    if direction not in ("request", "response") or version not in api.versions:
        raise UserError(f"give API[:VERSION[:request|response]] with a version in {ranges(api.versions)}")
    return key, version, direction
