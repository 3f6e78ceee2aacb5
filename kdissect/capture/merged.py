"""Several capture files read as one, their packets merged by time as `mergecap` merges them: the captures of one
incident taken on several hosts, or a capture rotated into files (`tcpdump -C`/`-G`).

Packets are numbered again in the merged order (as in mergecap's output file) and carry no file offset; each file
still streams in constant memory, and what was odd about a file is told with its name.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace

from kdissect.capture.packet import Packet
from kdissect.capture.source import CaptureError, CaptureFile, open_capture
from kdissect.diagnostic import Diagnostic

_ts: Callable[[Packet], int] = lambda packet: packet.ts


class MergedCaptures:
    """The same face as a `CaptureFile` for a run: name, format, packets, secrets, diagnostics, progress."""

    def __init__(self, names: list[str]) -> None:
        if "-" in names:
            raise CaptureError("standard input cannot be merged with other captures: give files")
        self._stack = ExitStack()
        with ExitStack() as stack:
            self.files: list[CaptureFile] = [stack.enter_context(open_capture(name)) for name in names]
            self._stack = stack.pop_all()
        self.name = " + ".join(names)
        formats = {f.format for f in self.files}
        self.format = formats.pop() if len(formats) == 1 else "mixed"
        compressions = {f.compression for f in self.files} - {None}
        self.compression = ", ".join(sorted(c for c in compressions if c)) or None

    def stops_when(self, stopped: Callable[[], bool]) -> None:
        """Each file's long searches over corrupt bytes ask `stopped` too."""
        for file in self.files:
            file.stops_when(stopped)

    def packets(self) -> Iterator[Packet]:
        merged = heapq.merge(*(f.packets() for f in self.files), key=_ts)
        for index, packet in enumerate(merged, 1):
            yield Packet(packet.ts, packet.linktype, packet.data, packet.orig_len, index)

    def linktypes(self) -> list[int]:
        return sorted({linktype for f in self.files for linktype in f.linktypes()})

    def secrets_to(self, callback: Callable[[bytes], None]) -> None:
        for f in self.files:
            f.secrets_to(callback)

    def diagnostics(self) -> list[Diagnostic]:
        return [replace(d, message=f"{f.name}: {d.message}") for f in self.files for d in f.diagnostics()]

    def progress(self) -> tuple[int, int]:
        done = total = 0
        for f in self.files:
            read, size = f.progress()
            done += read
            total += size
        return done, total

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> MergedCaptures:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_captures(names: list[str]) -> CaptureFile | MergedCaptures:
    """One capture as it is, several merged by time; CaptureError names the first that cannot be read."""
    return open_capture(names[0]) if len(names) == 1 else MergedCaptures(names)
