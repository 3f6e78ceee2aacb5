"""Kafka's zigzag varints (int32, at most 5 bytes) and varlongs (int64, at most 10 bytes).

The record decoder inlines the one-byte case with `ZIGZAG`; these functions take the rest. A value that
runs past the end of the buffer raises IndexError, one longer than its maximum raises VarintError.
"""

from __future__ import annotations

ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(128))
"""Decoded value of every one-byte varint, indexed by the byte."""


class VarintError(ValueError):
    """A varint with more continuation bytes than its type allows."""

    def __init__(self, offset: int, max_bytes: int):
        super().__init__(f"varint at {offset} is longer than {max_bytes} bytes")
        self.offset = offset


def read_zigzag(buf: bytes, pos: int, max_bytes: int, bits: int) -> tuple[int, int]:
    """Zigzag value of a `bits`-bit type, at most `max_bytes` bytes, at `pos`: (value, position after it)."""
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
            raise VarintError(start, max_bytes)
    value &= (1 << bits) - 1
    return (value >> 1) ^ -(value & 1), pos


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag int32 at `pos` (at most 5 bytes)."""
    return read_zigzag(buf, pos, 5, 32)


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag int64 at `pos` (at most 10 bytes)."""
    return read_zigzag(buf, pos, 10, 64)


def encode_varint(value: int) -> bytes:
    """Zigzag varint or varlong (the wire form is the same; only the maximum length differs)."""
    v = (value << 1) ^ (value >> 63)
    v &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)
