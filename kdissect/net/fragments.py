"""IP fragment reassembly: whole datagrams from their pieces, within a memory bound."""

from __future__ import annotations

from collections import OrderedDict

MAX_DATAGRAMS = 1024
"""Incomplete datagrams held at once; the oldest is dropped past it."""


class FragmentTable:
    """Collects fragments by (source, destination, protocol, id) until a datagram is whole.

    Where fragments overlap, the one starting lower wins (the first to arrive among equals).
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._pending: OrderedDict[tuple, list] = OrderedDict()
        self.reassembled = 0
        self.dropped = 0
        """Datagrams given up: evicted, over the byte bound, or cut by the capture's snapshot length."""

    def add(self, key: tuple, offset: int, more: bool, payload: bytes, cut: bool) -> bytes | None:
        """Take one fragment; return the datagram's payload once every byte of it is present."""
        entry = self._pending.get(key)
        if entry is None:
            if len(self._pending) >= MAX_DATAGRAMS:
                self._pending.popitem(last=False)
                self.dropped += 1
            entry = self._pending[key] = [None, 0, []]  # total length, bytes held, pieces
        if cut or offset + len(payload) > self._max_bytes:
            del self._pending[key]
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
        self.reassembled += 1
        return bytes(whole[:total])

    def incomplete(self) -> int:
        return len(self._pending)
