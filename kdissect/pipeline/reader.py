"""Reading one settled range of a capture into rows: one row per connection key, its packets in one blob.

The capture reader is the CLI's own: `CaptureFile` reads a range after the first from its first record, given
the pcap header or the pcapng blocks in force there, so packets carry the same offsets and numbers as in the
CLI.

Each range also yields one row of key ``D`` holding what its reader found odd about the file (the CLI reports
these once per file; the core stage adds up the ranges' counts).
"""

from __future__ import annotations

import json
import os
from dataclasses import astuple
from typing import BinaryIO, Callable, Iterator, NamedTuple

from kdissect.capture.oddities import Oddities, Oddity
from kdissect.capture.ranges import Split
from kdissect.capture.source import CaptureError, CaptureFile
from kdissect.net.flow_key import flow_key
from kdissect.pipeline.blobs import pack

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


def oddities_json(entries: list[Oddity]) -> bytes:
    """A range's oddities, to add up across ranges."""
    return json.dumps([astuple(o) for o in entries]).encode()


def merge_oddities(blobs: list[bytes]) -> Oddities:
    """The ranges' entries added up, in range order (see `Oddities.merge`)."""
    odd = Oddities()
    for blob in blobs:
        odd.merge(Oddity(*entry) for entry in json.loads(blob))
    return odd


def read_split(split: Split, opener: Callable[[str], BinaryIO] = open_path, tally: Tally | None = None) -> Iterator[Row]:
    """Rows of (file, key, range, chunk) with their packets packed, then the range's file-diagnostics row."""
    tally = tally or Tally()
    name = os.path.basename(split.path.rstrip("/")) or split.path
    raw = opener(split.path)
    try:
        try:
            capture = CaptureFile(raw, name, first=split.first, prefix=split.prefix, index_base=split.index_base, stop=split.stop)
        except CaptureError as exc:
            yield _diagnostic_row(split, [Oddity("capture.unreadable", str(exc), 0, "error", 1)])
            return
        except (OSError, EOFError, ValueError) as exc:
            yield _diagnostic_row(split, [Oddity("capture.unreadable", f"{name}: cannot read: {exc}", 0, "error", 1)])
            return
        groups: dict[bytes, list] = {}
        tally.packets = 0
        held = 0
        chunk = 0
        for packet in capture.packets():
            tally.packets += 1
            key = flow_key(packet.linktype, packet.data)
            if key is None:
                continue
            group = groups.get(key)
            if group is None:
                groups[key] = group = [packet.index, 0, []]
            group[1] += 1
            part = pack(packet)
            group[2].append(part)
            held += len(part)
            if held >= FLUSH_BYTES:
                yield from _flush(split, groups, chunk, tally)
                groups, held, chunk = {}, 0, chunk + 1
        yield from _flush(split, groups, chunk, tally)
        yield Row(split.file_id, FILE_DIAGNOSTICS, split.ordinal, 0, 0, tally.packets, oddities_json(capture.oddities()))
    finally:
        raw.close()


def _flush(split: Split, groups: dict[bytes, list], chunk: int, tally: Tally) -> Iterator[Row]:
    for key, (first, count, parts) in groups.items():
        blob = b"".join(parts)
        tally.shipped += count
        tally.bytes += len(blob)
        yield Row(split.file_id, key, split.ordinal, chunk, first, count, blob)


def _diagnostic_row(split: Split, entries: list[Oddity]) -> Row:
    return Row(split.file_id, FILE_DIAGNOSTICS, split.ordinal, 0, 0, 0, oddities_json(entries))
