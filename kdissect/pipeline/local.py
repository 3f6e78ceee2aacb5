"""`kdissect tables`: the Spark job's tables made on one machine, without a JVM, by the same row code.

Each capture is read once (capture_pass.py): its packets are dealt to a dissector per connection key as Spark's
tasks would dissect them (demux.py), the events become rows (table_rows.py), and the doctor judges the capture in
the same pass (findings.py). Rows are made into Arrow batches of the tables' schemas (tables.py) and written as
Spark writes them (parquet_out.py). Rows whose topic ids their connection could not name wait on disk, in Arrow's
stream format, until every capture is read: then they are named from every connection of the job, as the Spark job
names them (job.name_topics), and written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kdissect.capture import ranges
from kdissect.pipeline import tables
from kdissect.pipeline.capture_pass import CapturePass
from kdissect.pipeline.config import filter_of, options_of, values_of
from kdissect.pipeline.findings import findings_batch
from kdissect.pipeline.inputs import InputError, InputFile, expand, is_uri
from kdissect.pipeline.job import KIND_OF, UNIQUE, WRITTEN, JobError, Totals, embedded_secrets
from kdissect.pipeline.parquet_out import TableWriter
from kdissect.pipeline.table_rows import TableRows, name_exchange, name_record

BATCH_ROWS = 4096
"""Rows of one kind made into an Arrow batch at once."""
WHOLE = 1 << 62
"""A range size no capture reaches: every file is read in one range."""


class Stopped(Exception):
    """The run was asked to stop (Ctrl-C); nothing was left under the output directory."""


def check_out(out: str) -> None:
    """JobError when tables are already under `out`, or it names a URI (this engine writes local files)."""
    if is_uri(out):
        raise JobError(f"--out {out}: kdissect tables writes to a local directory; kdissect spark writes to {out.split(':')[0]}://")
    for name in WRITTEN:
        if os.path.exists(os.path.join(out, name)):
            raise JobError(f"{os.path.join(out, name)} exists already: remove it or choose another --out")


def captures_of(names: list[str]) -> tuple[dict[int, str], list[str]]:
    """The captures the names stand for, by file id, and the files inside named directories that are not captures
    (skipped, as the Spark job skips them); InputError for a named file that is not a capture."""
    if any(is_uri(name) for name in names):
        raise InputError("kdissect tables reads local files; kdissect spark reads hdfs://, s3a://, gs:// and other URIs")
    files: list[InputFile] = expand(names)
    paths, skipped = {}, []
    for file_id, f in enumerate(files):
        with open(f.path, "rb") as raw:
            info = ranges.probe(file_id, f.path, raw, f.size, WHOLE)
        if info.kind == "skip":
            if f.named:
                raise InputError(f"{f.path}: not a pcap or pcapng capture")
            skipped.append(f.path)
        else:
            paths[file_id] = f.path
    if not paths:
        raise InputError("no capture among the inputs")
    return paths, skipped


class LocalJob:
    """The tables of `paths` under `out`; `run` returns the job's totals."""

    def __init__(
        self, paths: dict[int, str], out: str, config: dict[str, Any], progress: Callable[[str], None] = lambda line: None
    ) -> None:
        self.paths = paths
        self.out = os.path.abspath(out)
        self.config = {**config, "paths": {str(k): v for k, v in paths.items()}, "tls_secrets": embedded_secrets(paths)}
        self.progress = progress
        self.values = values_of(self.config)
        self.wanted = filter_of(self.config, options_of(self.config).catalog, self.values)
        self.writers = {
            name: TableWriter(
                os.path.join(self.out, name),
                _written(tables.TABLES[name]),
                tables.PARTITIONED_BY[name],
                UNIQUE.get(name, ()),
            )
            for name in WRITTEN
        }
        self.topics: dict[str, str] = {}
        self.waiting: dict[str, Any] = {}
        """Per table, the Arrow stream of rows that wait for topic names."""
        self.spill = ""

    def run(self, stopping: Callable[[], bool] = lambda: False) -> Totals:
        started = time.perf_counter()
        totals = Totals(files=len(self.paths), ranges=len(self.paths))
        os.makedirs(self.out, exist_ok=True)
        self.spill = tempfile.mkdtemp(prefix=".kdissect-naming-", dir=self.out)
        try:
            for number, (file_id, path) in enumerate(self.paths.items(), 1):
                self.progress(f"reading {path} ({number} of {len(self.paths)})")
                self._capture(file_id, path, totals, stopping)
            self.progress("naming topics and writing")
            self._named()
            for writer in self.writers.values():
                writer.close()
        except BaseException:
            for name in WRITTEN:  # half-written tables would pass for whole ones
                shutil.rmtree(os.path.join(self.out, name), ignore_errors=True)
            raise
        finally:
            shutil.rmtree(self.spill, ignore_errors=True)
        totals.seconds = time.perf_counter() - started
        return totals

    def _capture(self, file_id: int, path: str, totals: Totals, stopping: Callable[[], bool]) -> None:
        made = TableRows(self.wanted.matches, self.values)
        one = CapturePass(self.config, file_id, path, made, judged=True)

        def between() -> bool:
            for kind, columns in made.out.items():
                if len(columns) >= BATCH_ROWS:
                    self._write(kind, columns)
            return stopping()

        if not one.run(stopping=between):
            raise Stopped
        for kind, columns in made.out.items():
            if len(columns):
                self._write(kind, columns)
        if one.findings:
            self.writers["findings"].write(findings_batch(one.findings))
        self.topics.update(one.topics)
        stats = made.stats
        totals.packets += stats["packets"]
        totals.connections += stats["connections"]
        totals.exchanges += stats["exchanges"]
        totals.records += stats["records"]
        totals.diagnostics += stats["diagnostics"]
        totals.findings += len(one.findings)

    def _write(self, kind: str, columns: Any) -> None:
        name = TABLE_OF[kind]
        data, (dates, apis) = columns.take()
        schema = tables.TABLES[name]
        batch = pa.RecordBatch.from_arrays(tables.arrays(schema, data), schema=schema)
        batch = batch.append_column("date", pa.array(dates, pa.string())).append_column("api", pa.array(apis, pa.string()))
        unnamed = _unnamed(name, batch)
        if unnamed is not None and pc.any(unnamed).as_py():
            self._wait(name, batch.filter(unnamed))
            batch = batch.filter(pc.invert(unnamed))
        self.writers[name].write(batch)

    def _wait(self, name: str, batch: pa.RecordBatch) -> None:
        stream = self.waiting.get(name)
        if stream is None:
            sink = pa.OSFile(os.path.join(self.spill, name + ".arrows"), "wb")
            stream = self.waiting[name] = pa.ipc.new_stream(sink, batch.schema)
        stream.write_batch(batch)

    def _named(self) -> None:
        """The rows that waited, named from every connection of the job, written."""
        for name, stream in self.waiting.items():
            stream.close()
            name_row = name_exchange if name == "exchanges" else name_record
            with pa.memory_map(os.path.join(self.spill, name + ".arrows")) as source:
                for batch in pa.ipc.open_stream(source):
                    found = batch.to_pylist()
                    for row in found:
                        name_row(row, self.topics)
                    self.writers[name].write(pa.RecordBatch.from_pylist(found, schema=batch.schema))
        self.waiting = {}


TABLE_OF = {kind: name for name, kind in KIND_OF.items()}


def _written(schema: pa.Schema) -> pa.Schema:
    """The columns a table is written with: without the exchanges' internal `unresolved_topic_ids`."""
    index = schema.get_field_index("unresolved_topic_ids")
    return schema if index < 0 else schema.remove(index)


def _unnamed(name: str, batch: pa.RecordBatch) -> pa.Array | None:
    """Which rows wait for topic names from other connections: exchanges with topic ids their connection could not
    name, records whose topic is only an id."""
    if name == "exchanges":
        return pc.greater(pc.list_value_length(batch.column("unresolved_topic_ids")), 0)
    if name == "records":
        return pc.and_(pc.is_null(batch.column("topic")), pc.is_valid(batch.column("topic_id")))
    return None
