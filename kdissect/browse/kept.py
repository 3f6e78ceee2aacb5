"""What the index's pass learns besides its rows, and the keeping of a capture file's index (index/browsed.py makes
it, in the cache): the next browse opens from the whole pass an earlier one kept, and once the index is complete a
filter is answered from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kdissect.browse.charts import Lane
from kdissect.browse.flows import Flow, More
from kdissect.browse.index import Batch, Index
from kdissect.decode.session import Session
from kdissect.doctor.finding import Finding
from kdissect.events import Exchange


@dataclass(frozen=True, slots=True)
class Learnt:
    """What the index's pass holds at its end besides the rows it sent."""

    flows: tuple[tuple[Flow, ...], More | None]
    lanes: tuple[Lane, ...]
    findings: list[Finding]
    offsets: list[int]
    """File offsets of every CHECKPOINT-th packet."""
    topic_names: dict[str, str]
    sessions: list[Session]
    """Each connection's decoder session, by connection id - 1."""


class Keeping(Protocol):
    """Where one capture file's pass is kept."""

    def load(self) -> tuple[Batch, Learnt] | None:
        """Every row of a whole pass kept earlier, as one batch, and what the pass learnt; None when none is kept."""

    def save(self, index: Index, read: int, learnt: Learnt) -> None:
        """Keep `index`, every row of a whole pass that read `read` bytes of the file, with what it learnt."""

    def indexing(self, decoder: Any, offsets: list[int], sessions: list[Session]) -> Callable[[Exchange], None] | None:
        """Where each exchange of a pass that decodes bodies (by `decoder`) goes: what the keeping notes of it, and,
        when `read`'s index of the file is not kept yet, that index, made with the pass's checkpoints and sessions
        (index/keeping.py); None for a pass that decodes none."""

    def indexed(self, packets: int, damage: dict[str, int]) -> None:
        """The pass read the whole file, `packets` packets, and counted what the capture lost in `damage`: `read`'s
        index, made on the way, is kept."""

    def matches(self, index: Index, learnt: Learnt, wanted: Any, options: Any, stopping: Callable[[], bool]) -> list[int] | None:
        """The positions `wanted` (a `filter.Filter`) matches, from the complete `index`: the verdict from headers on
        its rows, and only the exchanges it may keep read back and decoded with `options`; None when the index
        cannot answer (the filter's pass over the file then does: for a file that is not a plain pcap, whose
        packets have no checkpoints, always) or `stopping` said to stop."""
