"""A forward-only window over a binary stream, so readers never hold a whole capture in memory."""

from __future__ import annotations

from typing import Protocol

CHUNK = 1 << 20


class Readable(Protocol):
    """What a capture's bytes come from: a file, a pipe made to start again, a decompressing stream."""

    def read(self, n: int, /) -> bytes: ...


class ChunkedInput:
    """Reads a stream in large chunks and hands out views at absolute file offsets.

    Readers ask for `need` bytes at the current position; the window grows only as far as one record
    requires, so memory stays bounded by the largest record plus one chunk.
    """

    __slots__ = ("_read", "_errors", "_stop", "buf", "pos", "base", "eof", "error")

    def __init__(
        self,
        stream: Readable,
        prefix: bytes = b"",
        errors: tuple[type[Exception], ...] = (EOFError, OSError),
        base: int = 0,
        stop: int | None = None,
    ) -> None:
        self._read = getattr(stream, "read1", stream.read)
        """read1 where there is one: a decompressor that fails mid-chunk has then handed over all it could."""
        self._errors = errors
        """What the stream raises when its data ends early or is corrupt."""
        self._stop = stop
        """File offset where the data ends for this reader, as if the file ended there (a byte range's end)."""
        self.buf = prefix
        self.pos = 0
        self.base = base
        """File offset of buf[0]: a reader started inside a file is given what precedes its data as `prefix`."""
        self.eof = False
        self.error: str | None = None
        """Why the stream ended early (a truncated gzip member, an I/O error), if it did."""

    def fill(self, need: int) -> bool:
        """Make `need` bytes available from `pos`; False when the stream ends first."""
        short = need - (len(self.buf) - self.pos)
        if short <= 0:
            return True
        if self.eof:
            return False
        parts = []
        want = max(CHUNK, short)
        if self._stop is not None:
            want = min(want, self._stop - self.base - len(self.buf))
            self.eof = want <= 0
        while want > 0:
            try:
                more = self._read(want)
            except self._errors as exc:
                self.error = str(exc) or type(exc).__name__
                more = b""
            if not more:
                self.eof = True
                break
            parts.append(more)
            want -= len(more)
        self.base += self.pos
        self.buf = self.buf[self.pos :] + b"".join(parts)
        self.pos = 0
        return len(self.buf) >= need

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def remaining(self) -> int:
        return len(self.buf) - self.pos
