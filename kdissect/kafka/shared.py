"""What every connection of one dissector shares: settings, the catalogue, the body decoder, the event queue, the totals.

The dissector makes one `Shared` and hands it to each `Connection`, so the connections never reach back up
to the dissector that owns them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kdissect.diagnostic import Diagnostic
from kdissect.events import ConnectionInfo, Event, Message, RequestHeader
from kdissect.limits import Limits
from kdissect.net.reassembly import Patience
from kdissect.schema import Catalog
from kdissect.tls.keylog import KeyLog


class BodyDecoder(Protocol):
    """Decodes message bodies; returns the message with `body` and its diagnostics filled in. Never raises.

    A session is the decoder's own per-connection state (what earlier messages said about reading later
    ones); the connection only keeps it and hands it back.
    """

    def new_session(self) -> Any: ...

    def request(self, message: Message, session: Any) -> Message: ...

    def response(self, message: Message, request: Message | None, session: Any) -> Message:
        """`request` is None for an orphan response: the decoder keeps its bytes and reads what it can tell."""
        ...

    def carries_state(self, api_key: int, version: int, direction: str) -> bool:
        """Whether later bodies need what this one says (a SASL mechanism, a group's protocol type, topic ids
        beside their names): such a body is decoded even when nobody will look at its exchange."""
        ...


Keep = Callable[[ConnectionInfo, Message, "Message | None"], bool]
SideStreams = Callable[[Any, Any], bool]
"""Given a connection found not to be Kafka (its two reassemblers, whose sinks are the probes holding its first bytes,
and its two ends), take it over by giving its streams sinks of its own and True; False leaves it ignored."""
"""A verdict from headers: given the connection, the request and (once it is there) the response, False when
nobody will look at the exchange, so its bodies need not be decoded. It must stay False once it said False."""


@dataclass
class Counters:
    """Totals over the whole capture, for summaries."""

    packets: int = 0
    bytes: int = 0
    first_ts: int | None = None
    last_ts: int | None = None
    connections: int = 0
    kafka_connections: int = 0
    ignored_connections: int = 0
    """Connections on other ports that never showed a Kafka request."""
    evicted_connections: int = 0
    empty_connections: int = 0
    """Connections on a Kafka port that carried no data (SYN floods, port scans, refused connects)."""
    exchanges: int = 0


class Shared:
    """What every connection of one dissector shares: settings, the output queue, counters."""

    def __init__(
        self,
        ports: frozenset[int],
        limits: Limits,
        reorder: bool,
        decoder: BodyDecoder | None,
        catalog: Catalog,
        keep: Keep | None = None,
        side_streams: SideStreams | None = None,
    ) -> None:
        self.ports = ports
        self.catalog = catalog
        """The APIs headers are read and requests recognised by."""
        self.limits = limits
        self.reorder = reorder
        self.patience = Patience(limits.max_late_packets, limits.max_late_bytes, limits.max_late_ms * 1_000_000)
        self.decoder = decoder
        self.keep = keep
        self.side_streams = side_streams
        self.events: list[Event] = []
        self.counters = Counters()
        self.tls_keys = KeyLog()
        self.tls_waiting: set[Any] = set()
        """TLS sessions holding records for keys that a later key log (a pcapng secrets block) may bring."""
        self.grown = 0
        """Memory the connections took on besides the capture's bytes (new connections, waiting requests), priced
        as `Connection.priced` prices it: the dissector checks its global bound when this and the bytes read add up."""

    def new_session(self) -> Any:
        return self.decoder.new_session() if self.decoder is not None else None

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def _skip(self, info: ConnectionInfo, request: Message, response: Message | None) -> bool:
        """Nobody will look at this exchange and the body in hand teaches nothing later bodies need."""
        keep = self.keep
        if keep is None or keep(info, request, response):
            return False
        header = request.header
        if not isinstance(header, RequestHeader):
            return False  # a raw SASL token: rare, and it may teach what later tokens need
        direction = "request" if response is None else "response"
        return not self.decoder.carries_state(header.api_key, header.api_version, direction)  # type: ignore[union-attr]  # asked only with a decoder

    def decode_request(self, message: Message, session: Any, info: ConnectionInfo) -> Message:
        if self.decoder is None or self._skip(info, message, None):
            return message
        try:
            return self.decoder.request(message, session)
        except Exception as exc:  # a decoder bug must cost one body, never the pairing or the run
            return _decoder_failed(message, exc)

    def decode_response(self, message: Message, request: Message | None, session: Any, info: ConnectionInfo) -> Message:
        if self.decoder is None or (request is not None and self._skip(info, request, message)):
            return message
        try:
            return self.decoder.response(message, request, session)
        except Exception as exc:  # as above
            return _decoder_failed(message, exc)


def _decoder_failed(message: Message, exc: Exception) -> Message:
    import logging  # loaded when a body fails to decode, not at every start

    logging.getLogger(__name__).debug("decoder failure", exc_info=exc)
    diagnostic = Diagnostic("decode.internal-error", f"kdissect failed to decode this body: {exc!r}", "error", "frame")
    return Message(message.frame, message.header, None, message.diagnostics + (diagnostic,))
