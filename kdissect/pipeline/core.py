"""The streaming pass: the CLI's core over one task's rows, sorted by (file, key, range, chunk).

Each (file, key) group is one 4-tuple's packets in capture order: a fresh `Dissector` takes them, as the CLI's
would, and is finished when the group ends, so a task holds one connection's state at a time however long the
connection lived. All groups of a task share one body `Decoder` (its compiled decoders are the costly part to
make), with the topic names learnt reset per group, so what a connection's JSON says does not depend on which
other connections shared its task. Names learnt on other connections are put in the tables' `topic`/`topics`
columns afterwards, by the job (see job.py).

Nothing here imports pyspark: `CoreStage(config)(batches)` takes and yields Arrow record batches, so tests
and the benchmark can run it without Spark.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Iterable, Iterator

import pyarrow as pa

from kdissect.dissector import Dissector, Options, make_decoder, make_dissector
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.filter import compile_filter
from kdissect.limits import Limits
from kdissect.pipeline import rows, tables
from kdissect.pipeline.blobs import unpack
from kdissect.pipeline.reader import FILE_DIAGNOSTICS, merge_oddities
from kdissect.schema import Catalog, catalog_with
from kdissect.schema.user_specs import SpecFile, load

BATCH_ROWS = 4096
_decoders: dict[str, Any] = {}
"""A Python worker's decoders by the configuration that shapes them, kept across its tasks (Spark reuses
workers): compiling a task's decoders costs about 0.15 s, a tenth of a 16 MiB range's work."""


class TopicNames(dict):
    """The decoder's topic id -> name table, noting the ids it was asked for and did not have."""

    __slots__ = ("missed",)

    def __init__(self) -> None:
        super().__init__()
        self.missed: set[str] = set()

    def __contains__(self, key: object) -> bool:
        found = dict.__contains__(self, key)
        if not found:
            self.missed.add(key)  # type: ignore[arg-type]
        return found


def catalog_of(config: dict[str, Any]) -> Catalog:
    """The catalogue of the users' specs the driver sent with the job, read again from the files' text (executors
    need not see the driver's files); made once per worker and set of specs."""
    files = config.get("spec_files")
    if not files:
        return catalog_with(())
    key = json.dumps([files, config.get("spec_keys")])
    catalog = _catalogs.get(key)
    if catalog is None:
        specs = load([SpecFile(path, text) for path, text in files], config.get("spec_keys") or ())
        catalog = _catalogs[key] = catalog_with(specs.definitions)
    return catalog


_catalogs: dict[str, Catalog] = {}


def options_of(config: dict[str, Any]) -> Options:
    return Options(
        ports=frozenset(config.get("ports") or (9092,)),
        limits=Limits(max_frame_size=config.get("max_frame_size", Limits().max_frame_size)),
        reorder=config.get("reorder", True),
        show_secrets=config.get("show_secrets", False),
        tls_keylog=config.get("tls_keylog", b""),
        catalog=catalog_of(config),
    )


def _decoder(config: dict[str, Any], options: Options) -> Any:
    """The worker's decoder for `config` (limits, secrets, users' specs), its capture budget started again."""
    key = json.dumps([options.limits, options.show_secrets, config.get("spec_files"), config.get("spec_keys")], default=repr)
    decoder = _decoders.get(key)
    if decoder is None:
        decoder = _decoders[key] = make_decoder(options)
    decoder.new_capture()
    return decoder


def values_of(config: dict[str, Any]) -> Any:
    """The worker's value reader for the schemas the driver sent (--schemas) and its registry (--schema-registry), kept
    for the worker's next tasks with what it compiled and asked."""
    key = json.dumps([config.get("schemas"), config.get("schema_registry")])
    reader = _readers.get(key)
    if reader is None:
        from kdissect.schema.code_cache import root
        from kdissect.values.reader import ValueReader
        from kdissect.values.schemas import Book, schema_from_record

        book = Book()
        for told in config.get("schemas") or ():
            book.add(schema_from_record(told))
        fetch = None
        if config.get("schema_registry"):
            from kdissect.values.registry import RegistryClient

            fetch = RegistryClient(config["schema_registry"], root(), lambda message: None)
        reader = _readers[key] = ValueReader(book, None, fetch)
        reader.learns = False  # what a record says must not depend on which connections a task read before
    return reader


_readers: dict[str, Any] = {}


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
        self.values = values_of(config)
        wanted = compile_filter(
            [("-Y", config["filter"])] if config.get("filter") else [], options.catalog, self.values
        )  # checked by the driver
        self.options = options = replace(options, keep=wanted.keep)
        self.wanted = wanted.matches
        """Exchanges it rejects are left out with their records and diagnostics; notices stay."""
        self.paths: dict[int, str] = {int(k): v for k, v in config["paths"].items()}
        self.decoder = _decoder(config, options)
        """One for every connection of the task, and of the worker's next tasks."""
        self.out = {kind: rows.Columns() for kind in tables.KINDS if kind != "stats"}
        self.stats = {"packets": 0, "connections": 0, "exchanges": 0, "records": 0, "diagnostics": 0}
        self.topics: dict[str, str] = {}
        self.group: tuple[int, bytes] | None = None
        self.dissector: Dissector | None = None
        self.names = TopicNames()
        self.first_index = 0
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
                feed = self.dissector.feed  # type: ignore[union-attr]
                for packet in unpack(blob):
                    events = feed(packet)
                    if events:
                        self._events(events)
                yield from self._full()
        self._end_group()
        yield from self._full(everything=True)
        for topic_id, name in self.topics.items():
            self.out["topic"].add({"topic_id": topic_id, "name": name}, None, None)
        yield from self._full(everything=True)
        yield tables.batch("stats", [self.stats], ([None], [None]))

    def _start_group(self, file_id: int, key: bytes, first_index: int) -> None:
        self.group = (file_id, key)
        self.capture = self.paths[file_id]
        self.first_index = first_index
        if key == FILE_DIAGNOSTICS:
            self.dissector = None
            self.file_diagnostics = []
            return
        self.names = TopicNames()
        self.decoder.topic_names = self.names
        self.dissector = make_dissector(self.options, self.decoder)
        embedded = self.config.get("tls_secrets", {}).get(str(file_id))
        if embedded:  # the TLS key logs of the capture's pcapng secrets blocks (job.py)
            self.dissector.add_tls_keylog(embedded)

    def _end_group(self) -> None:
        if self.group is None:
            return
        if self.group[1] == FILE_DIAGNOSTICS:
            for d in merge_oddities(self.file_diagnostics).diagnostics():
                self.out["diagnostic"].add(rows.file_row(d, self.capture), rows.NONE, rows.NONE)
                self.stats["diagnostics"] += 1
        elif self.dissector is not None:
            self._events(self.dissector.finish())
            self.topics.update(self.names)
        self.group = None
        self.dissector = None

    def _connection_id(self, local: int) -> int:
        return self.first_index << rows.CONNECTION_BITS | local

    def _events(self, events: list) -> None:
        capture = self.capture
        stats = self.stats
        for event in events:
            if isinstance(event, Exchange):
                if not self.wanted(event):
                    continue
                xid = rows.exchange_id(event)
                cid = self._connection_id(event.connection.id)
                records = list(rows.record_rows(event, capture, xid, cid, self.values))
                row = rows.exchange_row(event, capture, xid, cid, self.names.missed, len(records), self.values)
                date, api = rows.day(event.ts), row["api_name"] or rows.UNKNOWN
                self.out["exchange"].add(row, date, api)
                stats["exchanges"] += 1
                if records:
                    self.out["record"].extend(records, date, api)
                    stats["records"] += len(records)
                for d in rows.exchange_diagnostic_rows(event, capture, xid, cid):
                    self.out["diagnostic"].add(d, date, api)
                    stats["diagnostics"] += 1
            elif isinstance(event, Notice):
                cid = self._connection_id(event.connection.id) if event.connection is not None else None
                self.out["diagnostic"].add(rows.notice_row(event, capture, cid), rows.day(event.ts or None), rows.NONE)
                stats["diagnostics"] += 1
            elif isinstance(event, ConnectionEnd):
                stats["connections"] += 1

    def _full(self, everything: bool = False) -> Iterator[pa.RecordBatch]:
        for kind, columns in self.out.items():
            if len(columns) >= BATCH_ROWS or (everything and len(columns)):
                data, partitions = columns.take()
                yield tables.batch(kind, data, partitions)
