"""`kdissect schema`: what kdissect can decode, and the generated code that decodes it."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from kdissect.schema import APIS
from kdissect.views.json_lines import LAYOUT


def ranges(versions: tuple[int, ...]) -> str:
    out, start = [], versions[0]
    for prev, cur in zip(versions, versions[1:] + (None,)):
        if cur != prev + 1 if cur is not None else True:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return ",".join(out)


def rows() -> list[dict]:
    out = []
    for key, api in sorted(APIS.items()):
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


def print_schema(as_json: bool) -> None:
    data = rows()
    if as_json:
        for row in data:
            print(json.dumps(row))
        return
    table = Table(title=f"{len(data)} API keys, {sum(len(a.versions) for a in APIS.values())} versions", title_justify="left")
    for name, justify in (
        ("key", "right"),
        ("name", "left"),
        ("versions", "left"),
        ("flexible from", "right"),
        ("only before Kafka 4", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in data:
        table.add_row(
            str(row["api_key"]),
            row["name"],
            row["versions"] + (" (latest unstable)" if row["unstable"] else ""),
            "-" if row["flexible_from"] is None else f"v{row['flexible_from']}",
            row["removed_in_kafka_4"] or "",
        )
    Console().print(table)


def print_source(api_key: int, version: int, direction: str) -> None:
    """The generated Python that decodes one body."""
    from kdissect.decode.decoder import Decoder

    print(Decoder().bodies.source(api_key, version, direction))  # type: ignore[arg-type]
