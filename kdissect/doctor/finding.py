"""What the doctor tells: a finding, with the evidence a user can open (`kdissect show F --exchange N`) and count
again (`kdissect read F -Y FILTER`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["info", "warning", "error"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error")
"""Mildest first: `--fail-on warning` fails on a warning or an error."""
Unit = Literal["exchange", "connection"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a finding shows on the wire. Lists hold the first few of each; `count` is how many exchanges (or
    connections, for a finding about connections) the display filter `filter` selects: the number its title tells."""

    exchanges: tuple[int, ...] = ()
    """Exchange ids, as `read` numbers them and `show --exchange` opens them."""
    count: int = 0
    connections: tuple[int, ...] = ()
    client_ids: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    partitions: tuple[tuple[str, int | None], ...] = ()
    """(topic, partition); the partition is None where the finding concerns a whole topic."""
    first_ts: int | None = None
    last_ts: int | None = None
    """The time window (ns since the epoch) from the first piece of evidence to the last."""
    filter: str = ""
    """The display filter that selects exactly the evidence: `kdissect read FILE -Y FILTER` shows it, `-T fields`
    counts it."""
    unit: Unit = "exchange"
    """What `count` counts of what the filter selects: exchanges, or the distinct connections they belong to."""
    ids: tuple[int, ...] = ()
    """The evidence exchanges the filter shows (`exchanges` being the first few): up to `trail.ID_CAP`, or every one
    when the doctor keeps every piece of evidence (`doctor -w` cuts them into a capture); what the report's timelines
    mark when a finding is chosen."""
    every_connection: tuple[int, ...] = ()
    """Every connection that is evidence by itself, kept only when the doctor keeps every piece of evidence."""


@dataclass(frozen=True, slots=True)
class Finding:
    id: str
    """Stable, dotted by family: `group.rebalance-storm`; `doctor --explain ID` documents it."""
    severity: Severity
    title: str
    """One line, starting with `evidence.count` and what it counts."""
    explanation: str
    """What happens in Kafka and why it matters."""
    advice: str
    """What to do, with the settings named as the client's own library names them."""
    evidence: Evidence
    caused_by: tuple[str, ...] = ()
    """Ids of other findings of the same capture that explain this one: fix those first."""
    software: str | None = None
    """The client library the evidence's clients run, when they run one (what the advice is worded for)."""
