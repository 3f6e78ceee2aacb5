"""Kafka's unsigned varint: the length and count prefix of flexible versions' compact types."""

from __future__ import annotations


class VarintError(ValueError):
    pass


def read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it); VarintError when it runs past the data or beyond 5 bytes."""
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
                raise VarintError("an unsigned varint runs beyond 5 bytes")
    except IndexError:
        raise VarintError("an unsigned varint runs past the end of the data") from None
