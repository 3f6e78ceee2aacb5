"""Several captures read as one, merged by time as mergecap merges them: each packet in turn from the capture whose
next packet is the earliest (the first capture named first among equals), numbered anew, and marked with the
capture it came from (`Packet.tap`). Each capture is streamed: the merge holds one packet of each.

A capture file's name may be a glob (`kdissect read 'broker-*.pcap'`, quoted so the shell leaves it), expanded here
in name order, so it works where the shell does not expand it.
"""

from __future__ import annotations

import glob
import heapq
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from kdissect.capture.packet import Packet
from kdissect.capture.source import STDIN, CaptureError, CaptureFile, open_capture
from kdissect.diagnostic import Diagnostic

GLOB_CHARACTERS = frozenset("*?[")


def expand(names: list[str]) -> list[str]:
    """The capture files `names` say: globs expanded (in name order), standard input only alone; CaptureError names
    a glob that matches nothing."""
    found: list[str] = []
    for name in names:
        if GLOB_CHARACTERS & set(name) and not os.path.exists(name):
            matches = sorted(glob.glob(name))
            if not matches:
                raise CaptureError(f"{name}: no file matches")
            found += matches
        else:
            found.append(name)
    if STDIN in found and len(found) > 1:
        raise CaptureError("standard input (-) is read alone, not merged with other captures")
    return found


class MergedCaptures:
    """What `CaptureFile` is to one capture (its packets, diagnostics, progress), for several at once."""

    def __init__(self, captures: list[CaptureFile]) -> None:
        self.captures = captures
        self.taps = tuple(capture.name for capture in captures)
        """The captures' names, in the order given: a packet's `tap` indexes them."""
        self.name = " + ".join(self.taps)
        formats = sorted({capture.format for capture in captures})
        self.format = "+".join(formats)
        compressions = sorted({c.compression for c in captures if c.compression})
        self.compression = "+".join(compressions) or None

    def packets(self) -> Iterator[Packet]:
        index = 0
        for packet in heapq.merge(*(self._tapped(n, c) for n, c in enumerate(self.captures)), key=lambda p: (p.ts, p.tap)):
            index += 1
            yield packet._replace(index=index)

    @staticmethod
    def _tapped(tap: int, capture: CaptureFile) -> Iterator[Packet]:
        for packet in capture.packets():
            yield packet._replace(tap=tap)

    def linktypes(self) -> list[int]:
        return list(dict.fromkeys(t for capture in self.captures for t in capture.linktypes()))

    def stops_when(self, stopped: Callable[[], bool]) -> None:
        for capture in self.captures:
            capture.stops_when(stopped)

    def secrets_to(self, callback: Callable[[bytes], None]) -> None:
        for capture in self.captures:
            capture.secrets_to(callback)

    def diagnostics(self) -> list[Diagnostic]:
        """Each capture's, its message led by the capture's name (offsets are within that capture)."""
        return [replace(d, message=f"{c.name}: {d.message}") for c in self.captures for d in c.diagnostics()]

    def progress(self) -> tuple[int, int]:
        done = total = 0
        for capture in self.captures:
            d, t = capture.progress()
            done, total = done + d, total + t
        return done, total

    def close(self) -> None:
        for capture in self.captures:
            capture.close()

    def __enter__(self) -> MergedCaptures:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_captures(names: list[str]) -> CaptureFile | MergedCaptures:
    """One capture as `open_capture` opens it, several (or a glob) merged; CaptureError names what is wrong."""
    paths = expand(names)
    if len(paths) == 1:
        return open_capture(paths[0])
    opened: list[CaptureFile] = []
    try:
        for path in paths:
            opened.append(open_capture(path))
    except CaptureError:
        for capture in opened:
            capture.close()
        raise
    return MergedCaptures(opened)
