"""`read --jobs N`: one capture read by N processes, each decoding and writing its share of the exchanges,
merged by the first into the output one process would have written, byte for byte.

Every process drives the same core over every packet, so each knows what only the whole capture tells: the
exchange and connection numbers, topic names learnt on other connections, pairing, eviction. A process
decodes the bodies of its own exchanges alone (`Options.keep`, as a display filter skips bodies; bodies later
ones depend on are decoded by all), which is where the time goes: decoding and writing. Exchanges are dealt out
by connection and correlation id (`owner`), so a capture of one busy connection is shared as well as one of
many. The first process (the command's own) reads its events in capture order; at another's exchange it
takes the next item that process sent: whether the filter showed it, the facts the totals count
(`views.summary.Facts`) when the command prints totals, the bytes its sink wrote for it, the codes of its
diagnostics of severity error. The text view ends with the doctor's verdict, which reads every exchange: there
the first process decodes every body, and the others share the testing and the writing.

Standard input, pipes and captures smaller than `SPLIT_BYTES` are read by one process: a second one would
cost more than it saves. One bound is each process's own: the records a capture may build
(`Limits.max_records_capture`), so a capture that exhausts it has more of its records built by several processes
than by one.
"""

from __future__ import annotations

import io
import os
import pickle
import stat
import struct
import traceback
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from typing import Any

from kdissect.commands.options import UserError
from kdissect.events.headers import RequestHeader
from kdissect.forked import end_workers, fork_worker

SPLIT_BYTES = 8 << 20
"""Captures smaller than this are read by one process."""
BATCH_ITEMS = 64
"""A worker sends its exchanges in batches of this many (or of `BATCH_BYTES` written)."""
BATCH_BYTES = 256 << 10
PIPE_BYTES = 1 << 20
"""A worker can run this far ahead of the first process before it waits."""
LENGTH = struct.Struct("<I")


class WorkerFailed(Exception):
    """A worker process ended without sending what it owed."""


def available() -> int:
    """The cores this process may run on: `--jobs 0`."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere, the machine's
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def processes(jobs: int | None) -> int:
    """The processes `--jobs` asks for: the cores available when it is not given or 0; a UserError when negative."""
    if jobs is None or jobs == 0:
        return available()
    if jobs < 0:
        raise UserError(f"--jobs {jobs}: give a number of processes, or 0 for the cores available")
    return jobs


def splits(capture: str | None, jobs: int) -> int:
    """How many processes read the capture: `jobs` for a regular file of at least `SPLIT_BYTES`, else 1."""
    if jobs <= 1 or not capture or capture == "-":
        return 1
    try:
        st = os.stat(capture)
    except OSError:
        return 1
    return jobs if stat.S_ISREG(st.st_mode) and st.st_size >= SPLIT_BYTES else 1


def owner(connection: int, request: Any, n: int) -> int:
    """The process, of n, that decodes and writes the exchange of `request` (a `Message`, or None) on
    `connection`: its connection's number and its correlation id, mixed, choose it. An exchange without a
    readable request header (an orphan response, a raw SASL token), whose bodies every process decodes, is the
    first process's."""
    header = request.header if request is not None else None
    if type(header) is not RequestHeader:
        return 0
    mixed = ((connection * 0x9E3779B1) ^ (header.correlation_id & 0xFFFFFFFF)) * 0x85EBCA6B & 0xFFFFFFFF
    return (mixed >> 16) % n


def owned(k: int, n: int, keep: Any) -> Callable[..., bool]:
    """A `kafka.shared.Keep` that lets process k decode the bodies of its own exchanges (and of those only
    what `keep`, a display filter's verdict, keeps)."""
    if keep is None:
        return lambda info, request, response: owner(info.id, request, n) == k
    return lambda info, request, response: owner(info.id, request, n) == k and keep(info, request, response)


class Workers:
    """Processes 1..n-1 of a split reading, forked from the first; `merge` puts their work in its place."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.children: list[tuple[int, int]] = []
        """(pid, read end of its pipe) of each worker."""

    def start(self, capture: str, options: Any, wanted: Any, make_sink: Callable[[Any], Any], flush: Callable[[], None]) -> None:
        """Fork the workers; `make_sink(stream)` makes a worker's `EventSink` writing to `stream`. `flush` empties
        the first process's output buffers first, so no worker inherits (and could repeat) what they hold."""
        flush()
        for k in range(1, self.n):
            pid, fd = fork_worker((other for _, other in self.children), PIPE_BYTES)
            if pid == 0:
                _work(k, self.n, capture, options, wanted, make_sink, fd)
            self.children.append((pid, fd))

    def merge(self, events: Iterator[Any]) -> Generator[Any, None, None]:
        """The first process's events, each exchange of another process's connection replaced by a `Settled`."""
        from kdissect.events import Exchange
        from kdissect.views.sink import Settled

        n = self.n
        feeds = [iter(())] + [_received(read) for _, read in self.children]
        for event in events:
            if type(event) is Exchange:
                k = owner(event.connection.id, event.request, n)
                if k:
                    item = next(feeds[k], None)
                    if item is None or item[0] != event.id:
                        raise WorkerFailed(f"worker {k} is out of step at exchange {event.id}")
                    yield Settled(event, *item[1:])
                    continue
            yield event

    def stop(self) -> None:
        """End the workers (done, or no longer needed: --count, a closed pipe, Ctrl-C) and reap them."""
        end_workers(self.children)
        self.children = []


def _received(fd: int) -> Iterator[tuple]:
    with os.fdopen(fd, "rb", closefd=False) as pipe:
        while True:
            head = pipe.read(LENGTH.size)
            if len(head) < LENGTH.size:
                raise WorkerFailed("a worker ended without finishing")
            payload = pickle.loads(pipe.read(LENGTH.unpack(head)[0]))
            if payload is None:
                return
            if isinstance(payload, str):
                raise WorkerFailed(payload)
            yield from payload


def _work(k: int, n: int, capture: str, options: Any, wanted: Any, make_sink: Callable[[Any], Any], fd: int) -> None:
    """A worker's life, in the forked child: never returns."""
    status = 0
    try:
        with os.fdopen(fd, "wb") as pipe:
            try:
                _send_all(k, n, capture, options, wanted, make_sink, pipe)
            except (BrokenPipeError, KeyboardInterrupt):
                status = 1
            except Exception:  # told to the first process, which ends with it
                _send(pipe, f"worker {k} failed:\n{traceback.format_exc()}")
                status = 1
    except BrokenPipeError:
        status = 1
    finally:
        os._exit(status)


def _send_all(k: int, n: int, capture: str, options: Any, wanted: Any, make_sink: Callable[[Any], Any], pipe: Any) -> None:
    from kdissect.capture import open_capture
    from kdissect.dissector import file_dissector
    from kdissect.events import Exchange
    from kdissect.views.summary import exchange_facts

    buffer = io.BytesIO()
    sink = make_sink(io.TextIOWrapper(buffer, encoding="utf-8", write_through=True))
    totals = sink.summary is not None
    with open_capture(capture) as source:
        dissector = file_dissector(source, replace(options, keep=owned(k, n, options.keep)))
        batch: list[tuple] = []
        size = 0
        for event in dissector.run(source.packets()):
            if type(event) is not Exchange or owner(event.connection.id, event.request, n) != k:
                continue
            shown = wanted.matches(event)
            if shown:
                sink.output.exchange(event)
            output = buffer.getvalue()
            if output:
                buffer.seek(0)
                buffer.truncate()
            damage = tuple(d.code for d in event.diagnostics if d.lost)
            facts = exchange_facts(event, shown) if totals else None
            batch.append((event.id, shown, facts, output, damage))
            size += len(output)
            if len(batch) >= BATCH_ITEMS or size >= BATCH_BYTES:
                _send(pipe, batch)
                batch, size = [], 0
    _send(pipe, batch)
    _send(pipe, None)


def _send(pipe: Any, payload: Any) -> None:
    data = pickle.dumps(payload, pickle.HIGHEST_PROTOCOL)
    pipe.write(LENGTH.pack(len(data)))
    pipe.write(data)
    pipe.flush()
