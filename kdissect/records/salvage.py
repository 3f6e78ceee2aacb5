"""After a hole in a records field: what was lost, and the next batch that can be trusted.

A capture that lost a segment inside a Produce request or a Fetch response holds the bytes before the hole
and after it. The batches the hole touches are lost; the first batch after it is found by its own evidence:
magic 2 where the magic sits, a length that fits, attributes Kafka can write, and a CRC-32C over its bytes
that checks. Whatever lies between is named: its bytes and, where the batch headers around it tell, the
offsets and the number of records lost.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kdissect.records.batch import CRC_START, HEADER, MIN_LENGTH
from kdissect.records.crc import crc32c

_HEAD = struct.Struct(">qiibIh")
"""Base offset, length, leader epoch, magic, CRC, attributes: the part of a v2 header a verification reads."""
_START = struct.Struct(">qi")
"""Base offset and length: the 12 bytes every entry, v2 batch or legacy message, starts with."""
KNOWN_ATTRIBUTES = 0x7F
"""Codec (3 bits), timestamp type, transactional, control, delete horizon: any other bit means not a batch."""
MAX_CODEC = 4


@dataclass(frozen=True, slots=True)
class Lost:
    """What a hole cost one records field: the bytes from `start` to `resume`, and what they held."""

    start: int
    resume: int
    end: int
    """The end of the records field."""
    missing: int
    """Bytes of that span the capture does not hold."""
    first_offset: int | None
    last_offset: int | None
    """The record offsets lost, where the batches around the hole tell them."""
    batches: int | None
    """Batches lost, where that is known (every one of them had its header captured)."""

    def describe(self) -> str:
        what = f"{self.missing} bytes missing from the capture cost {self.resume - self.start} bytes of records: "
        if self.first_offset is not None and self.last_offset is not None and self.last_offset >= self.first_offset:
            count = self.last_offset - self.first_offset + 1
            what += f"offsets {self.first_offset}-{self.last_offset} ({count} record{'s' if count != 1 else ''})"
        elif self.first_offset is not None:
            what += f"the records from offset {self.first_offset} on"
        else:
            what += "records whose offsets the capture does not tell"
        if self.batches is not None:
            what += f" in {self.batches} batch{'es' if self.batches != 1 else ''}"
        return what + (" lost; decoding resumed at the next batch whose CRC checks" if self.resume < self.end else " lost")


def touches(holes: tuple[tuple[int, int], ...], start: int, end: int) -> bool:
    """Whether [start, end) overlaps a hole."""
    return any(lo < end and start < hi for lo, hi in holes)


def verified(buf: bytes, pos: int, holes: tuple[tuple[int, int], ...]) -> bool:
    """Whether a whole v2 batch that the capture holds entirely, and whose CRC checks, starts at `pos`."""
    if pos + HEADER.size > len(buf):
        return False
    _, length, _, magic, crc, attributes = _HEAD.unpack_from(buf, pos)
    end = pos + 12 + length
    if magic != 2 or length < MIN_LENGTH or end > len(buf) or attributes & ~KNOWN_ATTRIBUTES or attributes & 0x07 > MAX_CODEC:
        return False
    return not touches(holes, pos, end) and crc32c(memoryview(buf)[pos + CRC_START : end]) == crc


def next_batch(buf: bytes, start: int, holes: tuple[tuple[int, int], ...]) -> int:
    """The first position at or after `start` where a verified batch starts; len(buf) when there is none."""
    pos = start
    while True:
        found = buf.find(b"\x02", pos + 16)  # the magic byte sits 16 bytes into a batch
        if found < 0:
            return len(buf)
        pos = found - 16
        if verified(buf, pos, holes):
            return pos
        pos += 1


def resume_after(buf: bytes, pos: int, holes: tuple[tuple[int, int], ...], last_offset: int | None) -> tuple[int, Lost]:
    """The entry at `pos` touches a hole: where decoding can resume, and what was lost up to there.

    `last_offset` is the last record offset decoded before it, if any. When the touched entry's own header was
    captured, its length says where the next one starts; otherwise the bytes after the hole are searched.
    """
    n = len(buf)
    first_hole_end = next(hi for lo, hi in holes if hi > pos)
    resume = end = None
    first = None if last_offset is None else last_offset + 1
    own_last = None
    if pos + 12 <= n and not touches(holes, pos, pos + 12):
        first, length = _START.unpack_from(buf, pos)
        end = pos + 12 + length
        if pos + HEADER.size <= n and not touches(holes, pos, pos + HEADER.size) and buf[pos + 16] == 2:
            own_last = first + HEADER.unpack_from(buf, pos)[6]  # base offset + last offset delta
        if length >= MIN_LENGTH and first_hole_end <= end <= n and (end == n or verified(buf, end, holes)):
            resume = end
    if resume is None:
        resume = next_batch(buf, first_hole_end, holes)
    last = _START.unpack_from(buf, resume)[0] - 1 if resume < n else (own_last if resume == end else None)
    missing = sum(min(hi, resume) - max(lo, pos) for lo, hi in holes if lo < resume and pos < hi)
    return resume, Lost(pos, resume, n, missing, first, last, 1 if resume == end else None)
