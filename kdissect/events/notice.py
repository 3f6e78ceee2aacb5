"""Notices: what the core says about the capture itself, a packet, or a connection's streams."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.diagnostic import Diagnostic
from kdissect.events.connection import ConnectionInfo


@dataclass(frozen=True, slots=True)
class Notice:
    """A diagnostic about the capture itself, a packet, or a connection's streams rather than one message."""

    diagnostic: Diagnostic
    connection: ConnectionInfo | None
    ts: int
    packet: int
    """Packet number it concerns; 0 when it concerns no single packet."""
