"""`kdissect tables`: the Spark job's tables made on one machine, without a JVM, by the same row code.

Each capture is read once (capture_pass.py): its packets are dealt to a dissector per connection key as Spark's
tasks would dissect them (demux.py), the events become rows (table_rows.py), and the doctor judges the capture in
the same pass (findings.py). Rows are made into Arrow batches of the tables' schemas (tables.py) and written as
Spark writes them (parquet_out.py). Rows whose topic ids their connection could not name wait on disk, in Arrow's
stream format, until every capture is read: then they are named from every connection of the job, as the Spark job
names them (job.name_topics), and written.
"""

from __future__ import annotations

import functools
import os
import pickle
import select
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.compute as pc

from kdissect.capture import ranges
from kdissect.forked import end_workers, fork_worker
from kdissect.pipeline import tables
from kdissect.pipeline.capture_pass import CapturePass
from kdissect.pipeline.config import filter_of, options_of, values_of
from kdissect.pipeline.demux import EVERY_KEY, Share, shares
from kdissect.pipeline.findings import findings_batch
from kdissect.pipeline.inputs import InputError, InputFile, expand, is_uri
from kdissect.pipeline.job import KIND_OF, UNIQUE, WRITTEN, JobError, Totals, embedded_secrets
from kdissect.pipeline.parquet_out import TableWriter
from kdissect.pipeline.table_rows import TableRows, name_exchange, name_record

Lot = list[tuple[int, str, Share]]
"""What one process reads: (file id, path, its share of the connection keys) of each capture."""
WHOLE = 1 << 62
"""A range size no capture reaches: every file is read in one range."""
DOCTOR_SHARE = 0.3
"""The part of a capture split in two whose rows the doctor's process makes: it also dissects every key and judges
(in three, half as much; benchmarks/README.md)."""
POLL = 0.1
"""Seconds between two looks at `stopping` while the workers finish."""


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


class WorkerFailed(Exception):
    """A worker process ended without its share of a capture (killed, or failed): one line."""


@dataclass
class Done:
    """What one process made of its share of a capture, for the job's totals and for naming the waiting rows."""

    file_id: int
    judged: bool
    """The doctor's share, which dissected every key: its topics are the capture's."""
    stats: dict[str, int]
    findings: int
    topics: dict[str, str]
    """The topic ids its connections named: every one of the capture's from the judged share."""
    waiting: list[tuple[str, str]] = field(default_factory=list)
    """(table, Arrow stream file) of a worker's rows that wait for topic names."""


class LocalJob:
    """The tables of `paths` under `out`; `run` returns the job's totals. `splits(path)` says how many processes
    share a capture's connection keys (commands/jobs.py `splits`; 1: this process alone, no fork); the captures it
    leaves whole are dealt out whole to `processes` processes when there are several."""

    def __init__(
        self,
        paths: dict[int, str],
        out: str,
        config: dict[str, Any],
        progress: Callable[[str], None] = lambda line: None,
        splits: Callable[[str], int] = lambda path: 1,
        processes: int = 1,
    ) -> None:
        self.paths = paths
        self.out = os.path.abspath(out)
        self.config = {**config, "paths": {str(k): v for k, v in paths.items()}, "tls_secrets": embedded_secrets(paths)}
        self.progress = progress
        self.splits = splits
        self.processes = processes
        self.values = values_of(self.config)
        self.wanted = filter_of(self.config, options_of(self.config).catalog, self.values)
        self.spill = ""
        self.own: Writing | None = None
        self.topics: dict[str, str] = {}
        self.waiting: list[tuple[str, str]] = []
        """(table, Arrow stream file) of the workers' rows that wait for topic names."""

    def run(self, stopping: Callable[[], bool] = lambda: False) -> Totals:
        started = time.perf_counter()
        totals = Totals(files=len(self.paths), ranges=len(self.paths))
        os.makedirs(self.out, exist_ok=True)
        self.spill = tempfile.mkdtemp(prefix=".kdissect-naming-", dir=self.out)
        try:
            self.own = Writing(self.out, self.spill, "")
            whole = {file_id: path for file_id, path in self.paths.items() if self.splits(path) <= 1}
            dealt = whole if self.processes > 1 and len(whole) > 1 else {}
            judged: dict[int, Done] = {}
            for number, (file_id, path) in enumerate(self.paths.items(), 1):
                if file_id not in dealt:
                    self.progress(f"reading {path} ({number} of {len(self.paths)})")
                    self._count(self._capture(file_id, path, stopping), totals, judged)
            if dealt:
                self.progress(f"reading {len(dealt)} captures in {min(self.processes, len(dealt))} processes")
                self._count(self._dealt(dealt, stopping), totals, judged)
            for file_id in sorted(judged):  # as one process names them: the later capture's name for an id wins
                self.topics.update(judged[file_id].topics)
            self.progress("naming topics and writing")
            self._named(self.own.spilled() + self.waiting)
            self.own.close()
        except BaseException:
            for name in WRITTEN:  # half-written tables would pass for whole ones
                shutil.rmtree(os.path.join(self.out, name), ignore_errors=True)
            raise
        finally:
            shutil.rmtree(self.spill, ignore_errors=True)
        totals.seconds = time.perf_counter() - started
        return totals

    def _capture(self, file_id: int, path: str, stopping: Callable[[], bool]) -> list[Done]:
        """The capture read by `splits(path)` processes: this one the doctor's, with every key, the others forked."""
        n = max(1, self.splits(path))
        lots = [[(file_id, path, share)] for share in shares(n, DOCTOR_SHARE / max(1, n - 1))]
        return self._read(path, lots, False, f"-{file_id}-", stopping)

    def _dealt(self, captures: dict[int, str], stopping: Callable[[], bool]) -> list[Done]:
        """Captures read whole, dealt out to the processes by size (the largest first, each to the one with the
        fewest bytes so far): this one reads the first lot, forked workers the others."""
        lots: list[Lot] = [[] for _ in range(min(self.processes, len(captures)))]
        loads = [0] * len(lots)
        sizes = {file_id: os.path.getsize(path) for file_id, path in captures.items()}
        for file_id, path in sorted(captures.items(), key=lambda item: -sizes[item[0]]):
            k = loads.index(min(loads))
            lots[k].append((file_id, path, EVERY_KEY))
            loads[k] += sizes[file_id]
        return self._read(f"{len(captures)} captures", lots, True, "-w", stopping)

    def _read(self, what: str, lots: list[Lot], judged: bool, tag: str, stopping: Callable[[], bool]) -> list[Done]:
        """The first lot read by this process, as the doctor of each; the others by forked workers (`judged`: each
        the doctor of its captures too), whose files are tagged `tag` and their number."""
        assert self.own is not None
        workers = Workers(what)
        try:
            for k, lot in enumerate(lots[1:], 1):
                workers.start(functools.partial(self._worker, lot, judged, f"{tag}{k}"))
            own = [self._share(self.own, file_id, path, share, True, stopping) for file_id, path, share in lots[0]]
            return own + workers.results(stopping)
        finally:
            workers.stop()

    def _count(self, done: list[Done], totals: Totals, judged: dict[int, Done]) -> None:
        for one in done:
            if one.judged:
                judged[one.file_id] = one
            self.waiting += one.waiting
            stats = one.stats
            totals.packets += stats["packets"]
            totals.connections += stats["connections"]
            totals.exchanges += stats["exchanges"]
            totals.records += stats["records"]
            totals.diagnostics += stats["diagnostics"]
            totals.findings += one.findings

    def _worker(self, lot: Lot, judged: bool, tag: str) -> list[Done]:
        """A forked worker's lot (shares of one capture, or whole captures), its files closed; the rows still
        waiting for topic names go with its last."""
        writing = Writing(self.out, self.spill, tag)
        done = [self._share(writing, file_id, path, share, judged, lambda: False) for file_id, path, share in lot]
        done[-1].waiting = writing.spilled()
        writing.close()
        return done

    def _share(self, writing: Writing, file_id: int, path: str, share: Share, judged: bool, stopping: Callable[[], bool]) -> Done:
        made = TableRows(self.wanted.matches, self.values)
        one = CapturePass(self.config, file_id, path, made, judged, share)

        def between() -> bool:
            for kind, columns in made.out.items():
                if columns.full():
                    writing.rows(kind, columns)
            return stopping()

        if not one.run(stopping=between):
            raise Stopped
        for kind, columns in made.out.items():
            if len(columns):
                writing.rows(kind, columns)
        if one.findings:
            writing.writers["findings"].write(findings_batch(one.findings))
        return Done(file_id, judged, made.stats, len(one.findings), one.topics)

    def _named(self, waiting: list[tuple[str, str]]) -> None:
        """The rows that waited, named from every connection of the job, written."""
        assert self.own is not None
        for name, path in waiting:
            name_row = name_exchange if name == "exchanges" else name_record
            with pa.memory_map(path) as source:
                for batch in pa.ipc.open_stream(source):
                    found = batch.to_pylist()
                    for row in found:
                        name_row(row, self.topics)
                    self.own.writers[name].write(pa.RecordBatch.from_pylist(found, schema=batch.schema))


class Writing:
    """What one process writes: its Parquet files (their names carry `tag`) and its rows that wait for topic
    names from other connections, in Arrow's stream format under `spill`."""

    def __init__(self, out: str, spill: str, tag: str) -> None:
        self.spill = spill
        self.tag = tag
        self.writers = {
            name: TableWriter(
                os.path.join(out, name),
                _written(tables.TABLES[name]),
                tables.PARTITIONED_BY[name],
                UNIQUE.get(name, ()),
                tag,
            )
            for name in WRITTEN
        }
        self.waiting: dict[str, Any] = {}
        """Per table, the Arrow stream of rows that wait for topic names."""

    def rows(self, kind: str, columns: Any) -> None:
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
            sink = pa.OSFile(self._spilled(name), "wb")
            stream = self.waiting[name] = pa.ipc.new_stream(sink, batch.schema)
        stream.write_batch(batch)

    def _spilled(self, name: str) -> str:
        return os.path.join(self.spill, f"{name}{self.tag}.arrows")

    def spilled(self) -> list[tuple[str, str]]:
        """(table, file) of the rows that wait, their streams closed."""
        for stream in self.waiting.values():
            stream.close()
        found = [(name, self._spilled(name)) for name in self.waiting]
        self.waiting = {}
        return found

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()


class Workers:
    """The forked processes reading shares of one capture, or whole captures; each sends back its pickled `Done`s (or
    why it failed) when its files are whole."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.children: dict[int, int] = {}
        """The read end of each worker's pipe, by its pid."""

    def start(self, work: Callable[[], list[Done]]) -> None:
        pid, fd = fork_worker(self.children.values())
        if pid == 0:
            _work(work, fd)
        self.children[pid] = fd

    def results(self, stopping: Callable[[], bool]) -> list[Done]:
        """Every worker's `Done`s, in the order they started; Stopped as soon as `stopping` says so (looked at every
        `POLL` seconds), WorkerFailed for one that ended without its own."""
        received: dict[int, bytearray] = {fd: bytearray() for fd in self.children.values()}
        open_fds = set(received)
        while open_fds:
            ready, _, _ = select.select(list(open_fds), [], [], POLL)
            if stopping():
                raise Stopped
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    received[fd] += chunk
                else:
                    open_fds.discard(fd)
        done: list[Done] = []
        for pid, fd in list(self.children.items()):
            got = pickle.loads(received[fd]) if received[fd] else None
            if not isinstance(got, list):
                raise WorkerFailed(f"a worker process {got or self._how(pid)} while reading {self.path}")
            done += got
        return done

    def _how(self, pid: int) -> str:
        """How a worker that sent nothing ended: reaped now."""
        _, status = os.waitpid(pid, 0)
        os.close(self.children.pop(pid))
        if os.WIFSIGNALED(status):
            return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
        return f"ended with status {os.waitstatus_to_exitcode(status)}"

    def stop(self) -> None:
        """End the workers still running (Ctrl-C, another failed) and reap every one."""
        end_workers(self.children.items())
        self.children = {}


def _work(work: Callable[[], list[Done]], fd: int) -> NoReturn:
    """A worker's life, in the forked child (`forked.fork_worker`): never returns."""
    status = 0
    try:
        try:
            payload: list[Done] | str = work()
        except Exception as exc:
            payload, status = f"failed ({type(exc).__name__}: {' '.join(str(exc).split())})", 1
        with os.fdopen(fd, "wb") as pipe:
            pickle.dump(payload, pipe, pickle.HIGHEST_PROTOCOL)
    except BaseException:
        status = 1
    finally:
        os._exit(status)


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
