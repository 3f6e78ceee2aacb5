"""IP fragment reassembly: whole datagrams from their pieces, within a memory bound."""

from __future__ import annotations

from collections import OrderedDict

MAX_DATAGRAMS = 1024
"""Incomplete datagrams held at once; the oldest is dropped past it."""
TIMEOUT = 30_000_000_000
"""Nanoseconds a datagram has to complete (Linux's ipfrag_time); after that its id may belong to a new one."""


class FragmentTable:
    """Collects fragments by (source, destination, protocol, id) until a datagram is whole.

    Where fragments overlap, the one starting lower wins (the first to arrive among equals). A datagram given
    up stays in the table as a tombstone (total length -1), so that its later fragments are dropped rather
    than starting it again and counting it twice. Past `TIMEOUT` an entry is stale, whole or not: the id is
    free for a new datagram, whose fragments must not mix with the old one's.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._pending: OrderedDict[tuple, list] = OrderedDict()
        self.dropped = 0
        """Datagrams given up: evicted, over the byte bound, or cut by the capture's snapshot length."""

    def add(self, key: tuple, offset: int, more: bool, payload: bytes, cut: bool, ts: int) -> bytes | None:
        """Take one fragment; return the datagram's payload once every byte of it is present."""
        entry = self._pending.get(key)
        if entry is not None and ts - entry[3] > TIMEOUT:
            del self._pending[key]
            self.dropped += entry[0] != -1
            entry = None
        if entry is None:
            if len(self._pending) >= MAX_DATAGRAMS:
                self.dropped += self._pending.popitem(last=False)[1][0] != -1
            entry = self._pending[key] = [None, 0, [], ts]  # total length, bytes held, pieces, first seen
        elif entry[0] == -1:
            return None
        if cut or offset + len(payload) > self._max_bytes or entry[1] + len(payload) > self._max_bytes:
            self._pending[key] = [-1, 0, [], entry[3]]
            self.dropped += 1
            return None
        if not more:
            entry[0] = offset + len(payload)
        entry[1] += len(payload)
        entry[2].append((offset, payload))
        total = entry[0]
        if total is None or entry[1] < total:
            return None
        whole = bytearray()
        for start, piece in sorted(entry[2], key=lambda p: p[0]):
            if start > len(whole):
                return None
            whole += piece[len(whole) - start :]
        if len(whole) < total:
            return None
        del self._pending[key]
        return bytes(whole[:total])

    def incomplete(self) -> int:
        """Datagrams still waiting for fragments (tombstones are already counted as dropped)."""
        return sum(entry[0] != -1 for entry in self._pending.values())
