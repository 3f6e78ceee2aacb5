"""A key log that clients write while a live capture runs (`live --tls-keylog`, `live --browse` too)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


class KeyLogFollower:
    """A key log that clients append to while the session runs (SSLKEYLOGFILE): each new whole line goes to the
    dissector before the packets read after it, so connections that start during the session decrypt too."""

    def __init__(self, path: Path, offset: int, add: Callable[[bytes], None]) -> None:
        self.path, self.add = path, add
        self.offset = offset
        """Bytes of the file already handed on (the options read the file once, at the start)."""
        add(b"")  # a key log is in use: records waiting for secrets are held a while

    def poll(self) -> None:
        try:
            size = os.path.getsize(self.path)
            if size < self.offset:  # truncated and written anew
                self.offset = 0
            if size == self.offset:
                return
            with open(self.path, "rb") as log:
                log.seek(self.offset)
                data = log.read(size - self.offset)
        except OSError:
            return  # moved away for a moment: read it again at the next poll
        whole = data.rfind(b"\n") + 1
        if whole:
            self.offset += whole
            self.add(data[:whole])
