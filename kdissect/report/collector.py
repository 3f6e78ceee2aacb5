"""What the report page is made of, gathered in the one pass over the capture that also feeds the doctor: `stats`'
totals, the timelines, the groups' swim lanes, the ladder's episodes, the inventory, and a small index of every
exchange for the findings' evidence (whose ids are known only at the end).

A display filter (`-Y`) restricts what the page counts, as it restricts `stats`; the doctor, fed apart, sees every
exchange and restricts its evidence. Connections are counted whatever the filter, as the doctor's census counts them.
"""

from __future__ import annotations

from kdissect.events import ConnectionEnd, Exchange
from kdissect.filter import EVERYTHING, Filter
from kdissect.report.axis import Axis
from kdissect.report.index import ExchangeIndex
from kdissect.report.inventory import Inventory
from kdissect.report.ladder import Ladder
from kdissect.report.lanes import GroupLanes
from kdissect.report.timelines import Timelines
from kdissect.views.stats import Stats
from kdissect.views.summary import exchange_errors

MOST_CONNECTIONS = 100_000
"""Open connections whose client id is remembered until they end."""


class Collector:
    def __init__(self, poll_fraction: float, wanted: Filter = EVERYTHING, ladder: Filter = EVERYTHING) -> None:
        """`poll_fraction`: the doctor's consumer.long-poll threshold; `ladder`: the ladder's episode (without one,
        `wanted`'s exchanges when it filters, else the longest rebalances)."""
        self.wanted = wanted
        self.stats = Stats()
        self.axis = Axis()
        self.timelines = Timelines(self.axis, poll_fraction)
        self.index = ExchangeIndex()
        self.lanes = GroupLanes()
        self.ladder = Ladder(ladder if ladder.active else wanted)
        self.inventory = Inventory()
        self.client_of: dict[int, str] = {}
        """Connection id -> the first client id its requests carried, until it ends."""

    def add(self, event: object) -> bool:
        """Whether the event is an exchange the report shows."""
        if isinstance(event, Exchange):
            errors = [code for _, code, _ in exchange_errors(event)]
            self.index.add(event, errors)
            client_id = event.client_id
            if client_id and event.connection.id not in self.client_of and len(self.client_of) < MOST_CONNECTIONS:
                self.client_of[event.connection.id] = client_id
            if self.wanted.active and not self.wanted.matches(event):
                return False
            self.stats.add(event)
            self.timelines.exchange(event, errors)
            self.lanes.exchange(event)
            self.ladder.exchange(event)
            self.inventory.exchange(event)
            return True
        if isinstance(event, ConnectionEnd):
            client_id = self.client_of.pop(event.connection.id, None)
            self.stats.add_connection(event)
            self.timelines.ended(event, client_id)
            self.inventory.ended(event, client_id)
        return False
