"""Cutting one direction's byte stream into size-delimited Kafka frames.

The framer is in sync when it knows where the next frame starts: from the first byte after a SYN, and again
after every whole frame. A gap inside a frame costs only the bytes it lacks: the frame is held open across the
hole and handed on with every byte the capture holds after it (`Frame.rest`), so decoders can salvage what
follows; a segment that arrives after its bytes were declared lost still fills the hole while the frame is
open (`fill`). A gap across a frame boundary, a capture that starts mid-stream, or an impossible size prefix
loses sync, and the framer searches the following bytes for the next frame it can recognise.
"""

from __future__ import annotations

import struct
from typing import Callable

from kdissect.diagnostic import Diagnostic
from kdissect.events import Frame, new_frame
from kdissect.net.cutter import Cutter, RecordFormat

_SIZE = struct.Struct(">i").unpack_from
RESYNC_WINDOW = 1 << 20
"""Unrecognisable bytes searched before the oldest are dropped: a bound on memory while out of sync."""

Finder = Callable[[bytearray, int], "tuple[int | None, int]"]
"""Searches a buffer from a position for the next frame: (its position or None, where to resume)."""


class Holed:
    """A frame with a hole in it, still receiving the bytes after the hole: what the capture holds of it so far."""

    __slots__ = ("size", "offset", "first_ts", "first_index", "pieces", "at", "held")

    def __init__(self, size: int, offset: int, first_ts: int, first_index: int, head: bytes) -> None:
        self.size = size
        self.offset = offset
        """Stream offset of the size prefix."""
        self.first_ts, self.first_index = first_ts, first_index
        self.pieces: list[tuple[int, bytearray]] = [(0, bytearray(head))] if head else []
        """(frame offset, bytes) of each captured run; sorted only when the frame is handed on."""
        self.at = len(head)
        """Frame offset of the next byte the stream will bring."""
        self.held = len(head)

    def add(self, chunk: bytes) -> int:
        """Append the stream's next bytes, as far as the frame goes; returns how many it took."""
        take = min(len(chunk), self.size - self.at)
        last = self.pieces[-1] if self.pieces else None
        if last is not None and last[0] + len(last[1]) == self.at:
            last[1].extend(chunk[:take])
        else:
            self.pieces.append((self.at, bytearray(chunk[:take])))
        self.at += take
        self.held += take
        return take

    def fill(self, start: int, data: bytes) -> int:
        """Late bytes at frame offset `start`: keep those that fall in holes; returns how many."""
        end = min(start + len(data), self.at)
        used = cursor = 0
        for lo, hi in sorted((at, at + len(piece)) for at, piece in self.pieces) + [(self.at, self.at)]:
            a, b = max(cursor, start), min(lo, end)  # the part of the hole before this piece that the data covers
            if a < b:
                self.pieces.append((a, bytearray(data[a - start : b - start])))
                used += b - a
            cursor = hi
        self.held += used
        return used

    def frame(self, last_ts: int, last_index: int) -> Frame:
        runs: list[tuple[int, bytearray]] = []
        for at, piece in sorted(self.pieces, key=lambda p: p[0]):
            if runs and runs[-1][0] + len(runs[-1][1]) == at:
                runs[-1][1].extend(piece)
            else:
                runs.append((at, bytearray(piece)))
        head = bytes(runs.pop(0)[1]) if runs and runs[0][0] == 0 else b""
        rest = tuple((at, bytes(piece)) for at, piece in runs)
        return new_frame(head, self.size, self.offset, self.first_ts, last_ts, self.first_index, last_index, rest)


KAFKA_FRAME = RecordFormat(header=4, window=RESYNC_WINDOW)
"""A Kafka frame: a 4-byte size prefix, then that many bytes."""


class Framer(Cutter):
    """Cuts frames from one direction and hands each to `on_frame`; reports trouble to `report`."""

    __slots__ = ("on_frame", "report", "find", "min_size", "max_size", "holed", "first_ts", "first_index")

    FORMAT = KAFKA_FRAME

    def __init__(
        self,
        on_frame: Callable[[Frame], None],
        report: Callable[[Diagnostic, int, int], None],
        find: Finder,
        min_size: int,
        max_size: int,
        synced: bool,
    ) -> None:
        super().__init__(synced)
        self.on_frame = on_frame
        self.report = report
        self.find = find
        self.min_size = min_size
        self.max_size = max_size
        self.holed: Holed | None = None
        """The frame a hole fell into, held open until the stream passes its end."""
        self.first_ts = self.first_index = 0

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        self.last_ts, self.last_index = ts, index
        holed = self.holed
        if holed is not None:
            take = holed.add(chunk)
            self.offset += take
            if holed.at < holed.size:
                return
            self._hand_on_holed()
            chunk = chunk[take:]
            if not chunk:
                return
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
                new_frame(chunk[pos + 4 : end], size, self.offset + pos, self.first_ts, self.last_ts, self.first_index, self.last_index, ())
            )
            pos = end
        self.offset += pos
        if pos < n:
            self.buf += chunk[pos:] if pos else chunk
            self._cut()

    # the cutter's hooks

    def _length(self, buf: bytearray, pos: int) -> int | None:
        size = _SIZE(buf, pos)[0]
        return size if self.min_size <= size <= self.max_size else None

    def _find(self, buf: bytearray, start: int) -> tuple[int | None, int]:
        return self.find(buf, start)

    def _record(self, pos: int, end: int) -> None:
        data = bytes(self.buf[pos + 4 : end])
        self.on_frame(new_frame(data, end - pos - 4, self.offset + pos, self.first_ts, self.last_ts, self.first_index, self.last_index, ()))
        self.first_ts, self.first_index = self.last_ts, self.last_index

    def _bad_header(self, pos: int) -> None:
        size = _SIZE(self.buf, pos)[0]
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

    def _skipped(self, length: int, at: int) -> None:
        self.report(
            Diagnostic("frame.skipped", f"{length} bytes that do not start a recognisable frame were skipped", "warning", "stream", at),
            self.last_ts,
            self.last_index,
        )

    def _cut_short(self) -> None:
        """The frame buf starts with is handed on as far as the capture holds it: its size says what it lacks."""
        buf = self.buf
        self.on_frame(
            new_frame(bytes(buf[4:]), _SIZE(buf, 0)[0], self.offset, self.first_ts, self.last_ts, self.first_index, self.last_index, ())
        )

    # gaps and the end

    def gap(self, length: int, ts: int) -> None:
        """`length` bytes the capture does not hold come next in the stream."""
        holed = self.holed
        buf = self.buf
        if holed is None and self.synced and len(buf) >= 4:
            size = _SIZE(buf, 0)[0]
            if 4 + size - len(buf) > length:  # the frame goes on after the hole: hold it open
                self.holed = holed = Holed(size, self.offset, self.first_ts, self.first_index, bytes(buf[4:]))
                self._drop_buffered()
            else:
                self._cut_short()
                length -= 4 + size - len(buf)
                self.offset += 4 + size
                buf.clear()
                if length:
                    self._lose_sync(length)
                return
        if holed is not None:
            inside = min(length, holed.size - holed.at)
            holed.at += inside
            self.offset += inside
            if holed.at == holed.size:
                self._hand_on_holed()
                if length > inside:
                    self._lose_sync(length - inside)
            return
        if buf and not self.synced:
            self._skipped(len(buf), self.offset)
        self._drop_buffered()
        self._lose_sync(length)

    def _hand_on_holed(self) -> None:
        """The stream has passed the end of the frame with a hole: hand it on with all it holds."""
        holed = self.holed
        assert holed is not None
        self.holed = None
        self.on_frame(holed.frame(self.last_ts, self.last_index))
        self.first_ts, self.first_index = self.last_ts, self.last_index

    def fill(self, offset: int, data: bytes) -> int:
        """Bytes at stream `offset` that were declared lost and came late: used if the frame they belong to is still
        open; returns how many were used."""
        holed = self.holed
        if holed is None:
            return 0
        start = offset - holed.offset - 4
        if start + len(data) <= 0 or start >= holed.at:
            return 0
        if start < 0:
            data, start = data[-start:], 0
        return holed.fill(start, data)

    @property
    def held(self) -> int:
        """Bytes this framer holds: a frame being assembled, or the captured part of one with a hole."""
        return len(self.buf) + (self.holed.held if self.holed is not None else 0)

    def finish(self) -> None:
        """The stream ended: a frame still short of bytes is handed on as incomplete."""
        if self.holed is not None:
            self._hand_on_holed()
        else:
            self._finish_buffered()
