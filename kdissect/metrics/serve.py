"""`live --metrics [ADDR:]PORT`: the Prometheus endpoint, served by prometheus_client on its own thread.

Only the capture loop touches the tap. A scrape asks it for a snapshot through a `Handoff`: the HTTP thread writes a
byte to a pipe the loop polls beside the capture socket, the loop takes the snapshot between two batches of packets
and hands it back, and the HTTP thread writes it (OpenMetrics or Prometheus text, as the scraper asks). A scrape
waits at most `WAIT` seconds; a loop that cannot answer by then gets the last snapshot served. The process's own
metrics (`process_resident_memory_bytes`, CPU, open files) come from prometheus_client's process collector.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
from prometheus_client.metrics_core import Metric as Family

from kdissect.metrics.prometheus import families
from kdissect.metrics.series import Snapshot

WAIT = 2.0
"""Seconds a scrape waits for the capture loop's snapshot."""


class AddressError(ValueError):
    """A --metrics address that cannot be read or listened on; one line for the user."""


def parse_address(text: str) -> tuple[str, int]:
    """`PORT`, `ADDR:PORT` or `[V6ADDR]:PORT` -> (address, port); a bare port listens on every interface."""
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = "", text
    host = host.removeprefix("[").removesuffix("]")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise AddressError(f"--metrics {text}: give [ADDR:]PORT, such as 9464 or 127.0.0.1:9464")
    return host or "0.0.0.0", int(port)


class Handoff:
    """A snapshot asked for on one thread and made on another."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._done = threading.Condition()
        self._asked = 0
        self._answered = 0
        self.latest: Snapshot | None = None

    def fileno(self) -> int:
        """Readable when a scrape waits: the capture loop polls it."""
        return self._read

    def ask(self, wait: float = WAIT) -> Snapshot | None:
        """The HTTP thread's side: a fresh snapshot, or the last one when the loop does not answer in time."""
        with self._done:
            self._asked += 1
            wanted = self._asked
            try:
                os.write(self._write, b"!")
            except BlockingIOError:
                pass  # the pipe is full of asks already: the loop will answer them all at once
            self._done.wait_for(lambda: self._answered >= wanted, timeout=wait)
            return self.latest

    @property
    def asked(self) -> bool:
        return self._asked > self._answered

    def answer(self, make: Callable[[], Snapshot]) -> None:
        """The capture loop's side: when a scrape waits, make the snapshot and wake it."""
        try:
            while os.read(self._read, 512):
                pass
        except BlockingIOError:
            pass
        if not self.asked:
            return
        snapshot = make()
        with self._done:
            self.latest = snapshot
            self._answered = self._asked
            self._done.notify_all()

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


class _Scraped:
    """The registry's collector: each scrape's snapshot, asked of the capture loop."""

    def __init__(self, handoff: Handoff) -> None:
        self.handoff = handoff

    def collect(self) -> Iterable[Family]:
        snapshot = self.handoff.ask()
        return () if snapshot is None else families(snapshot)


class Endpoint:
    """The HTTP server of `--metrics`, listening from construction until `close`."""

    def __init__(self, address: str, port: int, handoff: Handoff) -> None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Scraped(handoff))
        ProcessCollector(registry=registry)
        try:
            self.server, self.thread = start_http_server(port, address, registry)
        except OSError as exc:
            raise AddressError(f"--metrics: cannot listen on {address}:{port}: {exc.strerror or exc}") from None
        self.address = f"{address}:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
