"""Cutting captures into byte ranges that tasks read in parallel, and making sure the ranges tile the file.

Planning runs in two steps:

1. `probe` (driver) reads each file's head: its container, its header, its first records.
   Compressed files cannot be split: they are read whole by one task. So are files smaller than a split.
2. `index_range` (one task per range) finds the range's first record with `sync`, then walks record headers to
   the first record at or past the range's end: how many packets it owns, where its walk landed, and, for
   pcapng, the section and interface blocks it passed.

`settle` (driver) then checks that each range's walk lands exactly where the next range's first record is.
If so, each range gets its first record, where to stop, the number of packets before it (packet numbers are
the file's own, as in the CLI) and, for pcapng, the section and interface blocks in force where it starts.
If not (a corrupt record, a false sync), the file is read whole by one task: slower, never wrong.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import BinaryIO, Callable

from kdissect.capture import sync
from kdissect.capture.pcap import MAGICS as PCAP_MAGICS
from kdissect.capture.pcap import MAX_RECORD
from kdissect.capture.pcapng import EPB, IDB, MIN_LENGTH, PB, SECTION_BYTE_ORDER, SHB, SPB
from kdissect.capture.sync import PcapRules

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
COMPRESSED = (GZIP_MAGIC, ZSTD_MAGIC, LZ4_MAGIC)
DEFAULT_SPLIT = 64 << 20
HEAD = 1 << 16
"""Bytes the probe reads from each file."""
LOOKAHEAD = 2 << 20
"""Bytes past a range's end a task reads to tell a chain that starts just before the end: four records of
tcpdump's largest snapshot length fit."""


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """One input file as the planner sees it."""

    file_id: int
    path: str
    """What tasks open: an absolute local path or a URI."""
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
    """Offset of its first record (a settled range); 0 for a whole file."""
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


def probe(file_id: int, path: str, raw: BinaryIO, size: int, split_size: int = DEFAULT_SPLIT) -> CaptureInfo:
    """Look at a file's head and decide how it is read."""
    head = raw.read(HEAD)
    magic = head[:4]
    if any(magic.startswith(m) for m in COMPRESSED):
        return CaptureInfo(file_id, path, size, "whole")
    if magic in PCAP_MAGICS and len(head) >= 24:
        order, frac_ns = PCAP_MAGICS[magic]
        snaplen = struct.unpack_from(order + "I", head, 16)[0]
        first = []
        pos = 24
        while len(first) < 8 and pos + 16 <= len(head):
            record = struct.unpack_from(order + "IIII", head, pos)
            first.append(record)
            pos += 16 + record[2]
        rules = PcapRules.for_file(order, 1_000_000_000 // frac_ns, snaplen, first)
        kind = "pcap" if size > split_size else "whole"
        return CaptureInfo(file_id, path, size, kind, head[:24], order, rules)
    if magic == PCAPNG_MAGIC and len(head) >= 12:
        order = SECTION_BYTE_ORDER.get(head[8:12], ">")
        return CaptureInfo(file_id, path, size, "pcapng" if size > split_size else "whole", b"", order)
    if not magic:
        return CaptureInfo(file_id, path, size, "skip")
    return CaptureInfo(file_id, path, size, "skip" if magic not in PCAP_MAGICS else "whole")


def ranges(info: CaptureInfo, split_size: int = DEFAULT_SPLIT) -> list[Split]:
    """The planned byte ranges of a file (one whole one unless it is splittable)."""
    if info.kind not in ("pcap", "pcapng"):
        return [Split(info.file_id, info.path, 0, 0, info.size, whole=True)]
    out = []
    for ordinal, start in enumerate(range(0, info.size, split_size)):
        out.append(Split(info.file_id, info.path, ordinal, start, min(start + split_size, info.size)))
    return out


class _Window:
    """Bytes of a file from `base`, loaded as far as asked."""

    def __init__(self, raw: BinaryIO, base: int) -> None:
        raw.seek(base)
        self.raw = raw
        self.base = base
        self.buf = bytearray()
        self.eof = False

    def load(self, upto: int) -> None:
        """Make the bytes up to file offset `upto` present (fewer at the end of the file)."""
        while not self.eof and self.base + len(self.buf) < upto:
            more = self.raw.read(max(upto - self.base - len(self.buf), 1 << 20))
            if not more:
                self.eof = True
            self.buf += more

    def forget_before(self, pos: int) -> None:
        """Keep the window small while a walk moves on: drop what lies more than LOOKAHEAD before `pos`,
        8 MiB at a time so that the copy stays rare."""
        if pos - self.base > (8 << 20) + LOOKAHEAD:
            drop = pos - self.base - LOOKAHEAD
            del self.buf[:drop]
            self.base += drop


def index_range(info: CaptureInfo, split: Split, raw: BinaryIO) -> RangeIndex:
    """Find a range's first record and walk its records (see the module docstring)."""
    if info.kind == "pcap":
        return _index_pcap(info, split, raw)
    return _index_pcapng(info, split, raw)


def _find(window: _Window, split: Split, finder: Callable[..., int | None]) -> int | None:
    """The first record offset in [split.start, split.end): a chain that starts before the end may run up to
    LOOKAHEAD past it. None when no record starts inside the range (or a chain cannot be told from what is
    there: the previous range's walk then does not line up with the next, and the file is read whole)."""
    window.load(split.end + LOOKAHEAD)
    view = memoryview(window.buf)
    try:
        found = finder(view, 0, window.eof, limit=split.end - window.base)
    finally:
        view.release()
    return None if found is None else found + window.base


def _index_pcap(info: CaptureInfo, split: Split, raw: BinaryIO) -> RangeIndex:
    rules = info.rules
    assert rules is not None
    window = _Window(raw, split.start)
    if split.ordinal == 0:
        first: int | None = 24
    else:
        first = _find(window, split, lambda buf, start, eof, limit: sync.find_pcap_sync(rules, buf, start, eof, limit=limit))
    if first is None:
        return RangeIndex(None)
    unpack = struct.Struct(rules.order + "II").unpack_from
    pos, count = first, 0
    stopped = None
    while pos < split.end:
        window.load(pos + 16)
        rel = pos - window.base
        if rel + 16 > len(window.buf):
            if rel < len(window.buf):
                stopped = "truncated"
            break
        incl = unpack(window.buf, rel + 8)[0]
        if incl > MAX_RECORD and rel + 16 + incl > len(window.buf):
            stopped = "corrupt"
            break
        window.load(pos + 16 + incl)
        if rel + 16 + incl > len(window.buf):
            stopped = "truncated"
            break
        count += 1
        pos += 16 + incl
        window.forget_before(pos)
    return RangeIndex(first, pos, stopped, [count])


def _index_pcapng(info: CaptureInfo, split: Split, raw: BinaryIO) -> RangeIndex:
    order = info.order
    window = _Window(raw, split.start)
    if split.ordinal == 0:
        first: int | None = 0
    else:
        first = _find(window, split, lambda buf, start, eof, limit: sync.find_pcapng_sync(order, buf, start, window.base, eof, limit=limit))
    if first is None:
        return RangeIndex(None)
    if split.ordinal:
        window.load(first + 12)
        order = sync.pcapng_order(order, window.buf, first - window.base)
    header = struct.Struct(order + "II")
    events: list = []
    counts: dict[int, int] = {}
    pos = first
    stopped = None
    while pos < split.end:
        window.load(pos + 12)
        rel = pos - window.base
        if rel + 8 > len(window.buf):
            if rel < len(window.buf):
                stopped = "truncated"
            break
        block_type = struct.unpack_from("<I", window.buf, rel)[0]
        if block_type == SHB and rel + 12 <= len(window.buf):
            section_order = SECTION_BYTE_ORDER.get(bytes(window.buf[rel + 8 : rel + 12]))
            if section_order is None:
                stopped = "corrupt"
                break
            order = section_order
            header = struct.Struct(order + "II")
        block_type, length = header.unpack_from(window.buf, rel)
        if length < 12 or length % 4 or length > sync.MAX_BLOCK:
            stopped = "corrupt"
            break
        window.load(pos + length)
        if rel + length > len(window.buf):
            stopped = "truncated"
            break
        if block_type in (SHB, IDB):
            if counts:
                events.append(("packets", counts))
                counts = {}
            events.append(("shb" if block_type == SHB else "idb", bytes(window.buf[rel : rel + length])))
        elif block_type in (EPB, PB, SPB) and length >= MIN_LENGTH[block_type]:
            if block_type == EPB:
                iface = struct.unpack_from(order + "I", window.buf, rel + 8)[0]
            elif block_type == PB:
                iface = struct.unpack_from(order + "H", window.buf, rel + 8)[0]
            else:
                iface = 0
            counts[iface] = counts.get(iface, 0) + 1
        pos += length
        window.forget_before(pos)
    if counts:
        events.append(("packets", counts))
    return RangeIndex(first, pos, stopped, events)


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
        out.append(replace(split, first=index.sync, stop=stop, index_base=base, prefix=prefix))
        base += count
    return out, base
