"""The bytes of a stream that its cutter (Kafka frames, TLS records) has already given up on, still to come.

A gap inside a frame or record costs that unit only: its length prefix says how many of the bytes after the
gap still belong to it, and those are dropped as they arrive, counted in the stream offset all the same.
"""

from __future__ import annotations


class SkipAhead:
    """For a cutter with `skip` (bytes still to drop) and `offset` (the stream offset of its buffer's start)."""

    __slots__ = ()
    skip: int
    offset: int

    def past_skip(self, chunk: bytes) -> bytes:
        """What of `chunk` is left once the bytes still to skip are dropped (empty when it held no more)."""
        skip = self.skip
        if len(chunk) <= skip:
            self.skip -= len(chunk)
            self.offset += len(chunk)
            return b""
        self.offset += skip
        self.skip = 0
        return chunk[skip:]

    def gap_past_skip(self, length: int) -> int:
        """What of a gap of `length` bytes is left once the bytes still to skip are counted in it."""
        used = min(self.skip, length)
        self.skip -= used
        self.offset += used
        return length - used
