"""Telling TLS from plaintext Kafka by a direction's first bytes.

A Kafka frame starts with its size, and a size of 0x14000000 (335 MB) or more is past any frame kdissect
accepts, so a stream whose first byte is a TLS content type (20 to 24) followed by version 3.x is TLS. From its
first byte, a connection is TLS when it opens with a handshake record; captured mid-stream, when a record
header starts the bytes and chains to the next one (or ends exactly with them), or two headers chain later on.
"""

from __future__ import annotations

from kdissect.tls.handshake import CLIENT_HELLO, HelloError, parse_hello
from kdissect.tls.records import HANDSHAKE, HEADER, plausible_header


def starts_tls(chunk: bytes, mid_stream: bool) -> bool:
    """Whether a direction whose first captured bytes are `chunk` carries TLS."""
    length = plausible_header(chunk, 0)
    if not mid_stream:
        return length is not None and chunk[0] == HANDSHAKE
    if length is not None and (HEADER + length == len(chunk) or plausible_header(chunk, HEADER + length) is not None):
        return True
    for at in range(1, len(chunk) - 2 * HEADER):
        length = plausible_header(chunk, at)
        if length is not None and plausible_header(chunk, at + HEADER + length) is not None:
            return True
    return False


def kafka_client_hello(data: bytes) -> bool | None:
    """On a port not known to be Kafka's: True when `data` opens with a whole ClientHello that offers no ALPN
    protocol (Kafka clients offer none; browsers, HTTP and gRPC clients do), False when it is something else,
    None while the hello is still incomplete."""
    length = plausible_header(data, 0)
    if length is None or data[0] != HANDSHAKE or len(data) < HEADER + 4 or data[HEADER] != CLIENT_HELLO:
        return False
    size = int.from_bytes(data[HEADER + 1 : HEADER + 4], "big")
    if size > length - 4:
        return True  # a hello spread over records: rare enough to be taken without reading its ALPN
    if len(data) < HEADER + 4 + size:
        return None
    try:
        hello = parse_hello(CLIENT_HELLO, data[HEADER + 4 : HEADER + 4 + size])
    except HelloError:
        return False
    return not hello.alpn
