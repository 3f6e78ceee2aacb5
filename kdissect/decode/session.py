"""What one connection's earlier messages tell about reading its later ones."""

from __future__ import annotations

State = tuple[str | None, dict[str, str], dict[str, str]]
"""What a session knows as plain values (an index keeps it): the SASL mechanism, protocol types, protocol names."""


class Session:
    """Per-connection state the decoder keeps: the SASL mechanism chosen, the group protocols joined."""

    __slots__ = ("sasl_mechanism", "protocol_types", "protocol_names")

    def __init__(self) -> None:
        self.sasl_mechanism: str | None = None
        self.protocol_types: dict[str, str] = {}
        """Group id -> protocol type from JoinGroup, for SyncGroup versions that do not repeat it."""
        self.protocol_names: dict[str, str] = {}
        """Group id -> the protocol of the group, for the same SyncGroup versions: a consumer group's "stream"
        assignor says its assignments carry Kafka Streams' user data. From a JoinGroup request that offers one
        protocol (Streams offers its assignor alone), which is decoded even under a filter, and from the answer that
        names the coordinator's choice."""

    def state(self) -> State:
        """What it knows, copied: later messages of the connection do not change it."""
        return self.sasl_mechanism, dict(self.protocol_types), dict(self.protocol_names)

    @classmethod
    def restored(cls, state: State) -> Session:
        """A session that knows `state`, its tables its own."""
        session = cls()
        mechanism, types, names = state
        session.sasl_mechanism, session.protocol_types, session.protocol_names = mechanism, dict(types), dict(names)
        return session
