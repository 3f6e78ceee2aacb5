"""What browse keeps of a capture file it indexed to the end, so that the next browse of it opens at once: the
index's columns and interned values, the flows, the groups' lanes, the doctor's findings, and what opening a body
needs of the pass (the checkpoints, the topic names, each connection's session).

An entry lives beside the capture's exchange index (entry.py), with its key (the file's identity: path, size,
modification time, a digest of its ends; and the options that shape the exchanges) and its budget. Its place is
taken before the pass reads the file, so a capture that changes while it is read is indexed anew next time. The
values are JSON made again by their types (revive.py), the columns raw bytes: a damaged entry is refused and
removed, and the capture read.
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kdissect.browse.charts import Lane
from kdissect.browse.flows import Flow, More
from kdissect.browse.index import NONE, Batch, Columns, Index
from kdissect.browse.kept import Learnt
from kdissect.capture import open_capture
from kdissect.capture.source import CaptureError
from kdissect.decode.body import Body
from kdissect.decode.session import Session, State
from kdissect.doctor.finding import Finding
from kdissect.events import ConnectionInfo, Exchange
from kdissect.index import answer, entry
from kdissect.index.entry import CaptureIndex
from kdissect.index.keeping import Keeper
from kdissect.revive import dumps, revived
from kdissect.values.reader import SCHEMAS_TOPIC

KIND = ".kdb"
FORMAT = 1
"""Changed whenever what an entry holds changes: an older kdissect's entries are then refused."""


class Kept:
    """Browse's keeping (browse/kept.py) of one capture file, at its place in the cache."""

    def __init__(self, where: str, capture: str, options: Any, met_registry: Callable[[], bool] = lambda: False) -> None:
        """`met_registry`: whether the run met the capture's own schema registry (whose values only a whole read
        reads as it did: a filter is then not answered from the index)."""
        self.where = where
        self.capture = capture
        self.options = options
        self.met_registry = met_registry
        self.keeper: Keeper | None = None
        self._as_read: CaptureIndex | None = None
        self.schemas_records = False
        """The pass met records of the registry's `_schemas` topic, which a read's values learn from as they come
        (a browse's list reads no value): neither index then answers, as a read's would not. Kept with the pass."""

    def load(self) -> tuple[Batch, Learnt] | None:
        found = entry.loaded(self.where, _parsed)
        if found is None:
            return None
        batch, learnt, self.schemas_records = found
        return batch, learnt

    def save(self, index: Index, read: int, learnt: Learnt) -> None:
        meta = {
            "format": FORMAT,
            "lengths": len(index),
            "clients": index.clients,
            "error_sets": index.error_sets,
            "diagnostic_sets": index.diagnostic_sets,
            "group_sets": index.group_sets,
            "connections": list(index.connections.values()),
            "read": read,
            "flows": learnt.flows,
            "lanes": learnt.lanes,
            "findings": learnt.findings,
            "offsets": learnt.offsets,
            "topic_names": learnt.topic_names,
            "sessions": [s.state() for s in learnt.sessions],
            "schemas_records": self.schemas_records,
        }
        entry.keep(self.where, dumps(meta), list(index.arrays()))

    @functools.cached_property
    def plain(self) -> bool:
        """Whether the capture is one `read` indexes (entry.indexable): its packets have checkpoints to read back
        from, where another file is read from its start for every stretch read back."""
        try:
            with open_capture(self.capture) as source:
                return entry.indexable(source)
        except (OSError, CaptureError):
            return False

    def indexing(self, decoder: Any, offsets: list[int], sessions: list[Session]) -> Callable[[Exchange], None] | None:
        if decoder is None:
            return None
        keeper = None
        if self.plain and entry.kept(self.capture, self.options) is None:
            keeper = self.keeper = Keeper(self.capture, self.options, decoder, sessions)
            keeper.offsets = offsets

        def add(exchange: Exchange) -> None:
            if keeper is not None:
                keeper.add(exchange)
            if not self.schemas_records and _schemas_records(exchange):
                self.schemas_records = True

        return add

    def indexed(self, packets: int, damage: dict[str, int]) -> None:
        if self.keeper is not None:
            self.keeper.save(packets, damage, self.registry())
            self.keeper = None

    def registry(self) -> bool:
        """Whether the capture's own schema registry was met: by this run, or by the pass, in its `_schemas` records."""
        return self.schemas_records or self.met_registry()

    def matches(self, index: Index, learnt: Learnt, wanted: Any, options: Any, stopping: Callable[[], bool]) -> list[int] | None:
        if wanted.keep is None or not len(index) or not self.plain:
            return None
        if self._as_read is None:  # the index is complete, and stays as it is: made once for every filter
            self._as_read = as_capture_index(index, learnt)
        indexed = replace(self._as_read, registry=self.registry())
        found = answer.exchanges(self.capture, options, indexed, answer.candidates(indexed, wanted.keep), stopping)
        return None if found is None else [exchange.id - 1 for exchange in found if wanted.matches(exchange)]


def as_capture_index(index: Index, learnt: Learnt) -> CaptureIndex:
    """Browse's complete index as the one `read` keeps (entry.py), which answer.py reads: the same numbers, but for
    the frames' stream offsets, which a filter does not read, and the registry's mark, which is the run's to set."""
    unknown = array("q", [NONE]) * len(index)
    starts: dict[int, int] = {}
    for connection, first in zip(index.connection, index.first):
        if first < starts.get(connection, first + 1):
            starts[connection] = first
    columns = entry.Columns(
        index.ts,
        index.latency,
        index.correlation,
        index.first,
        index.last,
        index.queued,
        unknown,
        unknown,
        index.connection,
        index.client,
        index.ahead,
        index.api,
        index.version,
        index.flags,
        index.status,
    )
    return CaptureIndex(
        columns,
        index.clients,
        index.connections,
        frozenset(id for id, info in index.connections.items() if info.tls is not None),
        starts,
        learnt.offsets,
        max(index.last),
        learnt.topic_names,
        [s.state() for s in learnt.sessions],
        {},
        False,
    )


def _schemas_records(exchange: Exchange) -> bool:
    return any(
        placed.topic == SCHEMAS_TOPIC
        for message in (exchange.request, exchange.response)
        if message is not None and isinstance(message.body, Body)
        for placed in message.body.records
    )


def kept(path: Path, options: Any, met_registry: Callable[[], bool] = lambda: False) -> Kept | None:
    """The keeping of the capture at `path`, its place taken now (before the pass reads it); None when browse keeps
    nothing of it (no cache, user specs, a key log)."""
    capture = entry.usable((str(path),), options)
    where = None if capture is None else entry.place(capture, options, KIND)
    return None if capture is None or where is None else Kept(where, capture, options, met_registry)


def _parsed(meta: Any, body: bytes) -> tuple[Batch, Learnt, bool]:
    if meta["format"] != FORMAT:
        raise ValueError("an entry of another kdissect")
    rows = Columns()
    entry.filled(list(rows.arrays()), meta["lengths"], body)
    batch = Batch(
        rows,
        revived(list[str | None], meta["clients"]),
        revived(list[tuple[int, ...]], meta["error_sets"]),
        revived(list[tuple[str, ...]], meta["diagnostic_sets"]),
        revived(list[tuple[str, ...]], meta["group_sets"]),
        revived(list[ConnectionInfo], meta["connections"]),
        revived(int, meta["read"]),
        None,
        None,
    )
    learnt = Learnt(
        revived(tuple[tuple[Flow, ...], More | None], meta["flows"]),
        revived(tuple[Lane, ...], meta["lanes"]),
        revived(list[Finding], meta["findings"]),
        revived(list[int], meta["offsets"]),
        revived(dict[str, str], meta["topic_names"]),
        [Session.restored(state) for state in revived(list[State], meta["sessions"])],
    )
    return batch, learnt, revived(bool, meta["schemas_records"])
