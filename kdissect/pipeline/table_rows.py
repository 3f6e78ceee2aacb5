"""One connection key's events as the tables' rows: the code both engines run, Spark's core stage (core.py) and
`kdissect tables` (local.py).

Each connection key (a TCP 4-tuple, net/flow_key.py) is dissected by a dissector of its own, whose decoder names
topic ids only from what that key's connections said (`TopicNames`): Spark dissects a key on whichever task it
lands on, so that is all a row can know there, and the local engine does the same so that both write the same
rows. Names learnt on other connections fill the `topic`/`topics` columns afterwards (`topic_pairs`).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import Any

from kdissect.events import ConnectionEnd, Event, Exchange, Notice
from kdissect.pipeline import rows

KINDS = ("exchange", "record", "diagnostic")
"""The tables' rows by kind, as the core stage names them (tables.KINDS)."""
STATS = ("packets", "connections", "exchanges", "records", "diagnostics")


class TopicNames(dict):
    """A key's topic id -> name table for the decoder, noting the ids it was asked for and did not have."""

    __slots__ = ("missed",)

    def __init__(self) -> None:
        super().__init__()
        self.missed: set[str] = set()

    def __contains__(self, key: object) -> bool:
        found = dict.__contains__(self, key)
        if not found:
            self.missed.add(key)  # type: ignore[arg-type]  # the decoder looks up topic ids, which are str
        return found


class KeyRows:
    """What one connection key's rows are numbered and named with."""

    __slots__ = ("first_index", "names", "exchange_ids")

    def __init__(self, first_index: int) -> None:
        self.first_index = first_index
        """The key's first packet in the capture: its connections' ids start with it (`rows.CONNECTION_BITS`)."""
        self.names = TopicNames()
        self.exchange_ids = array("q")
        """The exchange_id of each of the key's exchanges, by its dissector's own number - 1: what `Exchange.ahead`
        names becomes an exchange_id in the json column (`queued_behind`)."""


class TableRows:
    """Rows of the exchanges, records and diagnostics tables, gathered per kind until the engine takes them."""

    def __init__(self, wanted: Callable[[Exchange], bool], values: Any = None) -> None:
        self.wanted = wanted
        self.values = values
        """The `values.reader.ValueReader` whose readings fill the records' value columns (config.values_of)."""
        """Exchanges it rejects are left out with their records and diagnostics; notices stay."""
        from kdissect.pipeline.tables import KINDS as SCHEMAS

        self.out = {kind: rows.Columns(SCHEMAS[kind].names) for kind in KINDS}
        self.stats = dict.fromkeys(STATS, 0)

    def add(self, events: Iterable[Event], capture: str, key: KeyRows) -> None:
        """The rows of one key's events."""
        stats, out = self.stats, self.out
        first_index = key.first_index
        for event in events:
            if isinstance(event, Exchange):
                xid = rows.exchange_id(event)
                key.exchange_ids.append(xid)
                if not self.wanted(event):
                    continue
                cid = first_index << rows.CONNECTION_BITS | event.connection.id
                records = rows.add_records(out["record"], event, capture, xid, cid, self.values)
                ahead = None if event.ahead is None else key.exchange_ids[event.ahead - 1]
                row = rows.exchange_row(event, capture, xid, cid, key.names.missed, records, ahead, self.values)
                date, api = rows.day(event.ts), row["api_name"] or rows.UNKNOWN
                out["exchange"].add(row, date, api, len(row["json"]))
                stats["exchanges"] += 1
                if records:
                    out["record"].grown(records, date, api)
                    stats["records"] += records
                for d in rows.exchange_diagnostic_rows(event, capture, xid, cid):
                    out["diagnostic"].add(d, date, api)
                    stats["diagnostics"] += 1
            elif isinstance(event, Notice):
                nid = first_index << rows.CONNECTION_BITS | event.connection.id if event.connection is not None else None
                out["diagnostic"].add(rows.notice_row(event, capture, nid), rows.day(event.ts or None), rows.NONE)
                stats["diagnostics"] += 1
            elif isinstance(event, ConnectionEnd):
                stats["connections"] += 1

    def file_diagnostics(self, diagnostics: Iterable, capture: str) -> None:
        """What the capture reader found odd about the file (`capture.oddities`), one row each."""
        for d in diagnostics:
            self.out["diagnostic"].add(rows.file_row(d, capture), rows.NONE, rows.NONE)
            self.stats["diagnostics"] += 1


def name_exchange(row: dict, names: dict[str, str]) -> None:
    """An exchange row's `topics` with the ids its connection could not name named from every connection of the
    job, then `unresolved_topic_ids` dropped: as job.name_topics does it in Spark SQL (`array_distinct(concat(...))`)."""
    unresolved = row.pop("unresolved_topic_ids", None) or ()
    if names and unresolved:
        named = [names[i] for i in unresolved if i in names]
        row["topics"] = list(dict.fromkeys(row["topics"] + named))


def name_record(row: dict, names: dict[str, str]) -> None:
    """A record row's `topic` named by its `topic_id` from every connection of the job, when its own could not."""
    if row["topic"] is None and row["topic_id"] is not None:
        row["topic"] = names.get(row["topic_id"])
