"""Handshake messages: cut from handshake records, and the hellos read for what kdissect reports and needs.

The ClientHello gives the client random (what a key log is searched by), SNI and the ALPN protocols offered;
the ServerHello the version (supported_versions says TLS 1.3), the cipher suite and, in TLS 1.2, the chosen
ALPN and extended master secret. TLS 1.3 names its ALPN in EncryptedExtensions, which only keys open.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

CLIENT_HELLO, SERVER_HELLO, NEW_SESSION_TICKET, ENCRYPTED_EXTENSIONS, FINISHED, KEY_UPDATE = 1, 2, 4, 8, 20, 24
SERVER_NAME, ALPN, EXTENDED_MASTER_SECRET, SUPPORTED_VERSIONS = 0, 16, 23, 43
TLS13 = 0x0304
RETRY_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
"""The ServerHello random that makes it a HelloRetryRequest (RFC 8446 §4.1.3)."""
MAX_MESSAGE = 1 << 18
"""Handshake messages longer than this are not waited for (certificate chains stay far below)."""
_U16 = struct.Struct(">H").unpack_from


class HelloError(ValueError):
    """A hello whose fields run past its end."""


@dataclass(frozen=True, slots=True)
class Hello:
    """What a ClientHello or ServerHello says that kdissect reports or needs."""

    version: int
    """The client's highest offered version, or the version the server chose (supported_versions first)."""
    random: bytes
    suites: tuple[int, ...]
    """Offered by the client; the one chosen by the server."""
    sni: str | None = None
    alpn: tuple[str, ...] = ()
    extended_master_secret: bool = False
    retry: bool = False
    """A HelloRetryRequest: the real ServerHello is still to come."""


class _Reader:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data, self.pos, self.end = data, pos, len(data) if end is None else end

    def take(self, n: int) -> bytes:
        if self.pos + n > self.end:
            raise HelloError("a field runs past the end of the hello")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return _U16(self.take(2))[0]

    def vector(self, width: int) -> _Reader:
        """The next length-prefixed vector, as a reader of its own bytes."""
        length = self.u8() if width == 1 else self.u16()
        start = self.pos
        self.take(length)
        return _Reader(self.data, start, start + length)

    def left(self) -> bool:
        return self.pos < self.end


def extensions(reader: _Reader) -> dict[int, _Reader]:
    found: dict[int, _Reader] = {}
    if not reader.left():
        return found
    block = reader.vector(2)
    while block.left():
        kind = block.u16()
        found[kind] = block.vector(2)
    return found


def parse_hello(kind: int, body: bytes) -> Hello:
    """A ClientHello (`kind` 1) or ServerHello (2); HelloError when its fields run past its end."""
    reader = _Reader(body)
    version = reader.u16()
    random = reader.take(32)
    reader.vector(1)  # legacy session id
    if kind == CLIENT_HELLO:
        listed = reader.vector(2)
        suites = tuple(listed.u16() for _ in range((listed.end - listed.pos) // 2))
        reader.vector(1)  # compression methods
    else:
        suites = (reader.u16(),)
        reader.u8()
    found = extensions(reader)
    if SUPPORTED_VERSIONS in found:
        versions = found[SUPPORTED_VERSIONS]
        if kind == CLIENT_HELLO:
            listed = versions.vector(1)
            offered = [listed.u16() for _ in range((listed.end - listed.pos) // 2)]
            version = max((v for v in offered if v >> 8 == 3 and v & 0xFF <= 4), default=version)
        else:
            version = versions.u16()
    return Hello(
        version,
        random,
        suites,
        _server_name(found[SERVER_NAME]) if SERVER_NAME in found else None,
        alpn_protocols(found[ALPN]) if ALPN in found else (),
        EXTENDED_MASTER_SECRET in found,
        kind == SERVER_HELLO and random == RETRY_RANDOM,
    )


def _server_name(reader: _Reader) -> str | None:
    names = reader.vector(2)
    while names.left():
        name_type, name = names.u8(), names.vector(2)
        if name_type == 0:
            return name.take(name.end - name.pos).decode("ascii", "replace")
    return None


def alpn_protocols(reader: _Reader) -> tuple[str, ...]:
    names = reader.vector(2)
    out = []
    while names.left():
        name = names.vector(1)
        out.append(name.take(name.end - name.pos).decode("ascii", "replace"))
    return tuple(out)


def encrypted_extensions_alpn(body: bytes) -> tuple[str, ...]:
    """The ALPN protocol a TLS 1.3 server chose, from its EncryptedExtensions; () when none."""
    found = extensions(_Reader(body))
    return alpn_protocols(found[ALPN]) if ALPN in found else ()


class HandshakeReader:
    """Handshake messages of one direction, however records split or pack them: (type, body) to `on_message`."""

    __slots__ = ("on_message", "buf")

    def __init__(self, on_message: Callable[[int, bytes], None]) -> None:
        self.on_message = on_message
        self.buf = bytearray()

    def feed(self, fragment: bytes) -> None:
        buf = self.buf
        buf += fragment
        pos = 0
        while len(buf) - pos >= 4:
            length = int.from_bytes(buf[pos + 1 : pos + 4], "big")
            if length > MAX_MESSAGE:
                buf.clear()
                return
            end = pos + 4 + length
            if end > len(buf):
                break
            self.on_message(buf[pos], bytes(buf[pos + 4 : end]))
            pos = end
        del buf[:pos]

    def reset(self) -> None:
        """Records were lost: a message in progress will never be whole."""
        self.buf.clear()
