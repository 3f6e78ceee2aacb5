"""`kdissect schemas`: every schema a run knows, where it was learnt, and the topics and records that use it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.text import Text

from kdissect.decode.streamed import StreamedRecord
from kdissect.printable import printable
from kdissect.views.terminal import TableColumn, fitted_table

EXAMPLES = 5
"""Exchanges kept per schema, to open with `show --exchange`."""


@dataclass
class Usage:
    topics: list[str] = field(default_factory=list)
    produced: int = 0
    fetched: int = 0
    exchanges: list[int] = field(default_factory=list)


class SchemaUsage:
    """Which records read with which schema: counted as `records` would list them."""

    def __init__(self, values: Any) -> None:
        self.values = values
        self.usage: dict[int, Usage] = {}

    def add(self, item: StreamedRecord) -> None:
        for decoded in item.decoded:
            schema = decoded.schema if decoded is not None else None
            if schema is None:
                continue
            usage = self.usage.get(id(schema))
            if usage is None:
                usage = self.usage[id(schema)] = Usage()
            if item.topic is not None and item.topic not in usage.topics:
                usage.topics.append(item.topic)
            if item.direction == "produce":
                usage.produced += 1
            else:
                usage.fetched += 1
            if len(usage.exchanges) < EXAMPLES and item.exchange.id not in usage.exchanges:
                usage.exchanges.append(item.exchange.id)

    def rows(self) -> Iterator[dict[str, Any]]:
        """One row per schema, in the order they were learnt."""
        for schema in self.values.book:
            usage = self.usage.get(id(schema), Usage())
            yield {
                "type": "schema",
                "id": schema.id,
                "guid": schema.guid,
                "refs": [str(ref) for ref in schema.refs],
                "subject": schema.subject,
                "version": schema.version,
                "format": schema.format,
                "sources": list(schema.sources),
                "topics": usage.topics,
                "produced_records": usage.produced,
                "fetched_records": usage.fetched,
                "exchanges": usage.exchanges,
            }


COLUMNS = [
    TableColumn("id", "right"),
    TableColumn("subject", wrap=True),
    TableColumn("version", "right", keep=2),
    TableColumn("format"),
    TableColumn("learnt from", wrap=True, keep=1),
    TableColumn("topics", wrap=True),
    TableColumn("records (produced/fetched)", "right"),
    TableColumn("exchanges", wrap=True, keep=3),
]


def print_schemas(rows: list[dict[str, Any]], console: Console) -> None:
    """The schemas as a table fitted to the console; subjects, sources and topics from the wire, escaped."""
    cells = [
        (
            ", ".join(row["refs"]) if row["id"] is None else str(row["id"]),
            Text(printable(row["subject"] or "-")),
            "-" if row["version"] is None else str(row["version"]),
            row["format"],
            Text(printable("; ".join(row["sources"]))),
            Text(printable(", ".join(row["topics"]) or "-")),
            f"{row['produced_records']}/{row['fetched_records']}",
            ", ".join(map(str, row["exchanges"])) or "-",
        )
        for row in rows
    ]
    console.print(fitted_table("Schemas (docs/values.md)", COLUMNS, cells, console.width))
    if not rows:
        console.print(
            "No schema is known: give --schemas DIR or --schema-registry URL, or capture the registry's port too.", highlight=False
        )
