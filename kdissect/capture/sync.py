"""Where the next record of a capture starts, told from the bytes alone: the record plausibility tests.

A byte range of a capture (capture/ranges.py) begins at an arbitrary byte, and a reader that meets a corrupt
record header has lost its place in the same way. Either finds its next record as the first offset at which
several consecutive record headers are each plausible and chain exactly (each one's length leads to the
next), or the chain reaches the end of the data exactly. Pure functions over whatever window of the file the
caller holds (`eof` says whether it ends where the file does), so tests can run them on any capture.

A false negative (a real record rejected) costs a range nothing: the range before reads on until it reaches
the offset the next one starts at. A false positive (a header found inside a packet's bytes) is caught by the
planner: the previous range's own walk then does not land on it, and the file is read whole instead.
"""

from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass

from kdissect.capture.pcapng import EPB, KNOWN_SKIPPED, MAX_BLOCK, MIN_LENGTH, SECTION_BYTE_ORDER, SHB

MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000),
    b"\xa1\xb2\xc3\xd4": (">", 1000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
"""A pcap file's magic -> (byte order, nanoseconds per timestamp fraction unit)."""
PCAP_HEADER = 16
CHAIN = 4
"""Consecutive plausible headers a split's first record needs (fewer only where the data ends)."""
MAX_SNAPLEN = 262144
"""tcpdump's default; files that say snaplen 0 or something larger are held to this."""
MAX_ORIG = 16 << 20
"""No link carries a frame longer than this, TSO and BIG TCP included."""
MAX_SKEW_S = 400 * 86400
"""How far a record's time may lie from the file's first record: captures last days, not years."""
MAX_STEP_S = 86400
"""How far consecutive records' times may lie apart."""
ZERO_BLOCK = bytes(1 << 16)
"""A stretch of this many zero bytes holds no record start but near its end: a header there claims 0 bytes."""


@dataclass(frozen=True, slots=True)
class PcapRules:
    """What a plausible record header of one pcap file looks like."""

    order: str
    """struct byte order: "<" or ">"."""
    frac_limit: int
    """1_000_000 for microsecond files, 1_000_000_000 for nanosecond ones."""
    snaplen: int
    """The largest captured length believed."""
    strict_orig: bool = True
    """Require captured length <= original length; False for writers that break that on every record."""
    first_sec: int | None = None
    """The first record's seconds: every record's time must lie near it."""

    @classmethod
    def from_head(cls, head: bytes) -> PcapRules:
        """Rules for a file, from its first bytes: the file header (24 bytes at least) and the record headers
        that follow in `head`, whose own habits are believed (a writer that sets captured > original length
        on every record, a captured length above the snapshot length). Habits are learnt only from records
        that chain plausibly: when the first record header is itself corrupt, from where records chain under
        the file header's own rules, so one bad header does not teach rules that reject every good one."""
        order, frac_ns = MAGICS[head[:4]]
        snaplen = struct.unpack_from(order + "I", head, 16)[0]
        limit = snaplen if 0 < snaplen <= MAX_SNAPLEN else MAX_SNAPLEN
        base = cls(order, 1_000_000_000 // frac_ns, limit)
        first_records = _believed(base, head, 24)
        if not first_records:
            start = find_pcap_sync(base, head, 25, eof=False)
            first_records = _believed(base, head, start) if start is not None else []
        limit = max([limit] + [incl for _, _, incl, _ in first_records])
        strict = all(incl <= orig for _, _, incl, orig in first_records)
        first = first_records[0][0] if first_records else None
        return cls(order, base.frac_limit, limit, strict, first)


def _believed(rules: PcapRules, head: bytes, pos: int) -> list[tuple[int, int, int, int]]:
    """Up to 8 record headers from `pos` whose sizes and times are believable, as far as they chain."""
    unpack = struct.Struct(rules.order + "IIII").unpack_from
    out: list[tuple[int, int, int, int]] = []
    while len(out) < 8 and pos + PCAP_HEADER <= len(head):
        sec, frac, incl, orig = record = unpack(head, pos)
        if frac >= rules.frac_limit or not 0 < incl <= MAX_ORIG or orig > MAX_ORIG:
            break
        if out and abs(sec - out[-1][0]) > MAX_STEP_S:
            break
        out.append(record)
        pos += PCAP_HEADER + incl
    return out


def pcap_plausible(rules: PcapRules, sec: int, frac: int, incl: int, orig: int) -> bool:
    """One record header on its own: sizes, sub-second field, time near the file's start."""
    if frac >= rules.frac_limit or incl == 0 or incl > rules.snaplen or orig > MAX_ORIG:
        return False
    if rules.strict_orig and incl > orig:
        return False
    return rules.first_sec is None or abs(sec - rules.first_sec) <= MAX_SKEW_S


def pcap_chain(rules: PcapRules, buf: bytes | memoryview, pos: int, eof: bool, need: int = CHAIN) -> bool | None:
    """Whether `need` plausible headers chain from `pos` in `buf`; None when `buf` ends before that can be told.

    With `eof`, `buf` ends where the file does, and a chain that ends exactly there is enough.
    """
    unpack = struct.Struct(rules.order + "IIII").unpack_from
    size = len(buf)
    last_sec = None
    for _ in range(need):
        if pos == size and eof:
            return last_sec is not None
        if pos + PCAP_HEADER > size:
            return False if eof else None
        sec, frac, incl, orig = unpack(buf, pos)
        if not pcap_plausible(rules, sec, frac, incl, orig):
            return False
        if last_sec is not None and abs(sec - last_sec) > MAX_STEP_S:
            return False
        last_sec = sec
        pos += PCAP_HEADER + incl
        if pos > size and eof:
            return False
    return True


def find_pcap_sync(
    rules: PcapRules, buf: bytes | memoryview, start: int, eof: bool, need: int = CHAIN, limit: int | None = None
) -> int | None:
    """The first offset in [start, limit) of `buf` where a record chain starts; None if there is none, or if
    `buf` ends before one can be told.

    Runs at the speed of the regular expression engine, not of a Python loop over offsets: stretches of zeros
    are passed over a block at a time, and elsewhere `header_shape` finds the offsets whose bytes could make a
    plausible header, the only ones `pcap_chain` is asked about."""
    data = buf if isinstance(buf, bytes) else bytes(buf)
    size = len(data)
    end = size - PCAP_HEADER + 1 if not eof else size
    stop = end if limit is None else min(end, limit)
    shape, anchor = header_shape(rules)
    pos = max(start, 0)
    while pos < stop:
        block = min(pos + len(ZERO_BLOCK), stop)
        if data.count(0, pos, block) == block - pos and block - pos > PCAP_HEADER:
            pos = block - PCAP_HEADER  # a header starting later may reach past the zeros
            continue
        found = shape.search(data, pos + anchor, min(size, block + PCAP_HEADER))
        while found is not None and found.start() - anchor < block:
            at = found.start() - anchor
            chained = pcap_chain(rules, data, at, eof, need)
            if chained:
                return at
            if chained is None:
                return None
            found = shape.search(data, found.start() + 1, min(size, block + PCAP_HEADER))
        pos = block
    return None


def _byte_range(lo: int, hi: int) -> bytes:
    """A regular expression character class of the byte values lo..hi."""
    return b"[" + re.escape(bytes([lo])) + b"-" + re.escape(bytes([hi])) + b"]"


@functools.lru_cache(maxsize=16)
def header_shape(rules: PcapRules) -> tuple[re.Pattern[bytes], int]:
    """A pattern of what the most significant bytes of a plausible record header must be under `rules`, and the
    offset in the header where its matches start: at the captured length's top byte, a zero, so that the engine
    looks for one byte value (a tenth of the time it takes to test every offset) and checks the bytes before it
    by a lookbehind.

    Each field's top byte within its range: the sub-second field below its limit (and its second byte, in a
    microsecond file), the captured length at most the snapshot length and not zero, the original length at most
    `MAX_ORIG`, the seconds near the first record's when that is known. Necessary, not sufficient: `pcap_chain`
    decides."""
    frac = _byte_range(0, (rules.frac_limit - 1) >> 24)
    frac_second = _byte_range(0, (rules.frac_limit - 1) >> 16 & 0xFF) if rules.frac_limit <= 1 << 24 else b"."
    sec = b"."
    if rules.first_sec is not None:
        sec = _byte_range(max(0, rules.first_sec - MAX_SKEW_S) >> 24, min(0xFFFFFFFF, rules.first_sec + MAX_SKEW_S) >> 24)
    orig = _byte_range(0, MAX_ORIG >> 24)
    little = rules.order == "<"
    if rules.snaplen >= 1 << 24:  # a learnt snapshot length so large that the top byte may be 1: no zero to look for
        incl = _byte_range(0, rules.snaplen >> 24)
        nonzero = b"(?s)(?!.{8}\\x00\\x00\\x00\\x00)"
        if little:  # sec 0-3, frac 4-7, incl 8-11, orig 12-15, each least significant byte first
            return re.compile(nonzero + b"..." + sec + b".." + frac_second + frac + b"..." + incl + b"..." + orig), 0
        return re.compile(nonzero + sec + b"..." + frac + frac_second + b".." + incl + b"..." + orig), 0
    low = b"(?:[^\\x00]..|.[^\\x00].|..[^\\x00])"  # the captured length's three low bytes, not all zero
    if rules.strict_orig:  # the original length is at least the captured one: not zero either
        orig = b"(?!\\x00\\x00\\x00\\x00)" + (b"..." + orig if little else orig)
    elif little:
        orig = b"..." + orig
    if little:
        return re.compile(b"(?s)\\x00(?<=" + sec + b".." + frac_second + frac + low + b"\\x00)" + orig), 11
    return re.compile(b"(?s)\\x00(?<=" + sec + b"..." + frac + frac_second + b"..\\x00)" + low + orig), 8


# pcapng


def pcapng_plausible(order: str, buf: bytes | memoryview, pos: int) -> int | None:
    """The length of a plausible block at `pos` (whole, with a matching trailing length), else None."""
    if pos + 12 > len(buf):
        return None
    block_type, length = struct.unpack_from(order + "II", buf, pos)
    if block_type not in MIN_LENGTH and block_type not in KNOWN_SKIPPED:
        return None
    if length < MIN_LENGTH.get(block_type, 12) or length % 4 or length > MAX_BLOCK or pos + length > len(buf):
        return None
    if struct.unpack_from(order + "I", buf, pos + length - 4)[0] != length:
        return None
    if block_type == EPB:
        caplen = struct.unpack_from(order + "I", buf, pos + 20)[0]
        if caplen > length - 32:
            return None
    elif block_type == SHB and bytes(buf[pos + 8 : pos + 12]) not in SECTION_BYTE_ORDER:
        return None
    return length


def pcapng_chain(order: str, buf: bytes | memoryview, pos: int, eof: bool, need: int = CHAIN) -> bool | None:
    """As `pcap_chain`, for pcapng blocks: each must carry its length at both ends."""
    size = len(buf)
    seen = 0
    for _ in range(need):
        if pos == size and eof:
            return seen > 0
        if pos + 12 > size:
            return False if eof else None
        if pos + 8 <= size:
            length = struct.unpack_from(order + "I", buf, pos + 4)[0]
            if pos + length > size and not eof and length <= MAX_BLOCK and length % 4 == 0:
                return None
        length = pcapng_plausible(order, buf, pos)
        if length is None:
            return False
        pos += length
        seen += 1
    return True


def find_pcapng_sync(
    order: str, buf: bytes | memoryview, start: int, base: int, eof: bool, need: int = CHAIN, limit: int | None = None
) -> int | None:
    """The first 4-aligned offset >= `start` where a block chain starts, in `order` or the other byte order;
    `base` is buf[0]'s file offset (blocks sit at file offsets that are multiples of 4)."""
    pos = start + (-(base + start) % 4)
    size = len(buf)
    orders = (order, ">" if order == "<" else "<")
    while (pos + 12 <= size or (eof and pos < size)) and (limit is None or pos < limit):
        undecided = False
        for each in orders:  # a later section may be in the other byte order
            found = pcapng_chain(each, buf, pos, eof, need)
            if found:
                return pos
            undecided = undecided or found is None
        if undecided:
            return None
        pos += 4
    return None


def pcapng_order(order: str, buf: bytes | memoryview, pos: int) -> str:
    """The byte order the block at `pos` reads in: `order` if it reads in it, else the other."""
    if pcapng_plausible(order, buf, pos) is not None:
        return order
    return ">" if order == "<" else "<"
