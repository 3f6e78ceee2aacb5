"""The TLS record layer: one direction's byte stream cut into records, with what gaps cost.

A record is a 5-byte header (content type, version, length) and up to 2^14 + 2048 bytes. The reader is in
sync when it knows where the next record starts: from the first byte of a connection, and after every whole
record. A gap inside a record whose header was seen costs that record only (its length says where the next
starts); a gap across a boundary, or a capture that starts mid-stream, loses sync, and the reader searches for
a record its owner can authenticate (`confirm`), or else two records in a row whose headers chain. The search
costs work in proportion to the bytes: it resumes where it stopped, and `confirm`, which costs AEAD openings, is
asked about a few records per loss of sync, and about each of them once.
"""

from __future__ import annotations

import struct
from typing import Callable

from kdissect.net.cutter import Cutter, RecordFormat

CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE, APPLICATION_DATA, HEARTBEAT = 20, 21, 22, 23, 24
HEADER = 5
MAX_LENGTH = (1 << 14) + 2048
"""The longest record TLS allows (a TLS 1.2 ciphertext); TLS 1.3 stays within 2^14 + 256."""
SEARCH_WINDOW = 4 * (HEADER + MAX_LENGTH)
"""Bytes searched for a record boundary before the oldest are given up: a bound on memory while out of sync."""
_HEADER = struct.Struct(">BHH").unpack_from

OnRecord = Callable[[int, int, bytes, int, int, int], None]
"""(content type, version, fragment, stream offset of the header, ts, packet index) of a whole record."""
OnLost = Callable[[int | None, int, int, int], None]
"""(records lost, or None when unknown; bytes lost; stream offset; ts): the gap cost these."""


def plausible_header(data: bytes | bytearray, pos: int, version: int | None = None) -> int | None:
    """The record length if a TLS record header starts at `pos` (of `version`, when given), else None."""
    if len(data) - pos < HEADER:
        return None
    ctype, ver, length = _HEADER(data, pos)
    if not CHANGE_CIPHER_SPEC <= ctype <= HEARTBEAT or not 1 <= length <= MAX_LENGTH:
        return None
    if ver >> 8 != 3 or (ver & 0xFF) > 4 or (version is not None and ver != version):
        return None
    return length


TLS_RECORD = RecordFormat(header=HEADER, window=SEARCH_WINDOW)
CONFIRMS = 4
"""Records one search after a loss of sync asks its owner to authenticate. Each try costs up to a few hundred
AEAD openings (the sequence numbers a loss leaves possible), and in bytes made to look like records every position
can be a candidate: past these, only headers that chain are trusted."""


class RecordReader(Cutter):
    """Cuts records from one direction and hands each to `on_record`; what gaps lose goes to `on_lost`."""

    __slots__ = ("on_record", "on_lost", "on_skipped", "confirm", "skip", "version", "confirms", "tried")

    FORMAT = TLS_RECORD

    def __init__(
        self,
        on_record: OnRecord,
        on_lost: OnLost,
        on_skipped: Callable[[int, int], None],
        confirm: Callable[[int, int, bytes], bool] | None = None,
    ) -> None:
        super().__init__(True)
        self.on_record = on_record
        self.on_lost = on_lost
        self.on_skipped = on_skipped
        """(bytes, stream offset) given up while searching for a record boundary."""
        self.confirm = confirm
        """Whether (type, version, fragment) is a true record (it authenticates): a search accepts it alone."""
        self.skip = 0
        """Bytes of a record already lost to a gap that are still to arrive and be dropped."""
        self.version: int | None = None
        """The record version once the hellos told it: a search then accepts only headers of that version."""
        self.confirms = CONFIRMS
        """What the search under way may still ask `confirm`."""
        self.tried = -1
        """Stream offset of the last record the search asked `confirm` about: not asked again as more bytes come."""

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

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        if self.skip:
            chunk = self.past_skip(chunk)
            if not chunk:
                return
        self.last_ts, self.last_index = ts, index
        self.buf += chunk
        self._cut()

    # the cutter's hooks

    def _length(self, buf: bytearray, pos: int) -> int | None:
        return plausible_header(buf, pos)

    def _find(self, buf: bytearray, start: int) -> tuple[int | None, int]:
        """The first position from `start` where a record authenticates, or two record headers chain."""
        version = self.version
        for at in range(start, len(buf) - HEADER + 1):
            length = plausible_header(buf, at, version)
            if length is None:
                continue
            following = at + HEADER + length
            if following <= len(buf) and self._authenticates(at, following):
                return at, at
            if following + HEADER > len(buf):
                return None, at  # a candidate whose successor has not arrived yet
            if plausible_header(buf, following, version) is not None:
                return at, at
        return None, max(start, len(buf) - HEADER + 1)

    def _authenticates(self, at: int, following: int) -> bool:
        """Whether the owner opens the record buf[at:following]: asked once per record and `CONFIRMS` times per search,
        so a search costs a bounded number of openings however many candidates the bytes hold."""
        if self.confirm is None or not self.confirms or self.offset + at <= self.tried:
            return False
        self.confirms -= 1
        self.tried = self.offset + at
        buf = self.buf
        return self.confirm(buf[at], _HEADER(buf, at)[1], bytes(buf[at + HEADER : following]))

    def _record(self, pos: int, end: int) -> None:
        buf = self.buf
        ctype, version, _ = _HEADER(buf, pos)
        self.on_record(ctype, version, bytes(buf[pos + HEADER : end]), self.offset + pos, self.last_ts, self.last_index)

    def _bad_header(self, pos: int) -> None:
        """A header TLS cannot have: the records from here on are unknown."""
        self.on_lost(None, 0, self.offset + pos, self.last_ts)
        self.confirms = CONFIRMS

    def _skipped(self, length: int, at: int) -> None:
        self.on_skipped(length, at)

    def _cut_short(self) -> None:
        self.on_lost(1, len(self.buf), self.offset, self.last_ts)

    # gaps and the end

    def gap(self, length: int, ts: int) -> None:
        """`length` bytes the capture does not hold come next."""
        buf = self.buf
        if self.skip:
            length = self.gap_past_skip(length)
            if not length:
                return
        elif self.synced and len(buf) >= HEADER:
            rest = HEADER + _HEADER(buf, 0)[2] - len(buf)
            self.on_lost(1, len(buf) + min(length, rest), self.offset, ts)
            self._drop_buffered()
            if length < rest:
                self.skip = rest - length
                self.offset += length
                return
            self.offset += rest
            length -= rest
            if not length:
                return
        elif buf:
            self.on_skipped(len(buf), self.offset)
            self._drop_buffered()
        self.on_lost(None, length, self.offset, ts)  # where no header says how many records the bytes held
        self._lose_sync(length)
        self.confirms = CONFIRMS

    def finish(self) -> None:
        """The stream ended: a record that ends exactly where the bytes do is taken even without a second
        header to chain with; anything else left is a record cut short."""
        buf = self.buf
        if not self.synced:
            for at in range(len(buf) - HEADER + 1):
                length = plausible_header(buf, at, self.version)
                if length is not None and at + HEADER + length == len(buf):
                    if at:
                        self.on_skipped(at, self.offset)
                    del buf[:at]
                    self.offset += at
                    self.synced = True
                    self._cut()
                    break
        self._finish_buffered()
