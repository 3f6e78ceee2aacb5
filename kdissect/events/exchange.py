"""Exchanges: a request and its response (or either alone), each side a frame, its header and its body."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from kdissect.diagnostic import Diagnostic
from kdissect.events.connection import ConnectionInfo
from kdissect.events.frame import Frame
from kdissect.events.headers import RequestHeader, ResponseHeader, SaslTokenHeader
from kdissect.frozen import fast_constructor


@dataclass(frozen=True, slots=True)
class Message:
    """One side of an exchange: a frame, its header, and its body as far as it could be read."""

    frame: Frame
    header: RequestHeader | ResponseHeader | SaslTokenHeader | None
    body: Any = None
    """The decoded body, or None when there is no decoder for it or decoding was not asked for."""
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def ts(self) -> int:
        return self.frame.ts

    @property
    def size(self) -> int:
        """Bytes on the wire, size prefix included."""
        return self.frame.size + 4


Status = Literal["ok", "error", "malformed", "unanswered", "no-response-expected", "orphan-response", "unreadable"]
"""ok: request and response, both read whole, no error code in the response; error: the response carries an error
code; malformed: a side the capture holds only part of, or whose header or body could not be read; unanswered:
no response in the capture; no-response-expected: a Produce with acks=0 left unanswered, as it should be;
orphan-response: a response whose request is not in the capture; unreadable: a request whose header cannot be
read, so nothing can pair with it."""

MALFORMED = frozenset({"frame.incomplete", "header.unreadable", "body.malformed", "decode.internal-error"})
"""Diagnostics that make a message malformed: bytes missing, or a header or body that could not be read."""


def answered(request: Message, response: Message) -> Status:
    """The status of a request and its response. Error codes are a decoded body's `errors` (decode.body.Body);
    without a decoder an exchange is ok once both frames are whole and their headers read."""
    for message in (request, response):
        for d in message.diagnostics:
            if d.code in MALFORMED:
                return "malformed"
    return "error" if getattr(response.body, "errors", None) else "ok"


@dataclass(frozen=True, slots=True)
class Vantage:
    """An exchange seen from both ends of the network: captured on the client's host and on the broker's, each with
    its own clock. Each capture's latency is measured on its own clock alone; the broker's side is the shorter."""

    broker: int
    """Nanoseconds the broker took: from the request's last byte to the response's, as the capture nearest to it saw."""
    network: int
    """Nanoseconds the network (and the client's host) added: the client-side capture's latency less the broker's."""


@dataclass(frozen=True, slots=True)
class Exchange:
    id: int
    """1-based, in the order exchanges are completed."""
    connection: ConnectionInfo
    status: Status
    request: Message | None
    response: Message | None
    queued: int | None = None
    """Nanoseconds the request waited behind earlier ones on its connection before the broker took it: a broker
    handles one connection's requests one at a time, in order, so it starts on this one when it has sent the previous
    response (0 when that came before this request; None without a request and a response)."""
    ahead: int | None = None
    """When `queued`: the exchange whose response this one waited for."""
    vantage: Vantage | None = None
    """Broker and network time, when two captures saw the exchange from both ends (kdissect/taps/)."""

    @property
    def request_header(self) -> RequestHeader | None:
        header = self.request.header if self.request else None
        return header if isinstance(header, RequestHeader) else None

    @property
    def sasl_token(self) -> bool:
        """A raw SASL token and the broker's reply, exchanged after SaslHandshake v0 without Kafka headers."""
        message = self.request or self.response
        return message is not None and isinstance(message.header, SaslTokenHeader)

    @property
    def api_key(self) -> int | None:
        header = self.request_header
        return header.api_key if header else None

    @property
    def api_name(self) -> str | None:
        """The API's name, as the run's catalogue calls it; None without a request header, or for a key no spec
        defines."""
        header = self.request_header
        return header.api_name if header else None

    @property
    def api_version(self) -> int | None:
        header = self.request_header
        return header.api_version if header else None

    @property
    def correlation_id(self) -> int | None:
        header = self.request_header
        if header:
            return header.correlation_id
        if self.response and self.response.header:
            return self.response.header.correlation_id
        return None

    @property
    def client_id(self) -> str | None:
        header = self.request_header
        return header.client_id if header else None

    @property
    def latency(self) -> int | None:
        """Nanoseconds from the request's last byte to the response's last byte."""
        if self.request and self.response:
            return self.response.ts - self.request.ts
        return None

    @property
    def service(self) -> int | None:
        """The latency less the time the request waited in line (`queued`): how long the broker took on it."""
        latency = self.latency
        return None if latency is None else latency - (self.queued or 0)

    @property
    def ts(self) -> int:
        """When the exchange started: its request, or for an orphan its response."""
        message = self.request or self.response
        assert message is not None
        return message.ts

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        out: tuple[Diagnostic, ...] = ()
        if self.request:
            out += self.request.diagnostics
        if self.response:
            out += self.response.diagnostics
        return out


new_message = fast_constructor(Message)
new_exchange = fast_constructor(Exchange)
