"""Rewritten frames kept on disk between an anonymization's two passes, found again by where they were.

The first pass meets frames as exchanges complete (a request when its response comes); the second needs each
direction's frames in stream order as its packets come. A capture's worth of frames does not fit in memory, so they
wait in an SQLite file (a temporary folder's), indexed by connection, side and stream offset, and each direction of
the second pass reads its own a page at a time.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator

PAGE = 256
"""Frames a direction reads at a time."""
BATCH = 4096
"""Frames written per transaction."""


class Units:
    """(connection, side, start, end) -> the bytes that replace the stream's [start, end) on that side."""

    def __init__(self, folder: str) -> None:
        self.db = sqlite3.connect(os.path.join(folder, "units.sqlite"), isolation_level=None)
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.execute("CREATE TABLE units (conn INTEGER, side INTEGER, start INTEGER, end INTEGER, data BLOB)")
        self.db.execute("BEGIN")
        self._pending = 0
        self.count = 0

    def add(self, connection: int, side: int, start: int, end: int, data: bytes) -> None:
        self.db.execute("INSERT INTO units VALUES (?, ?, ?, ?, ?)", (connection, side, start, end, data))
        self.count += 1
        self._pending += 1
        if self._pending >= BATCH:
            self.db.execute("COMMIT")
            self.db.execute("BEGIN")
            self._pending = 0

    def done(self) -> None:
        """Every frame is in: index them for the second pass."""
        self.db.execute("COMMIT")
        self.db.execute("CREATE INDEX place ON units (conn, side, start)")

    def stream(self, connection: int, side: int) -> Iterator[tuple[int, int, bytes]]:
        """One side's frames in stream order: (start, end, bytes)."""
        start = -1
        while True:
            page = self.db.execute(
                "SELECT start, end, data FROM units WHERE conn = ? AND side = ? AND start > ? ORDER BY start LIMIT ?",
                (connection, side, start, PAGE),
            ).fetchall()
            yield from page
            if len(page) < PAGE:
                return
            start = page[-1][0]

    def close(self) -> None:
        self.db.close()
