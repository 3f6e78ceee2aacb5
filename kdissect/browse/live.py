"""Live packets for the browser: the index's pass reads a live capture instead of a file (`kdissect live --browse`).

A body is shown by reading its packets again (scan.py), and a live capture cannot be read again: so each packet
is written to a pcap file before the core sees it, and the index's checkpoints point into that file. Memory
stays what a file's index costs (no frame bytes are held); the file grows on disk like `live --write`, which
names it (else it is a temporary file, removed when the browser closes). The file is flushed before the
packets are dissected, so an exchange on the list can always be read again.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kdissect.browse.scan import CHECKPOINT
from kdissect.capture.live import LiveCapture
from kdissect.capture.writer import PcapWriter
from kdissect.dissector import Options, make_dissector
from kdissect.events import Event
from kdissect.tls.follow import KeyLogFollower

BATCH = 512
"""Packets read per turn before the stop conditions get a look."""
TICK = 0.25
"""Longest wait for packets, in seconds."""


@dataclass
class LiveFeed:
    """A live capture kept in `store` (a pcap file open for writing, at its start) as its packets are dissected."""

    capture: LiveCapture
    store: IO[bytes]
    packets: int | None = None
    """Stop capturing after this many packets (--packets); the browser stays open on what was captured."""
    duration: float | None = None
    keylog: Path | None = None
    """A key log the clients write during the session (--tls-keylog), followed as in `live`."""
    stopped: str = ""
    """Why the capture stopped, once it has."""
    failure: str | None = None

    def events(
        self, options: Options, offsets: list[int], decoder: Any, stop: threading.Event, between: Callable[[], None]
    ) -> Iterator[Event]:
        """The core's events as packets arrive, until `stop`, --packets or --duration; `between` is called after
        each turn, from this thread, with the core idle (the index's pass answers questions and sends its rows
        there while no packet comes)."""
        capture, store = self.capture, self.store
        writer = PcapWriter(store, capture.linktype, nanosecond=True)
        dissector = make_dissector(options, decoder)
        follower = None if self.keylog is None else KeyLogFollower(self.keylog, len(options.tls_keylog), dissector.add_tls_keylog)
        poller = select.poll()
        poller.register(capture.fileno(), select.POLLIN)
        deadline = None if self.duration is None else time.monotonic() + self.duration
        wait = 0.0
        while not stop.is_set():
            if wait:
                poller.poll(wait * 1000)
            if follower is not None:
                follower.poll()
            limit = BATCH if self.packets is None else min(BATCH, self.packets - capture.stats.packets)
            try:
                packets = capture.read(limit)
            except OSError as exc:
                self.failure = f"the capture on {capture.interface} failed: {exc.strerror or exc}"
                break
            for packet in packets:
                if packet.index % CHECKPOINT == 1:
                    offsets.append(store.tell())
                writer.write(packet)
            store.flush()  # before the core sees them: what the list shows can be read again
            for packet in packets:
                yield from dissector.feed(packet)
            between()
            wait = 0.0 if len(packets) == limit else TICK
            if self.packets is not None and capture.stats.packets >= self.packets:
                self.stopped = f"{capture.stats.packets} packets (--packets)"
                break
            if deadline is not None and time.monotonic() >= deadline:
                self.stopped = f"{self.duration:g} s (--duration)"
                break
        capture.update_stats()
        yield from dissector.finish()
