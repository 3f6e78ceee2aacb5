"""Cutting one direction's byte stream into size-delimited Kafka frames.

The framer is in sync when it knows where the next frame starts: from the first byte after a SYN, and again
after every whole frame. A gap inside a frame costs only that frame (the size prefix says where the next one
starts); a gap across a frame boundary, a capture that starts mid-stream, or an impossible size prefix loses
sync, and the framer searches the following bytes for the next frame it can recognise.
"""

from __future__ import annotations

import struct
from typing import Callable

from kdissect.diagnostic import Diagnostic
from kdissect.events import Frame, new_frame
from kdissect.net.skip import SkipAhead

_SIZE = struct.Struct(">i").unpack_from
RESYNC_WINDOW = 1 << 20
"""Unrecognisable bytes searched before the oldest are dropped: a bound on memory while out of sync."""

Finder = Callable[[bytearray, int], "tuple[int | None, int]"]
"""Searches a buffer from a position for the next frame: (its position or None, where to resume)."""


class Framer(SkipAhead):
    """Cuts frames from one direction and hands each to `on_frame`; reports trouble to `report`."""

    __slots__ = (
        "on_frame",
        "report",
        "find",
        "min_size",
        "max_size",
        "buf",
        "offset",
        "synced",
        "skip",
        "scan_from",
        "first_ts",
        "first_index",
        "last_ts",
        "last_index",
    )

    def __init__(
        self,
        on_frame: Callable[[Frame], None],
        report: Callable[[Diagnostic, int, int], None],
        find: Finder,
        min_size: int,
        max_size: int,
        synced: bool,
    ) -> None:
        self.on_frame = on_frame
        self.report = report
        self.find = find
        self.min_size = min_size
        self.max_size = max_size
        self.buf = bytearray()
        self.offset = 0
        """Stream offset of buf[0]."""
        self.synced = synced
        self.skip = 0
        """Bytes of a frame already handed on incomplete that are still to arrive and be dropped."""
        self.scan_from = 0
        self.first_ts = self.last_ts = 0
        self.first_index = self.last_index = 0

    def start(self, mid_stream: bool) -> None:
        """The stream's first byte is a frame's first byte, unless the capture began mid-stream."""
        self.synced = not mid_stream

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        if self.skip:
            chunk = self.past_skip(chunk)
            if not chunk:
                return
        self.last_ts, self.last_index = ts, index
        if self.buf:
            self.buf += chunk
            self._cut()
            return
        self.first_ts, self.first_index = ts, index
        if self.synced:
            self._cut_chunk(chunk)
        else:
            self.buf += chunk
            self._cut()

    def _cut_chunk(self, chunk: bytes) -> None:
        """The common case without copies: frames that start at the start of a segment."""
        pos, n = 0, len(chunk)
        while n - pos >= 4:
            size = _SIZE(chunk, pos)[0]
            end = pos + 4 + size
            if end > n or not self.min_size <= size <= self.max_size:
                break
            self.on_frame(
                new_frame(chunk[pos + 4 : end], size, self.offset + pos, self.first_ts, self.last_ts, self.first_index, self.last_index)
            )
            pos = end
        self.offset += pos
        if pos < n:
            self.buf += chunk[pos:] if pos else chunk
            self._cut()

    def _cut(self) -> None:
        buf = self.buf
        pos = 0
        while True:
            if not self.synced:
                found, self.scan_from = self.find(buf, max(pos, self.scan_from))
                if found is None:
                    pos = self._bound_search(pos)
                    break
                if found > pos:
                    self._skipped(found - pos, self.offset + pos)
                pos = found
                self.synced = True
            if len(buf) - pos < 4:
                break
            size = _SIZE(buf, pos)[0]
            if not self.min_size <= size <= self.max_size:
                self.report(
                    Diagnostic(
                        "frame.bad-size",
                        f"a size prefix claims {size} bytes (allowed: {self.min_size} to {self.max_size}); searching for the next frame",
                        "error",
                        "stream",
                        self.offset + pos,
                    ),
                    self.last_ts,
                    self.last_index,
                )
                self.synced = False
                self.scan_from = pos + 1
                continue
            end = pos + 4 + size
            if end > len(buf):
                break
            self.on_frame(
                new_frame(
                    bytes(buf[pos + 4 : end]), size, self.offset + pos, self.first_ts, self.last_ts, self.first_index, self.last_index
                )
            )
            self.first_ts, self.first_index = self.last_ts, self.last_index
            pos = end
        if pos:
            del buf[:pos]
            self.offset += pos
            self.scan_from = max(0, self.scan_from - pos)

    def _bound_search(self, pos: int) -> int:
        """Out of sync with more than a window of unrecognisable bytes: give up on the oldest."""
        excess = len(self.buf) - pos - RESYNC_WINDOW
        if excess <= 0:
            return pos
        self._skipped(excess, self.offset + pos)
        return pos + excess

    def _skipped(self, length: int, at: int) -> None:
        self.report(
            Diagnostic("frame.skipped", f"{length} bytes that do not start a recognisable frame were skipped", "warning", "stream", at),
            self.last_ts,
            self.last_index,
        )

    def gap(self, length: int, ts: int) -> None:
        """`length` bytes the capture does not hold come next in the stream."""
        if self.skip:
            length = self.gap_past_skip(length)
            if not length:
                return
            self.synced = False
        elif self.synced and len(self.buf) >= 4:
            size = _SIZE(self.buf, 0)[0]
            need = 4 + size - len(self.buf)
            self.on_frame(new_frame(bytes(self.buf[4:]), size, self.offset, self.first_ts, self.last_ts, self.first_index, self.last_index))
            self.offset += len(self.buf)
            self.buf.clear()
            if length < need:
                self.skip = need - length
                self.offset += length
                return
            self.offset += need
            length -= need
            if not length:
                return
            self.synced = False
        elif self.buf:
            if not self.synced:
                self._skipped(len(self.buf), self.offset)
            self.offset += len(self.buf)
            self.buf.clear()
            self.synced = False
        else:
            self.synced = False
        self.offset += length
        self.scan_from = 0

    def finish(self) -> None:
        """The stream ended: a frame still short of bytes is handed on as incomplete."""
        if self.synced and len(self.buf) >= 4:
            size = _SIZE(self.buf, 0)[0]
            self.on_frame(new_frame(bytes(self.buf[4:]), size, self.offset, self.first_ts, self.last_ts, self.first_index, self.last_index))
        elif self.buf:
            self._skipped(len(self.buf), self.offset)
        self.offset += len(self.buf)
        self.buf.clear()
