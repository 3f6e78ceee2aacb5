"""The metrics side of a command: `live --metrics/--otlp` serving and pushing the tap's snapshots while the capture
runs, `read --metrics OUT.prom` writing a capture's snapshots to a file. The tap itself is `kdissect/metrics/`."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path
from typing import Any

from kdissect.commands.options import UserError

SECOND = 1_000_000_000
DROPS_EVERY = 10 * SECOND
"""A growing kernel drop count is told on standard error at most this often."""


def _line(text: str) -> None:
    print(f"kdissect: {text}", file=sys.stderr, flush=True)


class LiveTap:
    """A live session's tap, its Prometheus endpoint and its OTLP pusher, and what they do at each turn of the loop."""

    def __init__(self, settings: Any, wanted: Any, metrics: str | None, otlp: str | None, interval: float, interface: str) -> None:
        from kdissect.metrics.tap import Tap

        self.tap = Tap(settings, wanted)
        self.told: list[str] = []
        """Lines for standard error that other threads add (the OTLP pusher's first failure)."""
        self.handoff: Any = None
        self.endpoint: Any = None
        self.pusher: Any = None
        self.interval = int(interval * SECOND)
        self.idle = int(settings.idle * SECOND)
        """Nanoseconds after which the core lets go of a connection without packets."""
        self.next_push = 0
        self.drops = 0
        self.next_drops = 0
        if metrics is not None:
            from kdissect.metrics.serve import AddressError, Endpoint, Handoff, parse_address

            try:
                address, port = parse_address(metrics)
                self.handoff = Handoff()
                self.endpoint = Endpoint(address, port, self.handoff)
            except AddressError as exc:
                self.close_quietly()
                raise UserError(str(exc)) from None
        if otlp is not None:
            from kdissect.metrics.otlp import OtlpError, Pusher

            resource = {"service.name": "kdissect", "host.name": socket.gethostname(), "kdissect.interface": interface}
            try:
                self.pusher = Pusher(otlp, resource, self.told)
            except OtlpError as exc:
                self.close_quietly()
                raise UserError(str(exc)) from None

    def listening(self) -> str:
        parts = []
        if self.endpoint is not None:
            parts.append(f"metrics on http://{self.endpoint.address}/metrics")
        if self.pusher is not None:
            parts.append(f"pushing to {self.pusher.url} every {self.interval / SECOND:g} s")
        return ", ".join(parts)

    def fileno(self) -> int | None:
        """Readable when a scrape waits for a snapshot."""
        return self.handoff.fileno() if self.handoff is not None else None

    def turn(self, capture: Any, stats_fresh: bool) -> None:
        """Between two batches of packets: time passes for the tap, a waiting scrape is answered, a push is due."""
        tap = self.tap
        now = time.time_ns()
        tap.tick(now)
        stats = capture.stats
        if stats_fresh:
            tap.capture(stats.packets, stats.bytes, stats.kernel_drops, now)
            if stats.kernel_drops > self.drops and now >= self.next_drops:
                _line(
                    f"the kernel dropped {stats.kernel_drops - self.drops} packets since the last count ({stats.kernel_drops} in all): "
                    "kdissect does not keep up; the connections they belong to have gaps (a larger --ring-size absorbs bursts)"
                )
                self.drops, self.next_drops = stats.kernel_drops, now + DROPS_EVERY
        if self.handoff is not None:  # also empties its pipe, which woke the loop
            self.handoff.answer(lambda: tap.snapshot(now))
        if self.pusher is not None and now >= self.next_push:
            if self.next_push:
                self.pusher.offer(tap.snapshot(now))
            self.next_push = now + self.interval
        for line in tap.told():
            _line(line)
        while self.told:
            _line(self.told.pop(0))

    def close(self, capture: Any) -> Any:
        """The session is over: the last window's findings, a last push; returns the doctor's report."""
        tap = self.tap
        now = time.time_ns()
        stats = capture.stats
        tap.capture(stats.packets, stats.bytes, stats.kernel_drops, now)
        tap.close_window(now)
        if self.pusher is not None:
            self.pusher.close(tap.snapshot(now))
            self.pusher = None
        self.close_quietly()
        for line in [*tap.told(), *self.told]:
            _line(line)
        return tap.report

    def close_quietly(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
        if self.handoff is not None:
            self.handoff.close()
            self.handoff = None
        if self.pusher is not None:
            self.pusher.close(None)
            self.pusher = None


class FileTap:
    """`read --metrics OUT.prom`: the tap over a capture file, a snapshot every `interval` seconds of capture time,
    all written at the end with their timestamps."""

    def __init__(self, settings: Any, wanted: Any, path: Path, interval: float, counters: Any) -> None:
        from kdissect.metrics.tap import Tap

        try:
            self.stream = open(path, "wb")
        except OSError as exc:
            raise UserError(f"--metrics {path}: {exc.strerror or exc}") from None
        self.path = path
        self.tap = Tap(settings, wanted)
        self.counters = counters
        """The dissector's: packets and bytes read so far."""
        self.interval = int(interval * SECOND)
        self.next: int | None = None
        self.snapshots: list[Any] = []

    def add(self, event: Any) -> None:
        """Measure an event; first, the snapshots due before its time."""
        tap = self.tap
        now = tap.when(event)
        if now is not None:
            if self.next is None:
                tap.tick(now)
                self.next = now + self.interval
            while now >= self.next:
                self._take(self.next)
                self.next += self.interval
        tap.add(event)

    def _take(self, at: int) -> None:
        tap, counters = self.tap, self.counters
        tap.tick(at)
        tap.capture(counters.packets, counters.bytes, 0, at)
        self.snapshots.append(tap.snapshot(at))

    def close(self) -> None:
        """The capture is over: its last window and snapshot, and the file."""
        from kdissect.metrics.prometheus import write

        tap = self.tap
        end = max(tap.now, self.counters.last_ts or 0)
        if end:
            tap.close_window(end)
            self._take(end)
        try:
            with self.stream:
                write(self.snapshots, self.stream)
        except OSError as exc:
            raise UserError(f"--metrics {self.path}: {exc.strerror or exc}") from None
