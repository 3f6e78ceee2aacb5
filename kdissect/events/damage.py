"""Which events tell that the capture lost bytes: what makes a read's exit status 1, and what an index keeps of it."""

from __future__ import annotations

from typing import Any

from kdissect.events.exchange import Exchange
from kdissect.events.notice import Notice


def lost_codes(event: Any) -> list[str]:
    """The codes of the diagnostics `event` carries that say the capture lost bytes (none for most events)."""
    kind = type(event)
    if kind is Exchange:
        return [d.code for d in event.diagnostics if d.lost]
    if kind is Notice and event.diagnostic.lost:
        return [event.diagnostic.code]
    return []
