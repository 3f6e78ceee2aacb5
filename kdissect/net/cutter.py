"""Cutting one direction's byte stream into length-prefixed records: what Kafka frames and TLS records share.

A cutter is in sync when it knows where the next record starts: from the first byte of a stream whose start
was captured, and again after every whole record. It loses sync at a header its protocol cannot have, and where
a gap falls between records (what a gap inside a record costs is the protocol's to say); it then searches the
bytes that follow for a record its protocol recognises, resuming where the last search stopped, and within a
window: past it the oldest bytes are given up, so memory stays bounded however long the search lasts. Bytes
given up are told with their stream offset.

A protocol is a `RecordFormat` (its header's size, its search window) and the hooks below: how to read and
judge a header (`_length`), how to search (`_find`), and what to do with a whole record, a bad header, skipped
bytes and a record the end of the stream cut short.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, NamedTuple


class RecordFormat(NamedTuple):
    """How a protocol's records are delimited, as far as the cutter needs to know."""

    header: int
    """Bytes of the header that says how long the record after it is."""
    window: int
    """Unrecognisable bytes searched out of sync before the oldest are given up."""


class Cutter(ABC):
    """Cuts records from one direction; `FORMAT` and the hooks make it a protocol's."""

    __slots__ = ("buf", "offset", "synced", "scan_from", "last_ts", "last_index")

    FORMAT: ClassVar[RecordFormat]

    def __init__(self, synced: bool) -> None:
        self.buf = bytearray()
        self.offset = 0
        """Stream offset of buf[0]."""
        self.synced = synced
        self.scan_from = 0
        """Where the search resumes in buf: no position before it starts a record."""
        self.last_ts = self.last_index = 0
        """Timestamp and packet number of the latest bytes: what reports carry."""

    def start(self, mid_stream: bool) -> None:
        """The stream's first byte starts a record, unless the capture began mid-stream."""
        self.synced = not mid_stream

    @property
    def held(self) -> int:
        """Bytes held: a record being assembled, or bytes being searched."""
        return len(self.buf)

    # what a protocol says

    @abstractmethod
    def _length(self, buf: bytearray, pos: int) -> int | None:
        """The length of the record whose header starts at `pos` (header excluded), or None: no such header."""

    @abstractmethod
    def _find(self, buf: bytearray, start: int) -> tuple[int | None, int]:
        """(position of the first record recognised at or after `start`, or None; where a later search resumes)."""

    @abstractmethod
    def _record(self, pos: int, end: int) -> None:
        """buf[pos:end] is a whole record, header included: hand it on."""

    @abstractmethod
    def _bad_header(self, pos: int) -> None:
        """The header at `pos` is not one the protocol can have: sync is lost there."""

    @abstractmethod
    def _skipped(self, length: int, at: int) -> None:
        """`length` bytes at stream offset `at` were given up: they start no record the search recognised."""

    @abstractmethod
    def _cut_short(self) -> None:
        """The capture holds no more of the record buf starts with than buf: hand that on, or count the record lost."""

    # the skeleton

    def _cut(self) -> None:
        """Hand on every whole record in the buffer, searching first when out of sync."""
        buf = self.buf
        header = self.FORMAT.header
        pos = 0
        while True:
            if not self.synced:
                found, self.scan_from = self._find(buf, max(pos, self.scan_from))
                if found is None:
                    pos = self._bound_search(pos)
                    break
                if found > pos:
                    self._skipped(found - pos, self.offset + pos)
                pos = found
                self.synced = True
            if len(buf) - pos < header:
                break
            length = self._length(buf, pos)
            if length is None:
                self._bad_header(pos)
                self.synced = False
                self.scan_from = pos + 1
                continue
            end = pos + header + length
            if end > len(buf):
                break
            self._record(pos, end)
            pos = end
        if pos:
            del buf[:pos]
            self.offset += pos
            self.scan_from = max(0, self.scan_from - pos)

    def _bound_search(self, pos: int) -> int:
        """Out of sync with more than a window of unrecognisable bytes: give up on the oldest."""
        excess = len(self.buf) - pos - self.FORMAT.window
        if excess <= 0:
            return pos
        self._skipped(excess, self.offset + pos)
        return pos + excess

    def _drop_buffered(self) -> None:
        """What the buffer holds is over: the stream offset moves past it."""
        self.offset += len(self.buf)
        self.buf.clear()

    def _lose_sync(self, length: int) -> None:
        """`length` bytes the capture does not hold come next, and no header says where a record starts after them."""
        self.offset += length
        self.synced = False
        self.scan_from = 0

    def _finish_buffered(self) -> None:
        """The stream ended: a record whose header is there is cut short, any other bytes are skipped."""
        buf = self.buf
        if self.synced and len(buf) >= self.FORMAT.header:
            self._cut_short()
        elif buf:
            self._skipped(len(buf), self.offset)
        self._drop_buffered()
