"""Resource bounds: what a hostile or broken capture may claim before kdissect stops believing it.

Defaults let a 24 GiB machine survive any input; the CLI exposes each one.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    max_frame_size: int = 100 * MiB
    """A size prefix above this is a diagnostic on its stream, never an allocation."""
    max_stream_buffer: int = 16 * MiB
    """Out-of-order bytes held per stream direction while waiting for a hole to fill; past it, a gap."""
    max_pending_frame: int = 128 * MiB
    """Bytes of one frame held while its remaining segments arrive."""
    max_outstanding_requests: int = 4096
    """Requests per connection waiting for a response; the oldest is reported unanswered past it."""
    max_connections: int = 65536
    """Concurrent connections tracked; the least recently active one is evicted past it."""
    max_decompressed_batch: int = 64 * MiB
    """Decompressed bytes of one record batch (or legacy wrapper message); a bomb stops here."""
    max_decompressed_exchange: int = 512 * MiB
    """Decompressed bytes across all batches of one request or response."""
    max_nesting: int = 8
    """Depth of message sets nested in compressed wrapper messages."""
    max_fragment_bytes: int = 4 * MiB
    """Bytes held per incomplete IP datagram while its fragments arrive."""


DEFAULT_LIMITS = Limits()
