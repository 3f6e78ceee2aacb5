"""The tap's settings, apart from the tap: every command that takes the --metrics-* options makes them, and only
one that taps imports the tap (its doctor, its metric families)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TapSettings:
    top: int = 100
    """Label values of each kind (client ids, topics, groups, hosts, brokers, software) with a label of their own."""
    most: int = 10_000
    """Series per metric; past it, new ones are folded into one whose labels are all `other`."""
    idle: float = 600.0
    """Seconds without a measurement after which a series, a label value, a relation is let go."""
    window: float = 60.0
    """Seconds of traffic each doctor sees: the findings exported are the last window's."""
    doctor: tuple[str, ...] = ()
    """The doctor's `ID.threshold=VALUE` settings."""
