"""Cutting a capture into byte ranges that can be read in parallel, and making sure the ranges tile the file.

Pure code over files opened by the caller (the Spark job opens them through its file systems), in three steps:

1. `probe` reads a file's head: its container, its header, its first records. Compressed files cannot be
   split: they are read whole. So are files smaller than a range. `plan` cuts the others into ranges.
2. `index_range` (one call per range, each on its own) finds the range's first record with capture/sync.py,
   then walks record headers to the first record at or past the range's end: how many packets it owns, where
   its walk landed, and, for pcapng, the section and interface blocks it passed.
3. `settle` checks that each range's walk lands exactly where the next range's first record is. If so, each
   range gets its first record, where to stop, the number of packets before it (packet numbers are the
   file's own, as in the CLI) and, for pcapng, the section and interface blocks in force where it starts:
   what `CaptureFile` takes to read the range alone. If not (a corrupt record, a false sync), the file is read
   whole by one reader: slower, never wrong.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import BinaryIO

from kdissect.capture import sync
from kdissect.capture.chunked import ChunkedInput
from kdissect.capture.pcap import MAGICS as PCAP_MAGICS
from kdissect.capture.pcap import MAX_RECORD
from kdissect.capture.pcapng import EPB, IDB, MAX_BLOCK, MIN_LENGTH, PB, SECTION_BYTE_ORDER, SHB, SPB
from kdissect.capture.pcapng import MAGIC as PCAPNG_MAGIC
from kdissect.capture.source import compression_of
from kdissect.capture.sync import PCAP_HEADER, PcapRules

HEAD = 1 << 16
"""Bytes the probe reads from each file."""
LOOKAHEAD = 2 << 20
"""Bytes past a range's end read to tell a chain that starts just before the end: four records of tcpdump's
largest snapshot length fit."""


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """One input file as the planner sees it."""

    file_id: int
    path: str
    """What readers open: a local path or a URI."""
    size: int
    kind: str
    """"pcap" or "pcapng" (splittable), "whole" (compressed or small), "skip" (not a capture)."""
    header: bytes = b""
    """pcap: the 24-byte file header."""
    order: str = "<"
    """Byte order of a pcapng file's first section, for finding blocks."""
    rules: PcapRules | None = None


@dataclass(frozen=True, slots=True)
class Split:
    """A byte range of a capture and, once settled, exactly which records it owns."""

    file_id: int
    path: str
    ordinal: int
    start: int
    end: int
    whole: bool = False
    first: int = 0
    """Offset of its first record (a settled range after the first); 0: its reader starts at the file's start."""
    stop: int | None = None
    """It owns records before this offset; None: to the end of the file."""
    index_base: int = 0
    """Packets in the file before its first one."""
    prefix: bytes = b""
    """What the reader is given before `first`: the pcap header, or the pcapng blocks in force there."""


@dataclass(slots=True)
class RangeIndex:
    """What `index_range` found in one range."""

    sync: int | None
    """Its first record; None when no record starts inside it."""
    landing: int = 0
    """Offset of the first record at or past the range's end: where the next range must start."""
    stopped: str | None = None
    """Why the walk ended before the range did (a truncated or corrupt record), if it did."""
    counts: list = field(default_factory=list)
    """pcap: [packets]. pcapng: events in order, ("shb", bytes), ("idb", bytes), ("packets", {interface: n})."""


def probe(file_id: int, path: str, raw: BinaryIO, size: int, split_size: int) -> CaptureInfo:
    """Look at a file's head and decide how it is read."""
    head = raw.read(HEAD)
    magic = head[:4]
    if compression_of(magic):
        return CaptureInfo(file_id, path, size, "whole")
    if magic in PCAP_MAGICS and len(head) >= 24:
        rules = PcapRules.from_head(head)
        kind = "pcap" if size > split_size else "whole"
        return CaptureInfo(file_id, path, size, kind, head[:24], rules.order, rules)
    if magic == PCAPNG_MAGIC and len(head) >= 12:
        order = SECTION_BYTE_ORDER.get(head[8:12], ">")
        return CaptureInfo(file_id, path, size, "pcapng" if size > split_size else "whole", b"", order)
    if not magic:
        return CaptureInfo(file_id, path, size, "skip")
    return CaptureInfo(file_id, path, size, "skip" if magic not in PCAP_MAGICS else "whole")


def plan(info: CaptureInfo, split_size: int) -> list[Split]:
    """The planned byte ranges of a file (one whole one unless it is splittable)."""
    if info.kind not in ("pcap", "pcapng"):
        return [Split(info.file_id, info.path, 0, 0, info.size, whole=True)]
    out = []
    for ordinal, start in enumerate(range(0, info.size, split_size)):
        out.append(Split(info.file_id, info.path, ordinal, start, min(start + split_size, info.size)))
    return out


def index_range(info: CaptureInfo, split: Split, raw: BinaryIO) -> RangeIndex:
    """Find a range's first record and walk its records (see the module docstring)."""
    raw.seek(split.start)
    inp = ChunkedInput(raw, base=split.start)
    if split.ordinal == 0:
        first: int | None = 24 if info.kind == "pcap" else 0
    else:
        first = _first_record(info, split, inp)
    if first is None:
        return RangeIndex(None)
    inp.fill(first - inp.base)
    inp.pos = first - inp.base
    if info.kind == "pcap":
        assert info.rules is not None
        return _walk_pcap(inp, info.rules.order, split.end)
    order = info.order
    if split.ordinal:
        inp.fill(12)
        order = sync.pcapng_order(order, inp.buf, inp.pos)
    return _walk_pcapng(inp, order, split.end)


def _first_record(info: CaptureInfo, split: Split, inp: ChunkedInput) -> int | None:
    """The first record offset in [split.start, split.end): a chain that starts before the end may run up to
    LOOKAHEAD past it. None when no record starts inside the range (or a chain cannot be told from what is
    there: the previous range's walk then does not line up with the next, and the file is read whole)."""
    inp.fill(split.end + LOOKAHEAD - inp.base)
    limit = split.end - inp.base
    if info.kind == "pcap":
        assert info.rules is not None
        found = sync.find_pcap_sync(info.rules, inp.buf, 0, inp.eof, limit=limit)
    else:
        found = sync.find_pcapng_sync(info.order, inp.buf, 0, inp.base, inp.eof, limit=limit)
    return None if found is None else found + inp.base


def _walk_pcap(inp: ChunkedInput, order: str, end: int) -> RangeIndex:
    """Records from `inp`'s position to the first at or past `end`, by the rules `PcapReader` reads them."""
    first = inp.offset
    unpack = struct.Struct(order + "I").unpack_from
    count = 0
    stopped = None
    while inp.offset < end:
        if not inp.fill(PCAP_HEADER):
            if inp.remaining():
                stopped = "truncated"
            break
        incl = unpack(inp.buf, inp.pos + 8)[0]
        if incl > MAX_RECORD and PCAP_HEADER + incl > inp.remaining():
            stopped = "corrupt"
            break
        if not inp.fill(PCAP_HEADER + incl):
            stopped = "truncated"
            break
        count += 1
        inp.pos += PCAP_HEADER + incl
    return RangeIndex(first, inp.offset, stopped, [count])


def _walk_pcapng(inp: ChunkedInput, order: str, end: int) -> RangeIndex:
    """Blocks from `inp`'s position to the first at or past `end`, by the rules `PcapngReader` reads them."""
    first = inp.offset
    header = struct.Struct(order + "II")
    events: list = []
    counts: dict[int, int] = {}
    stopped = None
    while inp.offset < end:
        inp.fill(12)
        buf, pos = inp.buf, inp.pos
        if inp.remaining() < 8:
            if inp.remaining():
                stopped = "truncated"
            break
        block_type = struct.unpack_from("<I", buf, pos)[0]
        if block_type == SHB and inp.remaining() >= 12:
            section_order = SECTION_BYTE_ORDER.get(buf[pos + 8 : pos + 12])
            if section_order is None:
                stopped = "corrupt"
                break
            order = section_order
            header = struct.Struct(order + "II")
        block_type, length = header.unpack_from(buf, pos)
        if length < 12 or length % 4 or length > MAX_BLOCK:
            stopped = "corrupt"
            break
        if not inp.fill(length):
            stopped = "truncated"
            break
        buf, pos = inp.buf, inp.pos
        if block_type in (SHB, IDB):
            if counts:
                events.append(("packets", counts))
                counts = {}
            events.append(("shb" if block_type == SHB else "idb", buf[pos : pos + length]))
        elif block_type in (EPB, PB, SPB) and length >= MIN_LENGTH[block_type]:
            if block_type == EPB:
                iface = struct.unpack_from(order + "I", buf, pos + 8)[0]
            elif block_type == PB:
                iface = struct.unpack_from(order + "H", buf, pos + 8)[0]
            else:
                iface = 0
            counts[iface] = counts.get(iface, 0) + 1
        inp.pos += length
    if counts:
        events.append(("packets", counts))
    return RangeIndex(first, inp.offset, stopped, events)


def settle(info: CaptureInfo, planned: list[Split], found: list[RangeIndex]) -> tuple[list[Split], int | None]:
    """The ranges a file is read in, and its packet count (None when a range's walk went wrong: then one
    whole-file range, whose count is not known before reading)."""
    whole = [Split(info.file_id, info.path, 0, 0, info.size, whole=True)], None
    owned = [(split, index) for split, index in zip(planned, found) if index.sync is not None]
    for (_, a), (_, b) in zip(owned, owned[1:]):
        if a.stopped or a.landing != b.sync:
            return whole
    out = []
    base = 0
    interfaces: list[bytes] = []
    section: bytes = b""
    for i, (split, index) in enumerate(owned):
        stop = owned[i + 1][1].sync if i + 1 < len(owned) else None
        if info.kind == "pcap":
            prefix = b"" if split.ordinal == 0 else info.header
            count = index.counts[0]
        else:
            prefix = b"" if split.ordinal == 0 else section + b"".join(interfaces)
            count = 0
            for kind, value in index.counts:
                if kind == "shb":
                    section, interfaces = value, []
                elif kind == "idb":
                    interfaces.append(value)
                else:
                    count += sum(n for iface, n in value.items() if iface < len(interfaces))
            if split.ordinal != 0 and not section:
                return whole
        assert index.sync is not None  # owned holds the ranges where a record starts
        first = index.sync if split.ordinal else 0
        out.append(replace(split, first=first, stop=stop, index_base=base, prefix=prefix))
        base += count
    return out, base
