"""Request and response headers as the core read them: what pairing and every view need before a body."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.frozen import fast_constructor


@dataclass(frozen=True, slots=True)
class TaggedField:
    """A tagged field kept as it came: its tag, raw bytes, and where they start in the frame."""

    tag: int
    data: bytes
    offset: int


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    version: int
    """Header version: 0 (no client id), 1, or 2 (flexible, tagged fields)."""
    length: int
    """Bytes the header occupies at the start of the frame; the body follows."""
    tagged: tuple[TaggedField, ...] = ()
    api_name: str | None = None
    """The API's name in the catalogue the header was read by (None for a key no spec defines): every view names the
    API by it, so a user's spec names its APIs in every output."""


@dataclass(frozen=True, slots=True)
class ResponseHeader:
    correlation_id: int
    version: int
    length: int
    tagged: tuple[TaggedField, ...] = ()


@dataclass(frozen=True, slots=True)
class SaslTokenHeader:
    """Stands where a header would for a raw SASL token: after SaslHandshake v0 the client and the broker exchange
    size-delimited tokens with no Kafka header at all, so the body starts at the frame's first byte."""

    length: int = 0
    correlation_id: None = None


SASL_TOKEN = SaslTokenHeader()


new_request_header = fast_constructor(RequestHeader)
new_response_header = fast_constructor(ResponseHeader)
