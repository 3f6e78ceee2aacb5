"""The events the core yields to its drivers: exchanges, notices, and connection summaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from kdissect.diagnostic import Diagnostic
from kdissect.kafka.exchange import ConnectionInfo, Exchange


@dataclass(frozen=True, slots=True)
class Notice:
    """A diagnostic about the capture itself, a packet, or a connection's streams rather than one message."""

    diagnostic: Diagnostic
    connection: ConnectionInfo | None
    ts: int
    packet: int
    """Packet number it concerns; 0 when it concerns no single packet."""


Ending = Literal["fin", "reset", "capture-end", "evicted", "reused"]


@dataclass(frozen=True, slots=True)
class ConnectionEnd:
    """A Kafka connection is over (or the capture is): its totals, client side first in each pair."""

    connection: ConnectionInfo
    ended: Ending
    first_ts: int
    last_ts: int
    packets: tuple[int, int]
    bytes: tuple[int, int]
    """Payload bytes delivered by reassembly, client to broker and back."""
    requests: int
    responses: int
    unanswered: int
    gaps: int
    gap_bytes: int
    retransmitted: int
    """Payload bytes seen again after their first copy."""
    out_of_order: int
    """Segments that arrived before a hole in front of them was filled."""
    mid_stream: bool
    """The capture holds no SYN for this connection: it started before the capture did."""


Event = Union[Exchange, Notice, ConnectionEnd]
