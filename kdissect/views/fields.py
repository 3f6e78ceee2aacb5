"""`read -T fields -e FIELD ...`: one line per exchange, tshark's way (tab-separated, several values joined by ','),
and `-T csv`, the same fields as comma-separated values.

Values are written as the JSON layout writes them (docs/json.md), flattened to text: `api` and `error` by name,
`time` in ISO-8601 UTC, latencies in milliseconds, bytes as UTF-8 text when they are text and 0x-hex otherwise,
structs as compact JSON. A field the exchange lacks is empty.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from typing import IO, Any

from kdissect.events import Exchange
from kdissect.filter import TIME, Resolved
from kdissect.printable import one_line, printable
from kdissect.schema import error_name
from kdissect.views.json_lines import encode_bytes, time_text, value_json
from kdissect.views.output import Output, Settings, Title

SEPARATORS = {"/t": "\t", "/s": " "}
QUOTES = {"n": "", "d": '"', "s": "'"}


class FieldsError(ValueError):
    """A bad -E setting; one line for the user."""


@dataclass(frozen=True, slots=True)
class Layout:
    """The -E settings: tshark's names and defaults."""

    separator: str = "\t"
    aggregator: str = ","
    header: bool = False
    quote: str = ""


def make_layout(settings: list[str]) -> Layout:
    """-E NAME=VALUE settings: separator=/t|/s|C, aggregator=/s|C, header=y|n, quote=n|d|s."""
    values: dict[str, Any] = {}
    for setting in settings:
        name, _, value = setting.partition("=")
        if name in ("separator", "aggregator") and value:
            values[name] = SEPARATORS.get(value, value)
        elif name == "header" and value in ("y", "n"):
            values[name] = value == "y"
        elif name == "quote" and value in QUOTES:
            values[name] = QUOTES[value]
        else:
            raise FieldsError(f"-E {setting}: give separator=/t|/s|CHARS, aggregator=/s|CHARS, header=y|n or quote=n|d|s")
    return Layout(**values)


def _text(value: Any, field: Resolved) -> str:
    if type(value) is int and field.name in ("api", "api_name", "error"):  # by name, as the terminal view shows them
        return error_name(value) if field.name == "error" else (field.names or {}).get(value, f"api {value}")
    if TIME in field.kinds and type(value) is int:
        return time_text(value)
    if type(value) is str:
        return value
    if type(value) is bytes:
        text = encode_bytes(value)
        return text if isinstance(text, str) else "0x" + value.hex()
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) in (int, float):
        return repr(value)
    if type(value) is tuple:  # a record header: (key, value)
        value = {"key": value[0] if isinstance(value[0], str) else encode_bytes(value[0]), "value": encode_bytes(value[1])}
    return json.dumps(value_json(value), ensure_ascii=False, separators=(",", ":"))


class FieldsOutput(Output):
    """The fields format: the -e fields of each exchange, one line each, laid out as -E says."""

    def __init__(self, stream: IO[str], settings: Settings) -> None:
        super().__init__(stream, settings)
        self.fields: tuple[Resolved, ...] = settings.fields
        self.layout: Layout = settings.layout or Layout()
        self._separator = "".join(c for c in self.layout.separator if c.isprintable())
        """The separator's characters a value could hold as they are (a tab or a line break is escaped anyway)."""
        self._flush_each = settings.live is not None

    def begin(self, title: Title) -> None:
        if self.layout.header:
            self.stream.write(self.layout.separator.join(self._quoted(f.name) for f in self.fields) + "\n")

    def _quoted(self, text: str) -> str:
        """A cell as the layout writes it: in its quotes (a quote inside escaped with a backslash, as tshark does), or
        with every separator character escaped, so no value can start a column or a line of its own."""
        quote = self.layout.quote
        if quote:
            return quote + text.replace(quote, "\\" + quote) + quote
        return one_line(text, self._separator)

    def values(self, exchange: Exchange) -> list[str]:
        """Each field's values as text, control characters escaped, joined by the aggregator."""
        join = self.layout.aggregator.join
        return [join(printable(_text(v, f)) for v in f.values(exchange)) for f in self.fields]

    def exchange(self, exchange: Exchange) -> None:
        self.stream.write(self.layout.separator.join(map(self._quoted, self.values(exchange))) + "\n")
        if self._flush_each:
            self.stream.flush()


class CsvOutput(FieldsOutput):
    """The csv format: the -e fields as comma-separated values (RFC 4180, quoted where a value needs it), a header
    line of their names first."""

    def __init__(self, stream: IO[str], settings: Settings) -> None:
        super().__init__(stream, settings)
        self._csv = csv.writer(stream, lineterminator="\n")

    def begin(self, title: Title) -> None:
        self._csv.writerow([f.name for f in self.fields])

    def exchange(self, exchange: Exchange) -> None:
        self._csv.writerow(self.values(exchange))
        if self._flush_each:
            self.stream.flush()
