"""Each event told with the taps that saw its connection, and an exchange seen from both ends timed on each.

An exchange waits (in order: the events behind it wait too) until two taps or more have shown the last byte of its
request and of its response, or `WAIT_NS` of capture time has passed: another tap, whose clock runs behind, may yet
show it (its packets come later in the merged order). Each tap's latency is
then measured on its own clock alone, so clocks that differ do not matter: the shortest is the broker's time (that
tap is nearest to it), the longest the client's, and their difference the network's. The exchange's times become
the client-side tap's, so `latency_ms` is what the client waited for.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Any

from kdissect.events import ConnectionEnd, ConnectionInfo, Exchange, Message, Notice, Vantage
from kdissect.taps.joined import Shared

WAIT_NS = 5_000_000_000
"""Capture time an exchange waits for the other taps' copies (clocks further apart than this give no split)."""
MAX_HELD = 16384
"""Events held at most (decoded bodies and all): past it the oldest goes on without its split."""
MEMO = 4096


class Vantages:
    def __init__(self, taps: tuple[str, ...]) -> None:
        self.names = taps
        self.held: deque[tuple[Any, int]] = deque()
        self.connections: dict[int, Shared] = {}
        """The core's connection ids, each with what the taps saw of it."""
        self._infos: dict[tuple[int, int], tuple[ConnectionInfo, ConnectionInfo]] = {}

    def opened(self, connection: int, shared: Shared) -> None:
        """The core just numbered a connection: the joined one of the packet it was given."""
        self.connections[connection] = shared

    def take(self, events: list[Any], ts: int) -> list[Any]:
        """The events the core made at capture time `ts`, and any held ones that are ready, in order."""
        for event in events:
            self.held.append((event, ts))
        return self.release(ts)

    def release(self, ts: int, everything: bool = False) -> list[Any]:
        out = []
        held = self.held
        while held:
            event, since = held[0]
            if not (everything or ts - since > WAIT_NS or len(held) > MAX_HELD or self._ready(event)):
                break
            held.popleft()
            out.append(self._told(event))
        return out

    def _shared(self, info: ConnectionInfo | None) -> Shared | None:
        return None if info is None else self.connections.get(info.id)

    def _ends(self, exchange: Exchange, shared: Shared) -> list[tuple[int, int]]:
        """(direction, end offset) of the exchange's frames, in the joined connection's directions."""
        client = shared.direction_from(exchange.connection.client)
        return [
            (client if message is exchange.request else client ^ 1, message.frame.offset + 4 + message.frame.size)
            for message in (exchange.request, exchange.response)
            if message is not None
        ]

    def _ready(self, event: Any) -> bool:
        if not isinstance(event, Exchange):
            return True
        shared = self._shared(event.connection)
        if shared is None or event.connection.tls is not None or event.request is None or event.response is None:
            return True  # nothing to time: TLS frames count decrypted bytes, which the taps' packets do not
        ends = self._ends(event, shared)
        return len(shared.taps) > 1 and all(shared.seen(direction, tap, end) for tap in shared.taps for direction, end in ends)

    def _told(self, event: Any) -> Any:
        if isinstance(event, Exchange):
            return self._timed(replace(event, connection=self._named(event.connection)))
        if isinstance(event, (ConnectionEnd, Notice)) and event.connection is not None:
            return replace(event, connection=self._named(event.connection))
        return event

    def _named(self, info: ConnectionInfo) -> ConnectionInfo:
        shared = self._shared(info)
        if shared is None:
            return info
        key = (id(info), len(shared.taps))
        known = self._infos.get(key)
        if known is None or known[0] is not info:
            if len(self._infos) >= MEMO:
                self._infos.clear()
            known = self._infos[key] = (info, replace(info, taps=tuple(self.names[t] for t in shared.taps)))
        return known[1]

    def _timed(self, exchange: Exchange) -> Exchange:
        """Broker and network time, when two taps or more saw both frames' last bytes; the client-side tap's times."""
        shared = self._shared(exchange.connection)
        if exchange.request is None or exchange.response is None or shared is None or len(shared.taps) < 2:
            return exchange
        if exchange.connection.tls is not None:
            return exchange
        (sent, request_end), (got, response_end) = self._ends(exchange, shared)
        seen = []
        for tap in shared.taps:
            asked, answered = shared.seen(sent, tap, request_end), shared.seen(got, tap, response_end)
            if asked is not None and answered is not None:
                seen.append((answered.ts - asked.ts, asked.ts, answered.ts))
        if len(seen) < 2:
            return exchange
        nearest, farthest = min(seen), max(seen)
        vantage = Vantage(nearest[0], farthest[0] - nearest[0])
        return replace(exchange, request=_at(exchange.request, farthest[1]), response=_at(exchange.response, farthest[2]), vantage=vantage)


def _at(message: Message, ts: int) -> Message:
    """The message as the client-side tap saw it complete."""
    return message if message.frame.ts == ts else replace(message, frame=replace(message.frame, ts=ts))
