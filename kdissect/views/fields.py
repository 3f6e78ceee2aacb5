"""`read -T fields -e FIELD ...`: one line per exchange, tshark's way (tab-separated, several values joined by ',').

Values are written as the JSON layout writes them (docs/json.md), flattened to text: `api` and `error` by name,
`time` in ISO-8601 UTC, latencies in milliseconds, bytes as UTF-8 text when they are text and 0x-hex otherwise,
structs as compact JSON. A field the exchange lacks is empty.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from kdissect.events import Exchange
from kdissect.filter import TIME, Resolved
from kdissect.schema import API_NAMES, error_name
from kdissect.views.json_lines import encode_bytes, time_text, value_json

NAMED: dict[str, Callable[[int], str]] = {
    "api": lambda key: API_NAMES.get(key, f"api {key}"),
    "api_name": lambda key: API_NAMES.get(key, f"api {key}"),
    "error": error_name,
}
"""Exchange fields written by name, as the terminal view shows them."""
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
    named = NAMED.get(field.name)
    if named is not None and type(value) is int:
        return named(value)
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


class FieldsWriter:
    """Writes the chosen fields of each exchange it is given, one line each."""

    def __init__(self, stream: IO[str], fields: list[Resolved], layout: Layout) -> None:
        self.stream = stream
        self.fields = fields
        self.layout = layout
        if layout.header:
            stream.write(layout.separator.join(self._quoted(f.name) for f in fields) + "\n")

    def _quoted(self, text: str) -> str:
        quote = self.layout.quote
        return f"{quote}{text}{quote}" if quote else text

    def exchange(self, exchange: Exchange) -> None:
        join = self.layout.aggregator.join
        cells = (self._quoted(join(_text(v, f) for v in f.values(exchange))) for f in self.fields)
        self.stream.write(self.layout.separator.join(cells) + "\n")

    def raw(self, text: str) -> None:
        """The lines a worker's writer wrote for one exchange (`read --jobs`)."""
        self.stream.write(text)
