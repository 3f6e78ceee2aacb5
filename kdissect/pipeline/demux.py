"""A capture's packets dealt to one dissector per connection key, in one pass in capture order: what Spark does to
each key's group of packets on some task (core.py), done on one machine without sorting the capture first.

Every key's dissector sees exactly the packets Spark's would, in the same order, so its events, and the rows made
of them, are Spark's. The dissectors share one body decoder, whose topic names are the key's own (`TopicNames`,
swapped in before each packet), as on Spark.

The doctor judges a capture as `kdissect doctor` does, so the events it is given are numbered as one dissector
of the whole capture numbers them (`for_doctor`): exchanges in the order they complete, connections in the order
they open. Dealt to a dissector per key the same packets complete the same events in the same order, so the
numbers are the CLI's (tests/test_tables.py checks the findings against `kdissect doctor` on every capture). The
numbers also map back to the tables' identifiers (`exchange_ids`, `connection_ids`), which the findings table uses.

`kdissect tables --jobs N` splits a capture between processes by connection key (`Share`): each makes the rows
of its own keys, which are the rows one process makes of them, as a key's rows are its own. A process that is not
the doctor's dissects only its keys; the doctor's dissects every key, to number as the CLI numbers, and marks
which are its own (`Keyed.mine`).
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from kdissect.capture.packet import Packet
from kdissect.dissector import Dissector, Options, make_dissector
from kdissect.events import ConnectionEnd, ConnectionInfo, Event, Exchange
from kdissect.events.exchange import new_exchange
from kdissect.net.flow_key import flow_key
from kdissect.pipeline import rows
from kdissect.pipeline.table_rows import KeyRows

HASHED = 1 << 32
"""Keys are shared out by their CRC-32 (stable across processes and runs, unlike Python's salted `hash`)."""


@dataclass(frozen=True)
class Share:
    """The connection keys one process owns: those whose CRC-32 falls in [low, high)."""

    low: int = 0
    high: int = HASHED

    def owns(self, key: bytes) -> bool:
        return self.low <= zlib.crc32(key) < self.high


EVERY_KEY = Share()


def shares(n: int, first: float) -> list[Share]:
    """`n` shares of the keys: the first (the doctor's process, which dissects every key anyway) a fraction
    `first` of them, the others the rest in equal parts."""
    if n == 1:
        return [EVERY_KEY]
    bounds = [0] + [round(HASHED * (first + (1 - first) * i / (n - 1))) for i in range(n)]
    return [Share(low, high) for low, high in zip(bounds, bounds[1:])]


class Keyed:
    """One connection key's dissector and what numbers its connections and exchanges."""

    __slots__ = ("key", "dissector", "mine", "rows", "last_index", "connections", "exchanges", "info", "cli_info")

    def __init__(self, key: bytes, dissector: Dissector, first_index: int, mine: bool) -> None:
        self.key = key
        self.dissector = dissector
        self.mine = mine
        """Whether the key is in the process's share: its rows are made here."""
        self.rows = KeyRows(first_index)
        """Its first packet, topic names and exchange ids: what its rows are numbered and named with."""
        self.last_index = first_index
        self.connections = array("q")
        """The CLI's number of each of the key's connections, by the dissector's own id - 1."""
        self.exchanges = array("q")
        """The CLI's number of each of the key's exchanges, by the dissector's own id - 1 (for `Exchange.ahead`)."""
        self.info: ConnectionInfo | None = None
        self.cli_info: ConnectionInfo | None = None
        """The last connection seen, and the same numbered as the CLI numbers it."""


class ConnectionDemux:
    """Packets in, (key, events) out; `numbered` keeps the CLI's numbers for the doctor."""

    def __init__(self, options: Options, decoder: Any, secrets: bytes = b"", numbered: bool = False, share: Share = EVERY_KEY) -> None:
        """`secrets`: the TLS key logs the capture embeds, given to every key's dissector from its start (as the
        Spark job gives them, job.embedded_secrets). Keys outside `share` are not dissected, unless `numbered`."""
        self.options = options
        self.decoder = decoder
        self.secrets = secrets
        self.numbered = numbered
        self.share = share
        self.keys: dict[bytes, Keyed] = {}
        self.others: set[bytes] = set()
        """The keys of other processes, not dissected here."""
        self.packets = 0
        """Every packet read, keyed or not: the tables' summary counts them all."""
        self.exchange_ids = array("q")
        self.connection_ids = array("q")
        """With `numbered`: the tables' exchange_id and connection_id by the CLI's number - 1."""

    def feed(self, packet: Packet) -> tuple[Keyed, list[Event]] | None:
        self.packets += 1
        key = flow_key(packet.linktype, packet.data)
        if key is None:
            return None
        keyed = self.keys.get(key)
        if keyed is None:
            if key in self.others:
                return None
            mine = self.share.owns(key)
            if not mine and not self.numbered:
                self.others.add(key)
                return None
            keyed = self.keys[key] = Keyed(key, make_dissector(self.options, self.decoder), packet.index, mine)
            if self.secrets:
                keyed.dissector.add_tls_keylog(self.secrets)
        keyed.last_index = packet.index
        dissector = keyed.dissector
        if self.decoder is not None:
            self.decoder.topic_names = keyed.rows.names
        opened = dissector.counters.connections
        events = dissector.feed(packet)
        if self.numbered and dissector.counters.connections != opened:
            self.connection_ids.append(keyed.rows.first_index << rows.CONNECTION_BITS | dissector.counters.connections)
            keyed.connections.append(len(self.connection_ids))
        return keyed, events

    def finish(self) -> Iterator[tuple[Keyed, list[Event]]]:
        """Every key's dissector finished, those with a connection still open in the order the CLI settles them
        (the order their connections opened)."""
        order = sorted(self.keys.values(), key=lambda k: k.connections[-1] if k.connections else 0)
        for keyed in order:
            if self.decoder is not None:
                self.decoder.topic_names = keyed.rows.names
            yield keyed, keyed.dissector.finish()
        self.keys = {}

    def for_doctor(self, keyed: Keyed, event: Event) -> Event:
        """The event numbered as the CLI numbers it (`numbered` demuxes only)."""
        if type(event) is Exchange:
            number = len(self.exchange_ids) + 1
            self.exchange_ids.append(rows.exchange_id(event))
            keyed.exchanges.append(number)
            ahead = event.ahead
            return new_exchange(
                number,
                self._info(keyed, event.connection),
                event.status,
                event.request,
                event.response,
                event.queued,
                None if ahead is None else keyed.exchanges[ahead - 1],
            )
        if type(event) is ConnectionEnd:
            return replace(event, connection=self._info(keyed, event.connection))
        return event

    @staticmethod
    def _info(keyed: Keyed, info: ConnectionInfo) -> ConnectionInfo:
        if info is not keyed.info:
            keyed.info, keyed.cli_info = info, replace(info, id=keyed.connections[info.id - 1])
        assert keyed.cli_info is not None
        return keyed.cli_info
