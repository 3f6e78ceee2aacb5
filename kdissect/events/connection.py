"""Connections: their two ends, oriented client to broker, and the summary told when one is over."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Endpoint:
    address: str
    port: int

    @classmethod
    def from_packed(cls, packed: bytes, port: int) -> Endpoint:
        return cls(socket.inet_ntoa(packed) if len(packed) == 4 else str(ipaddress.ip_address(packed)), port)

    def __str__(self) -> str:
        return f"[{self.address}]:{self.port}" if ":" in self.address else f"{self.address}:{self.port}"


@dataclass(frozen=True, slots=True)
class TlsInfo:
    """What a TLS connection's hellos (and keys) told. Never key material: `secret` is a key log label."""

    version: str | None
    cipher_suite: str | None
    sni: str | None
    alpn: tuple[str, ...]
    """The protocols the client offered; the one the server chose once it is known."""
    secret: str | None = None
    """The key log label of the secret that decrypted the connection (CLIENT_RANDOM, CLIENT_TRAFFIC_SECRET_0)."""


@dataclass(frozen=True, slots=True)
class TlsTotals:
    """A TLS connection's records and plaintext when it is over, client side first in each pair."""

    records: tuple[int, int]
    """Encrypted records each way (TLS 1.2 handshake Finished included)."""
    decrypted: tuple[int, int]
    plaintext: tuple[int, int]
    """Decrypted application bytes handed to the Kafka framer each way."""
    exchanges_hidden: int
    """An estimate of the requests in records that stayed encrypted: one per client write."""


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """A TCP connection, oriented: which side is the Kafka client and which the broker."""

    id: int
    """1-based, in the order connections first appear in the capture."""
    client: Endpoint
    broker: Endpoint
    tls: TlsInfo | None = None
    """Set once a TLS connection's hellos are read; events before that carry None."""
    taps: tuple[str, ...] = ()
    """The captures that saw the connection, when several are read as one (kdissect/taps/); () for one capture."""

    def __str__(self) -> str:
        return f"{self.client} → {self.broker}"


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
    tls: TlsTotals | None = None
    """For a TLS connection: its records, what was decrypted, and what stayed hidden."""
    closed_by: Literal["client", "broker"] | None = None
    """The side whose FIN or RST the capture saw first; None when neither closed it (the capture ended, an eviction)."""
