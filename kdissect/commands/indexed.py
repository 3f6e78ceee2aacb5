"""Commands answered from a capture's index (kdissect/index/) when it can: `read -Y`, `show` and `records`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kdissect.commands.options import Common
from kdissect.commands.reading import open_source


def answer(common: Common, options: Any, choose: Callable[[Any], list[int] | None]) -> tuple[list[Any], dict[str, int]] | None:
    """The exchanges at the positions `choose` picks in the capture's index (None: it cannot say), read back with
    `options`, and the damage the full read counted; None when there is no index or it cannot answer."""
    from kdissect.index import answer, entry

    capture = entry.usable(common.captures, common.options)
    index = entry.load(capture, common.options) if capture is not None else None
    chosen = choose(index) if index is not None else None
    if capture is None or index is None or chosen is None:
        return None
    found = answer.exchanges(capture, options, index, chosen)
    return None if found is None else (found, index.damage)


def by_filter(common: Common) -> Callable[[Any], list[int] | None]:
    """The positions of the exchanges the filter's verdict from headers does not reject; None without a verdict."""
    from kdissect.index.answer import candidates

    keep = common.wanted.keep
    return lambda index: None if keep is None else candidates(index, keep)


def write(common: Common, found: list[Any], command: str, chosen: Callable[[Any], bool] | None = None, **settings: Any) -> int:
    """The exchanges of an answer the filter lets through and `chosen` picks (up to --count), as `command` writes
    them; how many it wrote."""
    shown = 0
    with opened(common, command, **settings) as output:
        for exchange in found:
            if shown != common.count and common.wanted.matches(exchange) and (chosen is None or chosen(exchange)):
                output.exchange(exchange)
                shown += 1
    return shown


@contextmanager
def opened(common: Common, command: str, **settings: Any) -> Iterator[Any]:
    """`command`'s output, begun with the capture's title as a read of it begins it, and ended when the block ends."""
    from kdissect.views.output import Closing, Title

    with open_source(common.captures) as source, common.open_output() as stream:
        output = common.make_output(command, stream, **settings)
        output.begin(Title(source.name, source.format, source.compression))
        yield output
        output.end(Closing())
