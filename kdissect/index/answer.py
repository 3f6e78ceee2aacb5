"""`read -Y` from the index: the filter's verdict from headers taken on every indexed exchange, then only the
frames of those it may keep read back from the file, decoded and tested by the whole filter.

The verdict from headers (`Filter.keep`, filter/compile.py) is False only when no body can make the filter true,
so the exchanges it rejects on the index's numbers are exactly those a full read would not show. The others are
read back connection by connection, from the packet checkpoint before their first frame to their last (browse
reads one exchange the same way), with what the full read learnt (topic names, the connection's session); each is
given back what only the full read could number: its id, its connection's, its frames' stream offsets and its time
in line. Whatever cannot be answered so is read the usual way: a filter on fields the index does not hold (every
exchange a candidate), candidates spread over more than a third of the file, a TLS connection among them, or an
exchange the read-back does not find as the full read had it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

from kdissect.browse.index import CUT, NONE, REQUEST, RESPONSE
from kdissect.browse.scan import CHECKPOINT, connection_exchanges
from kdissect.decode.session import Session
from kdissect.diagnostic import Diagnostic
from kdissect.dissector import make_decoder
from kdissect.events import ConnectionInfo, Exchange, Message, Status
from kdissect.index.entry import CaptureIndex

STATUSES: tuple[str, ...] = get_args(Status)
SHARE = 3
"""Candidates whose frames span more than 1/SHARE of the file's packets are read the usual way: as fast, and simpler."""
NEAR = 4 * CHECKPOINT
"""Two candidates of a connection fewer packets apart than this are read back in one pass."""


class _Header:
    """What the verdict from headers reads of a request header."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id")

    def __init__(self) -> None:
        self.api_key = self.api_version = self.correlation_id = 0
        self.client_id: str | None = None


class _Side:
    """What the verdict from headers reads of a message: its header, time and diagnostics."""

    __slots__ = ("header", "ts", "diagnostics")

    def __init__(self, header: _Header | None) -> None:
        self.header = header
        self.ts = 0
        self.diagnostics: tuple[Any, ...] = ()


CUT_DIAGNOSTICS = (Diagnostic("frame.incomplete", "a frame or header the capture holds only part of (indexed)"),)
"""What the verdict from headers is shown of an exchange the index marks CUT: a diagnostic that makes it malformed."""


def candidates(index: CaptureIndex, keep: Any) -> list[int]:
    """Positions of the exchanges the verdict from headers does not reject; every one without a request header
    (an orphan response, a raw SASL token) is a candidate."""
    c = index.columns
    header = _Header()
    request, response = _Side(header), _Side(None)
    clients, connections = index.clients, index.connections
    api, version, correlation, client, ts, latency, flags, connection = (
        c.api,
        c.version,
        c.correlation,
        c.client,
        c.ts,
        c.latency,
        c.flags,
        c.connection,
    )
    out = []
    for i in range(len(c)):
        bits = flags[i]
        if api[i] < 0 or not bits & REQUEST:
            out.append(i)
            continue
        header.api_key, header.api_version, header.correlation_id = api[i], version[i], correlation[i]
        header.client_id = clients[client[i]]
        request.ts = ts[i]
        request.diagnostics = CUT_DIAGNOSTICS if bits & CUT else ()
        answered = bits & RESPONSE
        if answered:
            response.ts = ts[i] + latency[i]
        if keep(connections[connection[i]], request, response if answered else None):
            out.append(i)
    return out


def exchanges(
    capture: str, options: Any, index: CaptureIndex, chosen: list[int], stopping: Callable[[], bool] = lambda: False
) -> list[Exchange] | None:
    """The exchanges at positions `chosen` (`candidates`, say), in order, with their bodies decoded as `options` ask;
    None when the index cannot answer and the capture must be read the usual way, or when `stopping` said to stop
    (asked between two exchanges read back)."""
    if index.registry:
        return None
    c = index.columns
    if any(c.connection[i] in index.tls for i in chosen):
        return None
    runs = _runs(index, chosen)
    if sum(last - first + CHECKPOINT for _, first, last, _ in runs) * SHARE > index.packets:
        return None
    found: dict[int, Exchange] = {}
    decoder = make_decoder(options)  # one for every pass: its compiled decoders made once
    if decoder is not None:
        decoder.topic_names = dict(index.topic_names)
    for connection, first, last, positions in runs:
        if not any(
            _found(capture, options, index, decoder, connection, start, last, positions, found, stopping)
            for start in (first, index.starts[connection])
        ):
            return None  # even from the connection's first frame, the core did not find what the full read did
    if any(_read(STATUSES[c.status[i]]) != _read(found[i].status) for i in found):
        return None
    return [found[i] for i in sorted(found)]


def _found(
    capture: str,
    options: Any,
    index: CaptureIndex,
    decoder: Any,
    connection: int,
    start: int,
    last: int,
    positions: list[int],
    found: dict[int, Exchange],
    stopping: Callable[[], bool],
) -> bool:
    """Read back a connection's packets from `start` to `last` into `found`; whether every one of `positions` is there
    (False, too, when `stopping` said to stop)."""
    c = index.columns
    wanted = {(c.correlation[i], c.ts[i]): i for i in positions}
    for exchange in _read_back(capture, options, index, decoder, index.connections[connection], start, last):
        if stopping():
            return False
        i = wanted.get((NONE if exchange.correlation_id is None else exchange.correlation_id, exchange.ts), -1)
        if i >= 0:
            found[i] = _as_indexed(exchange, index, i)
    return all(i in found for i in positions)


def _read(status: str) -> str:
    """A status as the read-back must find it again: ok and error alike (an exchange another process decoded is
    indexed from its copy here, whose bodies were not decoded), malformed and the rest as they are."""
    return "read" if status in ("ok", "error") else status


def _runs(index: CaptureIndex, chosen: list[int]) -> list[tuple[int, int, int, list[int]]]:
    """The candidates as (connection, first packet, last packet, positions): one read-back pass each."""
    c = index.columns
    by_connection: dict[int, list[int]] = defaultdict(list)
    for i in chosen:
        by_connection[c.connection[i]].append(i)
    runs: list[tuple[int, int, int, list[int]]] = []
    for connection, positions in by_connection.items():
        positions.sort(key=c.first.__getitem__)
        run: list[int] = []
        first = last = 0
        for i in positions:
            if run and c.first[i] > last + NEAR:
                runs.append((connection, first, last, run))
                run = []
            if not run:
                first = c.first[i]
            run.append(i)
            last = max(last, c.last[i]) if len(run) > 1 else c.last[i]
        runs.append((connection, first, last, run))
    return runs


def _read_back(
    capture: str, options: Any, index: CaptureIndex, decoder: Any, info: ConnectionInfo, first: int, last: int
) -> Iterator[Exchange]:
    """The exchanges of `info` whose frames lie between packets `first` and `last`, every body decoded (the filter's
    verdict would judge them by the pass's own connection numbers) by `decoder`, which knows the topic names the full
    read learnt, given the connection's session as the full read left it."""
    if decoder is not None:
        state = index.sessions[info.id - 1] if info.id <= len(index.sessions) else Session().state()
        decoder.new_session = lambda: Session.restored(state)
    return connection_exchanges(Path(capture), options, index.offsets, info, first, last, decoder)


def _as_indexed(exchange: Exchange, index: CaptureIndex, i: int) -> Exchange:
    """The read-back exchange numbered as the full read numbered it."""
    c = index.columns
    queued, ahead = c.queued[i], c.ahead[i]
    return replace(
        exchange,
        id=i + 1,
        connection=index.connections[c.connection[i]],
        request=_at(exchange.request, c.request_offset[i]),
        response=_at(exchange.response, c.response_offset[i]),
        queued=None if queued == NONE else queued,
        ahead=ahead or None,
    )


def _at(message: Message | None, offset: int) -> Message | None:
    if message is None or offset == NONE or message.frame.offset == offset:
        return message
    return replace(message, frame=replace(message.frame, offset=offset))
