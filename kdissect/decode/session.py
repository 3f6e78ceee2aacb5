"""What one connection's earlier messages tell about reading its later ones."""

from __future__ import annotations


class Session:
    """Per-connection state the decoder keeps: the SASL mechanism chosen, the group protocols joined."""

    __slots__ = ("sasl_mechanism", "protocol_types")

    def __init__(self) -> None:
        self.sasl_mechanism: str | None = None
        self.protocol_types: dict[str, str] = {}
        """Group id -> protocol type from JoinGroup, for SyncGroup versions that do not repeat it."""
