"""A table written with pyarrow as the Spark job writes it: hive partition directories (`date=…/api=…`), Parquet
files of at most `FILE_ROWS` rows, timestamps in microseconds adjusted to UTC, no dictionary tried for the columns
whose values nearly all differ (job.UNIQUE). What reads Spark's tables reads these (tests/test_pipeline.py compares
the two engines' tables row by row, and their schemas).

Rows are buffered per partition directory and written as row groups of about `GROUP_BYTES`, so a file is a few
large row groups, not one per batch. A table holds at most `HELD_BYTES` in all: past it, the directory holding the
most is written (a capture of many days and APIs has hundreds of directories).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

FILE_ROWS = 1_000_000
"""Rows per file at most, as the Spark job writes (job.FILE_ROWS)."""
GROUP_BYTES = 16 << 20
"""A partition's rows are written as a row group when this much is buffered."""
HELD_BYTES = 32 << 20
"""The most a table's directories hold together before the fullest is written."""
OPEN_FILES = 64
"""Partition files kept open at once; the one written least recently is closed to open another (its directory's
next rows start a new file)."""


class _Part:
    __slots__ = ("writer", "rows", "held", "size", "used")

    def __init__(self) -> None:
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0
        self.held: list[pa.RecordBatch] = []
        self.size = 0
        self.used = 0


class TableWriter:
    """One table under `root`, partitioned by the batch's last columns (`partitions`); its files' names carry
    `tag`, which tells apart the writers of several processes writing the same table."""

    def __init__(self, root: str, schema: pa.Schema, partitions: Sequence[str], unique: Sequence[str] = (), tag: str = "") -> None:
        self.root = root
        self.tag = tag
        self.schema = schema
        """The table's columns, without the partition columns (they are the directories' names)."""
        self.partitions = tuple(partitions)
        self.dictionary = [f.name for f in schema if f.name not in unique]
        self.parts: dict[tuple[str, ...], _Part] = {}
        self.held = 0
        """Bytes the directories hold, not yet written."""
        self.files = 0
        self.rows = 0
        self.clock = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Rows: the table's columns, then one column per partition."""
        if not batch.num_rows:
            return
        values = zip(*(batch.column(name).to_pylist() for name in self.partitions))
        positions: dict[tuple[str, ...], list[int]] = {}
        for i, value in enumerate(values):
            positions.setdefault(value, []).append(i)
        data = pa.RecordBatch.from_arrays([batch.column(f.name) for f in self.schema], schema=self.schema)
        for value, taken in positions.items():
            rows = data if len(taken) == data.num_rows else data.take(pa.array(taken, pa.int32()))
            part = self.parts.get(value)
            if part is None:
                part = self.parts[value] = _Part()
            part.held.append(rows)
            part.size += rows.nbytes
            self.held += rows.nbytes
            if part.size >= GROUP_BYTES:
                self._flush(value, part)
        while self.held > HELD_BYTES:
            fullest = max(self.parts, key=lambda v: self.parts[v].size)
            self._flush(fullest, self.parts[fullest])

    def close(self) -> None:
        """The rest written; the table's directory made even when it has no rows, as Spark makes it."""
        os.makedirs(self.root, exist_ok=True)
        for value, part in self.parts.items():
            self._flush(value, part)
            if part.writer is not None:
                part.writer.close()
        self.parts = {}

    def _flush(self, value: tuple[str, ...], part: _Part) -> None:
        if not part.held:
            return
        table = pa.Table.from_batches(part.held, self.schema)
        self.held -= part.size
        part.held, part.size = [], 0
        self.clock += 1
        part.used = self.clock
        start = 0
        while start < table.num_rows:
            if part.writer is None or part.rows >= FILE_ROWS:
                self._open(value, part)
            assert part.writer is not None
            take = min(table.num_rows - start, FILE_ROWS - part.rows)
            part.writer.write_table(table.slice(start, take))
            part.rows += take
            self.rows += take
            start += take

    def _open(self, value: tuple[str, ...], part: _Part) -> None:
        if part.writer is not None:
            part.writer.close()
        open_now = [p for p in self.parts.values() if p.writer is not None and p is not part]
        if len(open_now) >= OPEN_FILES:
            oldest = min(open_now, key=lambda p: p.used)
            assert oldest.writer is not None
            oldest.writer.close()
            oldest.writer, oldest.rows = None, FILE_ROWS  # its next rows open a new file
        folder = os.path.join(self.root, *(f"{name}={v}" for name, v in zip(self.partitions, value)))
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"part-{self.files:05d}{self.tag}.parquet")
        self.files += 1
        part.writer = pq.ParquetWriter(path, self.schema, compression="snappy", use_dictionary=self.dictionary)
        part.rows = 0
