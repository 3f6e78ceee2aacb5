"""The streaming pass: the CLI's core over one task's rows, sorted by (file, key, range, chunk).

Each (file, key) group is one 4-tuple's packets in capture order: a fresh `Dissector` takes them, as the CLI's
would, and is finished when the group ends, so a task holds one connection's state at a time however long the
connection lived. All groups of a task share one body `Decoder` (its compiled decoders are the costly part to
make), with the topic names learnt reset per group, so what a connection's JSON says does not depend on which
other connections shared its task. Names learnt on other connections are put in the tables' `topic`/`topics`
columns afterwards, by the job (see job.py). The rows are made by table_rows.py, which `kdissect tables` runs too.

Nothing here imports pyspark: `CoreStage(config)(batches)` takes and yields Arrow record batches, so tests
and the benchmark can run it without Spark.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Iterator

import pyarrow as pa

from kdissect.dissector import Dissector, make_dissector
from kdissect.pipeline import rows, tables
from kdissect.pipeline.blobs import unpack
from kdissect.pipeline.config import decoder_of, filter_of, options_of, values_of
from kdissect.pipeline.reader import FILE_DIAGNOSTICS, merge_oddities
from kdissect.pipeline.table_rows import KeyRows, TableRows


class CoreStage:
    """Callable for `mapInArrow`: Arrow batches of input rows in, batches of core output out."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from _Task(self.config).run(batches)


class _Task:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        options = options_of(config)
        values = values_of(config)
        wanted = filter_of(config, options.catalog, values)
        self.options = options = replace(options, keep=wanted.keep)
        self.paths: dict[int, str] = {int(k): v for k, v in config["paths"].items()}
        self.decoder = decoder_of(config, options)
        """One for every connection of the task, and of the worker's next tasks."""
        self.rows = TableRows(wanted.matches, values)
        self.stats = self.rows.stats
        self.topics: dict[str, str] = {}
        self.group: tuple[int, bytes] | None = None
        self.dissector: Dissector | None = None
        self.key = KeyRows(0)
        self.file_diagnostics: list[bytes] = []

    def run(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            blobs = batch.column("blob")  # taken out one row at a time: a batch of blobs is not copied whole
            for i, (file_id, key, first_index, packets) in enumerate(
                zip(*(batch.column(name).to_pylist() for name in ("file_id", "key", "first_index", "packets")))
            ):
                blob = blobs[i].as_py()
                if (file_id, key) != self.group:
                    self._end_group()
                    self._start_group(file_id, key, first_index)
                if key == FILE_DIAGNOSTICS:
                    self.file_diagnostics.append(blob)
                    self.stats["packets"] += packets
                    continue
                assert self.dissector is not None  # _start_group made one: the group is a connection's
                feed = self.dissector.feed
                for packet in unpack(blob):
                    events = feed(packet)
                    if events:
                        self.rows.add(events, self.capture, self.key)
                yield from self._full()
        self._end_group()
        yield from self._full(everything=True)
        topic = rows.Columns(tables.TOPICS.names)
        for topic_id, name in self.topics.items():
            topic.add({"topic_id": topic_id, "name": name}, None, None)
        if len(topic):
            yield tables.batch("topic", *topic.take())
        yield tables.batch("stats", {name: [count] for name, count in self.stats.items()}, ([None], [None]))

    def _start_group(self, file_id: int, key: bytes, first_index: int) -> None:
        self.group = (file_id, key)
        self.capture = self.paths[file_id]
        if key == FILE_DIAGNOSTICS:
            self.dissector = None
            self.file_diagnostics = []
            return
        self.key = KeyRows(first_index)
        self.decoder.topic_names = self.key.names
        self.dissector = make_dissector(self.options, self.decoder)
        embedded = self.config.get("tls_secrets", {}).get(str(file_id))
        if embedded:  # the TLS key logs of the capture's pcapng secrets blocks (job.py)
            self.dissector.add_tls_keylog(embedded)

    def _end_group(self) -> None:
        if self.group is None:
            return
        if self.group[1] == FILE_DIAGNOSTICS:
            self.rows.file_diagnostics(merge_oddities(self.file_diagnostics).diagnostics(), self.capture)
        elif self.dissector is not None:
            self.rows.add(self.dissector.finish(), self.capture, self.key)
            self.topics.update(self.key.names)
        self.group = None
        self.dissector = None

    def _full(self, everything: bool = False) -> Iterator[pa.RecordBatch]:
        for kind, columns in self.rows.out.items():
            if columns.full() or (everything and len(columns)):
                data, partitions = columns.take()
                yield tables.batch(kind, data, partitions)
