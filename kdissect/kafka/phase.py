"""Where a connection is in its life, and the one table of the moves between phases.

A connection starts PROBING: nobody knows yet which side is the client, so each direction's bytes wait in a
probe (on a Kafka port only until its first byte). Once a side is known it is KAFKA, and SASL while raw SASL
tokens follow a SaslHandshake v0 request, until a request comes again. It ends in one of three ways, each
counted apart: CLOSED, told by a `ConnectionEnd`; EMPTY, when not a byte went either way (a SYN flood, a port
scan); IGNORED, when it is not Kafka (its bytes dropped as soon as that is known). A connection that is not Kafka
but that the shared `side_streams` hook takes (a schema registry's HTTP, read for the schemas it carries) is SIDE
until it ends, then IGNORED all the same. An ended connection stays in the flow table until it is evicted, so that
its late packets are known for what they are.

`Connection` moves only through `moved`, so a move this table does not list is a bug caught where it happens.
"""

from __future__ import annotations

from enum import Enum


class Phase(Enum):
    """A connection's phase; `over` says it has ended (its packets are no longer dissected)."""

    PROBING = ("probing", False)
    KAFKA = ("kafka", False)
    SASL = ("sasl", False)
    CLOSED = ("closed", True)
    EMPTY = ("empty", True)
    IGNORED = ("ignored", True)
    SIDE = ("side", False)

    def __init__(self, _: str, over: bool) -> None:
        self.over = over


PROBING, KAFKA, SASL, CLOSED, EMPTY, IGNORED, SIDE = Phase

MOVES: dict[Phase, frozenset[Phase]] = {
    PROBING: frozenset({KAFKA, IGNORED, EMPTY, SIDE}),  # oriented; not Kafka; closed before a byte said anything; taken
    KAFKA: frozenset({SASL, CLOSED, EMPTY}),  # a SaslHandshake v0 request; closed, with or without bytes
    SASL: frozenset({KAFKA, CLOSED}),  # a request again; closed (its handshake request was a byte)
    CLOSED: frozenset(),
    EMPTY: frozenset(),
    IGNORED: frozenset(),
    SIDE: frozenset({IGNORED}),  # closed: counted with the connections that are not Kafka
}
"""The phases each phase may move to; the ended ones move no more."""


class PhaseError(AssertionError):
    """A move the table does not allow: a bug in the core, never something a capture can cause."""


def moved(phase: Phase, to: Phase) -> Phase:
    """`to`, when a connection in `phase` may move there."""
    if to not in MOVES[phase]:
        raise PhaseError(f"a connection {phase.name} cannot become {to.name}")
    return to
