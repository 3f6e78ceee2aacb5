"""Classic pcap files: microsecond or nanosecond timestamps, either byte order."""

from __future__ import annotations

import struct
from typing import Iterator

from kdissect.capture.chunked import ChunkedInput
from kdissect.capture.oddities import Oddities
from kdissect.capture.packet import Packet

MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000),
    b"\xa1\xb2\xc3\xd4": (">", 1000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
"""File magic -> (byte order, nanoseconds per timestamp fraction unit)."""

MAX_RECORD = 64 << 20
"""A record claiming more than this is corrupt: no link layer carries such frames."""


class PcapReader:
    format = "pcap"

    def __init__(self, inp: ChunkedInput, oddities: Oddities, index_base: int = 0) -> None:
        order, self._frac_ns = MAGICS[bytes(inp.buf[inp.pos : inp.pos + 4])]
        major, minor, _zone, _sigfigs, self.snaplen, linktype = struct.unpack_from(order + "HHiIII", inp.buf, inp.pos + 4)
        self.version = f"{major}.{minor}"
        self.linktype = linktype & 0x0FFFFFFF
        """The upper bits hold FCS flags in newer files."""
        self._record = struct.Struct(order + "IIII")
        inp.pos += 24
        self._inp = inp
        self._odd = oddities
        self._index_base = index_base
        """Packets before the first one read: a reader started inside a file numbers packets as the file does."""

    def linktypes(self) -> list[int]:
        return [self.linktype]

    def packets(self) -> Iterator[Packet]:
        inp = self._inp
        new = tuple.__new__  # a NamedTuple's own constructor costs 0.8 µs; this, 0.1
        unpack = self._record.unpack_from
        frac_ns = self._frac_ns
        linktype = self.linktype
        buf, pos, base = inp.buf, inp.pos, inp.base
        index = self._index_base
        over_orig = backwards = 0
        first_over = first_back = None
        last_ts = 0
        while True:
            if len(buf) - pos < 16:
                inp.pos = pos
                if not inp.fill(16):
                    if inp.remaining():
                        self._odd.add("pcap.truncated", "the file ends inside a record header", inp.offset, "error")
                    break
                buf, pos, base = inp.buf, inp.pos, inp.base
            sec, frac, incl, orig = unpack(buf, pos)
            end = pos + 16 + incl
            if end > len(buf):
                if incl > MAX_RECORD:
                    self._odd.add(
                        "pcap.corrupt-record",
                        f"a record claims {incl} bytes; the rest of the file cannot be trusted",
                        base + pos,
                        "error",
                    )
                    break
                inp.pos = pos
                if not inp.fill(16 + incl):
                    self._odd.add(
                        "pcap.truncated",
                        f"the file ends inside packet {index + 1} ({inp.remaining() - 16} of {incl} bytes present)",
                        inp.offset,
                        "error",
                    )
                    break
                buf, pos, base = inp.buf, inp.pos, inp.base
                end = pos + 16 + incl
            index += 1
            ts = sec * 1_000_000_000 + frac * frac_ns
            if incl > orig:
                over_orig += 1
                first_over = first_over if first_over is not None else base + pos
                orig = incl
            if ts < last_ts:
                backwards += 1
                first_back = first_back if first_back is not None else base + pos
            last_ts = ts
            yield new(Packet, (ts, linktype, buf[pos + 16 : end], orig, index, base + pos))
            pos = end
        self._odd.count(
            "pcap.caplen-exceeds-origlen",
            over_orig,
            "a record's captured length exceeds its original length; the captured length was used",
            first_over,
        )
        self._odd.count("capture.time-backwards", backwards, "a packet's timestamp is earlier than the one before", first_back)
