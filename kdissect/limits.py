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
    max_late_packets: int = 1024
    """A hole the peer has acknowledged past is held open for this many packets (of the whole capture) before it
    is declared lost, in case its segment was only captured late (SPAN ports, multi-queue NICs); so are responses
    whose packets acknowledge request bytes not yet seen."""
    max_late_bytes: int = 4 * MiB
    """... or until this many bytes of the stream wait behind it;"""
    max_late_ms: int = 10_000
    """... or for this much capture time."""
    max_outstanding_requests: int = 4096
    """Requests per connection waiting for a response; the oldest is reported unanswered past it."""
    max_outstanding_acks_zero: int = 64
    """acks=0 Produce requests per connection kept in case the broker answers them anyway (tansu does); past it
    the oldest is reported as expecting no response. Apache Kafka never answers them: without this bound a
    producer's acks=0 requests would wait, bodies and all, until `max_outstanding_requests`."""
    max_connections: int = 65536
    """Concurrent connections tracked; the least recently active one is evicted past it."""
    max_buffered_bytes: int = 192 * MiB
    """Memory held across all connections: frames being assembled, segments waiting for holes, undecided probes,
    requests waiting for responses, and each connection's own objects, priced in bytes with their overhead
    (`kafka/connection.py`: about 2.5 KB a connection, 6 KB once it carries data, 256 bytes a segment, 1 KB plus 8 times its frame a waiting
    request). Each is bounded per stream; this bounds their sum. Past it the least recently active connections
    are evicted, with one notice, until half of it is free."""
    max_decompressed_batch: int = 64 * MiB
    """Decompressed bytes of one record batch (or legacy wrapper message); a bomb stops here."""
    max_decompressed_exchange: int = 512 * MiB
    """Decompressed bytes across all batches of one request or response ..."""
    max_decompressed_ratio: int = 64
    """... and no more than `max_decompressed_batch` and this many per byte of its frame: what the frame earns. Real
    batches compress a few times to a few tens of times; wrappers nested in wrappers, or many batches of zeros,
    multiply it past a thousand, and their values would all be held while the exchange is written."""
    max_records_batch: int = 100_000
    """Records decoded into values per record batch (or compressed legacy wrapper); past it the rest are counted
    from the batch's header and named by a `records.not-shown` diagnostic, never built."""
    max_records_exchange: int = 200_000
    """Records, legacy messages and batches built per request or response, across all its records fields; past it
    batches are framed and counted only. With the JSON of each, about 1 KB apiece stays held while it is written."""
    max_records_capture: int = 1_000_000
    """The same across the whole capture, besides one record per 8 bytes of frames decoded: a capture earns what
    its traffic could really carry, so a few MB of tiny records compressed a thousandfold cannot take minutes."""
    max_array_elements: int = 200_000
    """Elements kept per array of a message body; the rest are read (so what follows still decodes) and counted."""
    max_elements_message: int = 1_000_000
    """Elements of arrays of structs read per message body, at every depth together. Each array is held to the bytes
    left, but a struct can take no bytes (an empty one, in a user's spec), and arrays inside arrays multiply: 400
    bytes could ask for 26 million structs. Past it the body is read no further (`body.elements-cut`)."""
    max_nesting: int = 8
    """Depth of message sets nested in compressed wrapper messages."""
    max_fragment_bytes: int = 4 * MiB
    """Bytes held per incomplete IP datagram while its fragments arrive."""


DEFAULT_LIMITS = Limits()
