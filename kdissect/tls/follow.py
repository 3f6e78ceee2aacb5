"""A key log that clients write while a live capture runs (`live --tls-keylog`, `live --browse` too)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

CHUNK = 1 << 20
"""Bytes of the key log read at a time."""
POLL_BYTES = 16 << 20
"""The most bytes of the key log read by one poll."""


class KeyLogFollower:
    """A key log that clients append to while the session runs (SSLKEYLOGFILE): each new whole line goes to the
    dissector before the packets read after it, so connections that start during the session decrypt too."""

    def __init__(self, path: Path, offset: int, add: Callable[[bytes], None]) -> None:
        self.path, self.add = path, add
        self.offset = offset
        """Bytes of the file already handed on (the options read the file once, at the start)."""
        add(b"")  # a key log is in use: records waiting for secrets are held a while

    def poll(self) -> None:
        """Hand on the whole lines written since the last poll, `CHUNK` bytes at a time and at most `POLL_BYTES`
        (the rest at the next poll): a key log growing by hundreds of MB costs a chunk of memory, and the capture
        goes on between polls."""
        try:
            size = os.path.getsize(self.path)
            if size < self.offset:  # truncated and written anew
                self.offset = 0
            if size == self.offset:
                return
            with open(self.path, "rb") as log:
                end = min(size, self.offset + POLL_BYTES)
                while self.offset < end:
                    log.seek(self.offset)
                    data = log.read(min(CHUNK, end - self.offset))
                    whole = data.rfind(b"\n") + 1
                    if not whole and len(data) < CHUNK:
                        return  # a line still being written
                    self.offset += whole or len(data)  # no line is a chunk long: handed on as one malformed line
                    self.add(data[: whole or len(data)])
        except OSError:
            return  # moved away for a moment: read it again at the next poll
