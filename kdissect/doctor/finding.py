"""What the doctor tells: a finding, with the evidence a user can open with `kdissect show F --exchange N`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["info", "warning", "error"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error")
"""Mildest first: `--fail-on warning` fails on a warning or an error."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a finding shows on the wire. Lists hold the first few of each; `exchange_count` counts every
    evidence exchange the display filter shows (the title counts them all)."""

    exchanges: tuple[int, ...] = ()
    """Exchange ids, as `read` numbers them and `show --exchange` opens them."""
    exchange_count: int = 0
    connections: tuple[int, ...] = ()
    client_ids: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    partitions: tuple[tuple[str, int | None], ...] = ()
    """(topic, partition); the partition is None where the finding concerns a whole topic."""
    first_ts: int | None = None
    last_ts: int | None = None
    """The time window (ns since the epoch) from the first piece of evidence to the last."""
    every_exchange: tuple[int, ...] = ()
    every_connection: tuple[int, ...] = ()
    """Every evidence exchange the filter shows, and every connection that is evidence by itself, kept only when the
    doctor is asked to (`doctor -w` cuts them into a capture); the lists above are for people."""


@dataclass(frozen=True, slots=True)
class Finding:
    id: str
    """Stable, dotted by family: `group.rebalance-storm`; `doctor --explain ID` documents it."""
    severity: Severity
    title: str
    """One line with the numbers."""
    explanation: str
    """What happens in Kafka and why it matters."""
    advice: str
    """Which client or broker setting to check."""
    evidence: Evidence
