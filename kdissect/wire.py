"""Wire primitives: the integers of Kafka's encodings, read and written, and the one error they raise.

Every stage reads fixed-width integers, lengths and counts through this module. Unsigned varints prefix the
compact types of flexible versions; zigzag varints (int32, at most 5 bytes) and varlongs (int64, at most 10)
fill v2 record batches, whose hot loop inlines the one- and two-byte cases with `ZIGZAG`.
"""

from __future__ import annotations

import struct

INT16 = struct.Struct(">h").unpack_from
INT32 = struct.Struct(">i").unpack_from
"""Big-endian fixed-width readers: (value,) = INT32(buf, pos)."""

Readable = bytes | bytearray | memoryview
"""What the readers of lengths take: a frame's buffer is a bytearray, a decoder's a memoryview. The record loop's
readers take bytes alone, which mypyc indexes fastest (and refuses anything else: it checks annotations)."""

ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(128))
"""Decoded value of every one-byte zigzag varint, indexed by the byte."""


class WireError(ValueError):
    """Bytes that cannot be what their type says: a varint too long or past the data, a negative length, a
    count the remaining bytes cannot hold. `offset`, when known, is where the value starts."""

    def __init__(self, reason: str, offset: int | None = None) -> None:
        super().__init__(reason)
        self.offset = offset


def read_uvarint(data: Readable, pos: int) -> tuple[int, int]:
    """(value, position after it); WireError when it runs past the data or beyond 5 bytes."""
    try:
        byte = data[pos]
        if byte < 0x80:
            return byte, pos + 1
        value = byte & 0x7F
        shift = 7
        while True:
            pos += 1
            byte = data[pos]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value, pos + 1
            shift += 7
            if shift > 28:
                raise WireError("an unsigned varint runs beyond 5 bytes", pos)
    except IndexError:
        raise WireError("an unsigned varint runs past the end of the data", pos) from None


def read_zigzag(buf: bytes, pos: int, max_bytes: int, bits: int) -> tuple[int, int]:
    """Zigzag value of a `bits`-bit type, at most `max_bytes` bytes, at `pos`: (value, position after it).

    Past the end of `buf` it raises IndexError, which the record loop tells apart from a varint too long
    (WireError): a batch cut by a cap ends inside a record, which is no corruption.
    """
    start = pos
    value = 0
    shift = 0
    limit = 7 * (max_bytes - 1)
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > limit:
            raise WireError(f"varint at {start} is longer than {max_bytes} bytes", start)
    value &= (1 << bits) - 1
    return (value >> 1) ^ -(value & 1), pos


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag int32 at `pos` (at most 5 bytes); one- and two-byte values, most of a record's, without a loop."""
    b = buf[pos]
    if b < 0x80:
        return ZIGZAG[b], pos + 1
    c = buf[pos + 1]
    if c < 0x80:
        u = (b & 0x7F) | (c << 7)
        return (u >> 1) ^ -(u & 1), pos + 2
    return read_zigzag(buf, pos, 5, 32)


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag int64 at `pos` (at most 10 bytes), with `read_varint`'s short cuts."""
    b = buf[pos]
    if b < 0x80:
        return ZIGZAG[b], pos + 1
    c = buf[pos + 1]
    if c < 0x80:
        u = (b & 0x7F) | (c << 7)
        return (u >> 1) ^ -(u & 1), pos + 2
    return read_zigzag(buf, pos, 10, 64)


def write_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_varint(value: int) -> bytes:
    """Zigzag varint or varlong (the wire form is the same; only the maximum length differs)."""
    return write_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)
