"""A query's result as `kdissect sql` prints it: a table on a terminal, CSV, or NDJSON (one object per row).

Values come from the wire (client ids, keys, values), so the table shows them as `Text` through `printable`,
and CSV keeps them on one line (`one_line`); bytes are UTF-8 text when they are, base64 otherwise, as in
`read --json`."""

from __future__ import annotations

import csv
import datetime
import decimal
import sys
from typing import Any

import orjson
from rich.table import Table
from rich.text import Text

from kdissect.printable import one_line, printable
from kdissect.views.console import make_console
from kdissect.views.json_lines import encode_bytes


def print_result(columns: list[str], rows: list[tuple[Any, ...]], fmt: str) -> None:
    """`fmt`: text, csv or json."""
    if fmt == "json":
        write = sys.stdout.buffer.write
        for row in rows:
            write(orjson.dumps(dict(zip(columns, row)), default=_json, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS))
        sys.stdout.flush()
    elif fmt == "csv":
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow([one_line(c, "\r\n") for c in columns])
        out.writerows([one_line(_text(v), "\r\n") for v in row] for row in rows)
    else:
        table = Table()
        for column in columns:
            table.add_column(Text(printable(column)))
        for row in rows:
            table.add_row(*(Text(printable(_text(v))) for v in row))
        console = make_console(sys.stdout)
        console.print(table)
        console.print(Text(f"{len(rows):,} row{'s' if len(rows) != 1 else ''}", style="dim"))


def _json(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return encode_bytes(bytes(value))
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.timedelta, datetime.time)):
        return str(value)
    raise TypeError


def _text(value: Any) -> str:
    """A value as one cell: bytes as `read --json` spells them, lists and structs as JSON, NULL as nothing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        encoded = encode_bytes(bytes(value))
        return encoded if isinstance(encoded, str) else f"base64:{encoded['base64']}" if encoded else ""
    if isinstance(value, (list, dict, tuple)):
        return orjson.dumps(value, default=_json, option=orjson.OPT_NON_STR_KEYS).decode()
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return str(value)
