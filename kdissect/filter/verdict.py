"""What a run's filter decides: which exchanges to show, and which bodies to decode. The language that makes one
(the lexer, parser and compiler) is loaded only when there is an expression to compile."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kdissect.events import Exchange
from kdissect.kafka.shared import Keep


def _everything(exchange: Exchange) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Filter:
    """Which exchanges a user asked to see."""

    text: str
    """The whole expression, each part in parentheses; empty for everything. What the Spark job ships."""
    matches: Callable[[Exchange], bool] = _everything
    keep: Keep | None = None
    """The verdict from headers (the core's `Options.keep`): False when no body can make `matches` true.
    None when headers never decide."""
    fields: frozenset[str] = frozenset()
    """The fields the expression uses (aliases by their own names)."""

    @property
    def active(self) -> bool:
        return bool(self.text)


EVERYTHING = Filter("")
