"""Pairing responses with requests on one connection, by correlation id and in order.

A broker answers the requests of one connection in the order it received them. So when a response arrives for
the oldest request with its correlation id, every request sent before that one is settled: answered by a
response the capture lost, or a Produce with acks=0 that expects none. That keeps memory bounded without
waiting for the end of the capture.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Sequence

from kdissect.events import Message, RequestHeader
from kdissect.schema import ApiKey
from kdissect.wire import WireError, read_uvarint

_ACKS_AFTER_TRANSACTIONAL_ID = struct.Struct(">h").unpack_from


def expects_response(header: RequestHeader, frame_data: bytes) -> bool:
    """False only for a Produce request with acks=0: the one request a broker does not answer."""
    if header.api_key != ApiKey.PRODUCE:
        return True
    pos = header.length
    try:
        if header.api_version >= 3:
            if header.version >= 2:
                length_plus_one, pos = read_uvarint(frame_data, pos)  # compact nullable string
                pos += max(length_plus_one - 1, 0)
            else:
                length = _ACKS_AFTER_TRANSACTIONAL_ID(frame_data, pos)[0]
                pos += 2 + max(length, 0)
        return _ACKS_AFTER_TRANSACTIONAL_ID(frame_data, pos)[0] != 0
    except (IndexError, struct.error, WireError):
        return True


class Pairing:
    """Requests of one connection waiting for their responses, oldest first."""

    __slots__ = ("outstanding", "_ids", "max_outstanding", "max_silent", "silent")

    def __init__(self, max_outstanding: int, max_silent: int) -> None:
        self.outstanding: deque[tuple[Message, bool]] | None = None
        """(request, whether it expects a response). Made at the first request: a deque costs 760 bytes, and a port
        scan's connections never send one."""
        self._ids: dict[int, int] = {}
        """Correlation id -> how many outstanding requests carry it (clients reuse ids after a wrap)."""
        self.max_outstanding = max_outstanding
        self.max_silent = max_silent
        self.silent = 0
        """Outstanding requests that expect no response (acks=0 Produce)."""

    def add(self, request: Message, correlation_id: int, expects: bool) -> tuple[Message, bool] | None:
        """Register a request; returns the oldest one, pushed out, when a bound is reached."""
        outstanding = self.outstanding
        if outstanding is None:
            outstanding = self.outstanding = deque()
        outstanding.append((request, expects))
        ids = self._ids
        ids[correlation_id] = ids.get(correlation_id, 0) + 1
        if not expects:
            self.silent += 1
            if self.silent > self.max_silent:
                return self._pop_silent(outstanding)
        if len(outstanding) > self.max_outstanding:
            return self._forget(outstanding.popleft())
        return None

    def _forget(self, entry: tuple[Message, bool]) -> tuple[Message, bool]:
        header: RequestHeader = entry[0].header  # type: ignore[assignment]  # a request waits here only once its header was read
        correlation = header.correlation_id
        left = self._ids[correlation] - 1
        if left:
            self._ids[correlation] = left
        else:
            del self._ids[correlation]
        self.silent -= not entry[1]
        return entry

    def _pop_silent(self, outstanding: deque[tuple[Message, bool]]) -> tuple[Message, bool]:
        """The oldest request that expects no response, wherever it waits (usually first)."""
        i = next(i for i, (_, expects) in enumerate(outstanding) if not expects)
        entry = outstanding[i]
        del outstanding[i]
        return self._forget(entry)

    def match(self, correlation_id: int) -> tuple[Message | None, Sequence[tuple[Message, bool]]]:
        """(the request this response answers, or None for an orphan; the older requests it settles)."""
        outstanding = self.outstanding
        if outstanding is None or correlation_id not in self._ids:
            return None, ()
        settled: list[tuple[Message, bool]] = []
        while True:
            entry = self._forget(outstanding.popleft())
            if entry[0].header.correlation_id == correlation_id:  # type: ignore[union-attr]  # as in _forget: the header was read
                return entry[0], settled or ()
            settled.append(entry)

    def correlations(self) -> list[int]:
        return list(self._ids)

    def drain(self) -> list[tuple[Message, bool]]:
        """Every request still waiting, oldest first: the connection is over."""
        out = list(self.outstanding or ())
        self.outstanding = None
        self._ids.clear()
        self.silent = 0
        return out
