"""What the message decoder produces: structs of named fields in wire order, and what failed where."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator


class Struct:
    """One decoded struct: field names in wire order, their values, and optionally their byte spans.

    A plain slotted class, not a frozen dataclass: decoders build one per array element, often thousands per
    message, and frozen construction costs several times more. Treat it as immutable all the same.
    Values are Python natives (bool, int, float, str, bytes, None), lists for arrays, nested Structs, a
    `RecordSet` for records fields, and `UnknownTag`s for tags the schema does not know.
    """

    __slots__ = ("names", "values", "spans", "annotations")

    def __init__(self, names: tuple[str, ...], values: list[Any], spans: list[int] | None = None) -> None:
        self.names = names
        self.values = values
        self.spans = spans
        """Flat [start, end, start, end, ...] frame offsets parallel to `names`, when the decoder recorded them."""
        self.annotations: dict[str, Any] | None = None
        """Meaning added after decoding (a topic name for a topic id, a decoded embedded payload), by field name."""

    def __getitem__(self, name: str) -> Any:
        return self.values[self.names.index(name)]

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self.values[self.names.index(name)]
        except ValueError:
            return default

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def items(self) -> Iterator[tuple[str, Any]]:
        return zip(self.names, self.values)

    def span(self, name: str) -> tuple[int, int] | None:
        if self.spans is None or name not in self.names:
            return None
        i = self.names.index(name) * 2
        return self.spans[i], self.spans[i + 1]

    def annotate(self, name: str, value: Any) -> None:
        if self.annotations is None:
            self.annotations = {}
        self.annotations[name] = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and self.names == other.names and self.values == other.values

    def __repr__(self) -> str:
        return "Struct(" + ", ".join(f"{n}={v!r}" for n, v in self.items()) + ")"


@dataclass(frozen=True, slots=True)
class UnknownTag:
    """A tagged field whose tag the schema does not define for this version: kept with its number and bytes."""

    tag: int
    data: bytes
    offset: int


class Partial(Exception):
    """Raised through the generated decoders when bytes run out or make no sense.

    Each level on the way up adds its field to `path` and replaces `value` with its own struct as far as it
    was read, so the caller receives everything decoded before the failure.
    """

    def __init__(self, field: str, offset: int, reason: str, value: Any, code: str = "body.malformed") -> None:
        super().__init__(reason)
        self.path = [field]
        self.offset = offset
        self.reason = reason
        self.value = value
        self.code = code
        """The diagnostic it becomes: body.malformed, or body.elements-cut where decoding stopped at a bound."""

    def where(self) -> str:
        """The path as text: "Topics[0].Partitions[1].Records"."""
        out = ""
        for part in self.path:
            out += part if part.startswith("[") or not out else "." + part
        return out
