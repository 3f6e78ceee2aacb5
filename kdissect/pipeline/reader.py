"""Reading one settled range of a capture into rows: one row per connection key, its packets in one blob.

The capture readers are the CLI's own (`CaptureFile`, `PcapReader`, `PcapngReader`): a range after the first
is handed to them behind a prefix (the pcap header, or the pcapng blocks in force there) with its offsets set
to the file's, so packets carry the same offsets, and with `index_base` the same numbers, as in the CLI.

Each range also yields one row of key ``D`` holding what its reader found odd about the file (the CLI reports
these once per file; the core stage adds up the ranges' counts).
"""

from __future__ import annotations

import json
import os
import re
from typing import BinaryIO, Callable, Iterator, NamedTuple

from kdissect.capture.chunked import ChunkedInput
from kdissect.capture.oddities import Oddities
from kdissect.capture.pcap import PcapReader
from kdissect.capture.pcapng import PcapngReader
from kdissect.capture.source import STREAM_ERRORS, CaptureError, CaptureFile
from kdissect.pipeline.flows import flow_key, pack
from kdissect.pipeline.splits import Split

FILE_DIAGNOSTICS = b"D"
FLUSH_BYTES = 64 << 20
"""A range's rows are emitted when this much is held: compressed files are read whole, at any size."""


class Row(NamedTuple):
    file_id: int
    key: bytes
    split: int
    chunk: int
    first_index: int
    packets: int
    blob: bytes


class Tally:
    """What reading saw, for the summary."""

    __slots__ = ("packets", "shipped", "bytes")

    def __init__(self) -> None:
        self.packets = 0
        self.shipped = 0
        self.bytes = 0


def open_path(path: str) -> BinaryIO:
    """A local path, or any URI pyarrow's file systems open (s3://, gs://, hdfs://, file://)."""
    if "://" not in path or path.startswith("file://"):
        local = path[7:] if path.startswith("file://") else path
        return open(local, "rb")
    from pyarrow import fs

    uri = "s3://" + path[len("s3a://") :] if path.startswith("s3a://") else path
    filesystem, inner = fs.FileSystem.from_uri(uri)
    return filesystem.open_input_file(inner)


_PACKET_NUMBER = re.compile(r"(inside packet )(\d+)")


def oddities_json(odd: Oddities, index_base: int = 0) -> bytes:
    """An Oddities' entries, to add up across ranges. A range's reader counts packets from 1: a message that
    names a packet number gets the file's number (the readers take no first number; see docs/pipeline.md)."""
    entries = []
    for code, (message, offset, severity, times) in odd._seen.items():
        if index_base:
            message = _PACKET_NUMBER.sub(lambda m: m.group(1) + str(int(m.group(2)) + index_base), message)
        entries.append([code, message, offset, severity, times])
    return json.dumps(entries).encode()


def merge_oddities(blobs: list[bytes]) -> Oddities:
    """The ranges' entries added up: counts summed, the first range's message and offset kept."""
    odd = Oddities()
    for blob in blobs:
        for code, message, offset, severity, times in json.loads(blob):
            entry = odd._seen.get(code)
            if entry is None:
                odd._seen[code] = [message, offset, severity, times]
            else:
                entry[3] += times
    return odd


class Bounded:
    """A file that ends at `stop`: a range's reader meets the end of its data there and finishes as it would
    at the end of a file (its end-of-file tallies included), instead of being abandoned mid-loop."""

    def __init__(self, raw: BinaryIO, stop: int) -> None:
        self._raw = raw
        self._stop = stop

    def read(self, size: int = -1) -> bytes:
        left = self._stop - self._raw.tell()
        if left <= 0:
            return b""
        return self._raw.read(left if size is None or size < 0 else min(size, left))

    read1 = read

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        self._raw.close()


def _packets(split: Split, raw: BinaryIO, name: str) -> tuple[Iterator, Callable[[], Oddities]]:
    """The range's packets and, once they are read, what was odd."""
    if split.stop is not None:
        raw = Bounded(raw, split.stop)  # type: ignore[assignment]
    if split.whole or split.ordinal == 0:
        capture = CaptureFile(raw, name)
        return capture.packets(), lambda: capture._odd
    raw.seek(split.first)
    odd = Oddities()
    inp = ChunkedInput(raw, split.prefix, STREAM_ERRORS)
    if split.prefix[:4] == b"\x0a\x0d\x0d\x0a":
        reader: PcapReader | PcapngReader = PcapngReader(inp, odd)
    else:
        inp.fill(24)
        reader = PcapReader(inp, odd)
    inp.base = split.first - len(split.prefix)
    return reader.packets(), lambda: odd


def read_split(split: Split, opener: Callable[[str], BinaryIO] = open_path, tally: Tally | None = None) -> Iterator[Row]:
    """Rows of (file, key, range, chunk) with their packets packed, then the range's file-diagnostics row."""
    tally = tally or Tally()
    name = os.path.basename(split.path.rstrip("/")) or split.path
    raw = opener(split.path)
    try:
        try:
            packets, oddities = _packets(split, raw, name)
        except CaptureError as exc:
            yield _diagnostic_row(split, [["capture.unreadable", str(exc), 0, "error", 1]])
            return
        except (OSError, EOFError, ValueError) as exc:
            yield _diagnostic_row(split, [["capture.unreadable", f"{name}: cannot read: {exc}", 0, "error", 1]])
            return
        groups: dict[bytes, list] = {}
        tally.packets = 0
        held = 0
        chunk = 0
        stop = split.stop
        base = split.index_base
        for packet in packets:
            if stop is not None and packet.offset >= stop:
                break
            tally.packets += 1
            key = flow_key(packet.linktype, packet.data)
            if key is None:
                continue
            index = base + packet.index
            group = groups.get(key)
            if group is None:
                groups[key] = group = [index, 0, []]
            group[1] += 1
            part = pack(packet, index)
            group[2].append(part)
            held += len(part)
            if held >= FLUSH_BYTES:
                yield from _flush(split, groups, chunk, tally)
                groups, held, chunk = {}, 0, chunk + 1
        yield from _flush(split, groups, chunk, tally)
        odd = oddities()
        yield Row(split.file_id, FILE_DIAGNOSTICS, split.ordinal, 0, 0, tally.packets, oddities_json(odd, split.index_base))
    finally:
        raw.close()


def _flush(split: Split, groups: dict[bytes, list], chunk: int, tally: Tally) -> Iterator[Row]:
    for key, (first, count, parts) in groups.items():
        blob = b"".join(parts)
        tally.shipped += count
        tally.bytes += len(blob)
        yield Row(split.file_id, key, split.ordinal, chunk, first, count, blob)


def _diagnostic_row(split: Split, entries: list) -> Row:
    return Row(split.file_id, FILE_DIAGNOSTICS, split.ordinal, 0, 0, 0, json.dumps(entries).encode())
