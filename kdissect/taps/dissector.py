"""The core with several captures in front of it: what `Dissector` offers the drivers (feed, settle, run,
counters, add_tls_keylog), with the taps' packets joined before it (joined.py) and its events told with their
taps and timed on each (vantage.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from kdissect.capture.packet import Packet
from kdissect.dissector import Dissector, drive
from kdissect.limits import Limits
from kdissect.taps.joined import Joiner
from kdissect.taps.vantage import Vantages


class TappedDissector:
    def __init__(self, core: Dissector, taps: tuple[str, ...], limits: Limits) -> None:
        self.core = core
        self.joiner = Joiner(limits)
        self.vantages = Vantages(taps)
        self.counters = core.counters

    def feed(self, packet: Packet) -> list[Any]:
        admitted = self.joiner.admit(packet)
        if admitted is None:  # a copy: the core needs nothing of it, but it may complete what waits for its tap
            counters = self.counters
            counters.packets += 1
            counters.bytes += packet.orig_len
            counters.last_ts = packet.ts
            return self.vantages.release(packet.ts)
        before = self.counters.connections
        events = self.core.feed(admitted)
        if self.counters.connections != before and self.joiner.last is not None:
            self.vantages.opened(self.counters.connections, self.joiner.last)
        return self.vantages.take(events, packet.ts)

    def add_tls_keylog(self, text: bytes) -> None:
        self.core.add_tls_keylog(text)

    def settle(self) -> Iterator[Any]:
        ts = self.counters.last_ts or 0
        for event in self.core.settle():
            yield from self.vantages.take([event], ts)
        yield from self.vantages.release(ts, everything=True)

    def finish(self) -> list[Any]:
        return list(self.settle())

    def run(self, packets: Iterable[Packet]) -> Iterator[Any]:
        return drive(self, packets)


def tapped(core: Dissector, source: Any, limits: Limits) -> Any:
    """The core as a driver of `source` needs it: joined and timed when `source` is several captures
    (capture/merge.py's `MergedCaptures`, which names its taps), itself for one."""
    taps = getattr(source, "taps", ())
    return TappedDissector(core, taps, limits) if len(taps) > 1 else core
