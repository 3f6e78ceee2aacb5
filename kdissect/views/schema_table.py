"""`kdissect schema`: what kdissect can decode, and the generated code that decodes it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kdissect.decode.decoder import Decoder
from kdissect.printable import printable
from kdissect.schema import Catalog
from kdissect.schema.user_specs import UserSpecs
from kdissect.views.json_lines import LAYOUT

if TYPE_CHECKING:
    from kdissect.decode.body import Direction


def ranges(versions: tuple[int, ...]) -> str:
    out: list[str] = []
    start: int | None = versions[0]
    for prev, cur in zip(versions, versions[1:] + (None,)):
        if cur != prev + 1 if cur is not None else True:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return ",".join(out)


def rows(catalog: Catalog) -> list[dict]:
    out = []
    for key, api in catalog.apis.items():
        flexible = [v for v in api.versions if api.flexible(v)]
        older = [v for v in api.versions if api.requests[0].source != "trunk" or v not in api.requests[0].valid]
        out.append(
            {
                "type": "api",
                "layout": LAYOUT,
                "api_key": key,
                "name": api.name,
                "versions": ranges(api.versions),
                "min_version": api.min_version,
                "max_version": api.max_version,
                "flexible_from": flexible[0] if flexible else None,
                "removed_in_kafka_4": ranges(tuple(older)) if older else None,
                "unstable": [m.name for m in api.requests if m.latest_unstable] != [],
            }
        )
    return out


def print_schema(catalog: Catalog, as_json: bool) -> None:
    data = rows(catalog)
    if as_json:
        for row in data:
            print(json.dumps(row))
        return
    table = Table(title=f"{len(data)} API keys, {sum(len(a.versions) for a in catalog.apis.values())} versions", title_justify="left")
    for name, justify in (
        ("key", "right"),
        ("name", "left"),
        ("versions", "left"),
        ("flexible from", "right"),
        ("only before Kafka 4", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # "left" or "right", rich's JustifyMethod
    for row in data:
        table.add_row(
            str(row["api_key"]),
            Text(printable(row["name"])),
            row["versions"] + (" (latest unstable)" if row["unstable"] else ""),
            "-" if row["flexible_from"] is None else f"v{row['flexible_from']}",
            row["removed_in_kafka_4"] or "",
        )
    Console().print(table)


def loaded_rows(specs: UserSpecs) -> list[dict]:
    """The users' APIs: versions, where flexible versions start, which files, and what they do to a built-in API."""
    out = []
    for user in specs.apis:
        api, builtin = user.api, user.builtin
        flexible = [v for v in api.versions if api.flexible(v)]
        row = {
            "api_key": api.key,
            "name": api.name,
            "versions": ranges(api.versions),
            "flexible_from": flexible[0] if flexible else None,
            "request_file": user.request_file,
            "response_file": user.response_file,
            "builtin": None,
        }
        if builtin is not None:
            added = tuple(v for v in api.versions if v not in builtin.versions)
            replaced = tuple(v for v in api.versions if v in builtin.versions)
            row["builtin"] = {
                "name": builtin.name,
                "versions": ranges(builtin.versions),
                "added": ranges(added) if added else None,
                "replaced": ranges(replaced) if replaced else None,
            }
        out.append(row)
    return out


def print_loaded(specs: UserSpecs, as_json: bool) -> None:
    """What `--spec-dir` loaded, and from which files."""
    data = loaded_rows(specs)
    if as_json:
        for row in data:
            print(json.dumps(row))
        return
    table = Table(title=f"{len(data)} API keys from {len(specs.files)} spec files", title_justify="left")
    for name, justify in (("key", "right"), ("name", "left"), ("versions", "left"), ("flexible from", "right"), ("what", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # "left" or "right", rich's JustifyMethod
    for row in data:
        table.add_row(
            str(row["api_key"]),
            Text(printable(row["name"])),
            row["versions"],
            "-" if row["flexible_from"] is None else f"v{row['flexible_from']}",
            Text(printable(_what(row["builtin"]))),
        )
    console = Console()
    console.print(table)
    lines = [f"{row[f'{half}_file']}: {row['name']} {half} (key {row['api_key']})" for row in data for half in ("request", "response")]
    lines += [f"{path}: not loaded ({why})" for path, why in specs.ignored]
    for line in lines:
        console.print(Text(printable(line)), highlight=False, soft_wrap=True)


def _what(builtin: dict | None) -> str:
    if builtin is None:
        return "a new API"
    done = [f"{verb} {builtin[key]}" for verb, key in (("adds", "added"), ("replaces", "replaced")) if builtin[key]]
    return f"built-in {builtin['name']} {builtin['versions']}: {', '.join(done)}"


def print_source(catalog: Catalog, api_key: int, version: int, direction: Direction) -> None:
    """The generated Python that decodes one body."""
    print(Decoder(catalog).bodies.source(api_key, version, direction))
