"""Classic pcap files: microsecond or nanosecond timestamps, either byte order.

A record header that cannot be right (a length past what the file's records are believed to hold, a sub-second
field out of range, a time far from the file's first record) costs that record alone: the reader finds the next
offset where plausible headers chain (capture/sync.py, the rules the Spark job's byte ranges use) and goes on.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from kdissect.capture.chunked import ChunkedInput
from kdissect.capture.oddities import Oddities
from kdissect.capture.packet import Packet
from kdissect.capture.sync import CHAIN, MAGICS, MAX_SKEW_S, PcapRules, find_pcap_sync, pcap_chain

__all__ = ["MAGICS", "MAX_RECORD", "PcapReader"]


MAX_RECORD = 64 << 20
"""A record claiming more than this is corrupt: no link layer carries such frames."""
RESYNC_WINDOW = 64 << 20
"""Bytes searched for the next plausible record after a corrupt header before the rest of the file is given up."""
SCAN_STEP = 1 << 20
"""Bytes searched between two looks at whether the run was asked to stop (`PcapReader.stopped`): a search of
crafted bytes runs at a few MB/s at worst (capture/sync.py), so Ctrl-C is answered within a second."""
HEAD = 1 << 16
"""Bytes of the file's start that say what its plausible record headers look like (`PcapRules.from_head`)."""


class PcapReader:
    format = "pcap"

    def __init__(self, inp: ChunkedInput, oddities: Oddities, index_base: int = 0) -> None:
        order, self._frac_ns = MAGICS[bytes(inp.buf[inp.pos : inp.pos + 4])]
        major, minor, _zone, _sigfigs, self.snaplen, linktype = struct.unpack_from(order + "HHiIII", inp.buf, inp.pos + 4)
        self.version = f"{major}.{minor}"
        self.linktype = linktype & 0x0FFFFFFF
        """The upper bits hold FCS flags in newer files."""
        self._record = struct.Struct(order + "IIII")
        inp.fill(HEAD)
        self._rules = PcapRules.from_head(bytes(inp.buf[inp.pos : inp.pos + HEAD]))
        inp.pos += 24
        self._inp = inp
        self._odd = oddities
        self._index_base = index_base
        """Packets before the first one read: a reader started inside a file numbers packets as the file does."""
        self.stopped: Callable[[], bool] = lambda: False
        """Whether the run was asked to stop: asked between the steps of a search past a corrupt header, which ends
        the packets quietly when it says so."""

    def _empty_fits(self) -> bool:
        """A record of no bytes at the input's position is believed when plausible headers chain after it."""
        inp = self._inp
        inp.fill(16 + CHAIN * (16 + self._rules.snaplen))
        return pcap_chain(self._rules, inp.buf, inp.pos + 16, inp.eof) is not False

    def _resync(self, sec: int, frac: int, incl: int) -> bool:
        """The header at the input's position is corrupt: move to the next plausible record; False if there is none
        within `RESYNC_WINDOW`, or if the run is asked to stop while searching.

        The window is searched a step at a time, each step's chains read whole (a chain of `CHAIN` records past
        the step's end is held too), so each byte is searched once; it is read in doublings, so each byte is
        copied about twice."""
        inp = self._inp
        chain = CHAIN * (16 + self._rules.snaplen)
        searched = 1
        """Offsets after the input's position ruled out so far."""
        while searched < RESYNC_WINDOW:
            if self.stopped():
                return False
            step = min(searched + SCAN_STEP, RESYNC_WINDOW)
            if inp.remaining() < step + chain:  # the window grows by doubling: each fill copies what it holds
                inp.fill(min(max(step + chain, 2 * inp.remaining()), RESYNC_WINDOW + chain))
            found = find_pcap_sync(self._rules, inp.buf, inp.pos + searched, inp.eof, limit=inp.pos + step)
            if found is not None:
                skipped = found - inp.pos
                why = f"claims {incl} bytes" if incl > self._rules.snaplen else f"reads as time {sec}.{frac}"
                self._odd.add(
                    "pcap.resync",
                    f"a corrupt record header ({why}) cost its record: {skipped} bytes skipped to the next plausible one",
                    inp.offset,
                    "error",
                )
                inp.pos = found
                return True
            if inp.eof and step >= inp.remaining():
                break
            searched = step
        self._odd.add(
            "pcap.corrupt-record",
            f"a record header claims {incl} bytes and no plausible record follows; the rest of the file cannot be trusted",
            inp.offset,
            "error",
        )
        return False

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
        rules = self._rules
        limit, frac_limit = min(rules.snaplen, MAX_RECORD), rules.frac_limit
        earliest, latest = (0, 1 << 32) if rules.first_sec is None else (rules.first_sec - MAX_SKEW_S, rules.first_sec + MAX_SKEW_S)
        while True:
            if len(buf) - pos < 16:
                inp.pos = pos
                if not inp.fill(16):
                    if inp.remaining():
                        self._odd.add("pcap.truncated", "the file ends inside a record header", inp.offset, "error")
                    break
                buf, pos, base = inp.buf, inp.pos, inp.base
            sec, frac, incl, orig = unpack(buf, pos)
            if incl > limit or frac >= frac_limit or not earliest <= sec <= latest or not incl:
                inp.pos = pos
                if incl or not self._empty_fits():
                    if not self._resync(sec, frac, incl):
                        break
                    buf, pos, base = inp.buf, inp.pos, inp.base
                    continue
                buf, pos, base = inp.buf, inp.pos, inp.base
            end = pos + 16 + incl
            if end > len(buf):
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
            yield new(Packet, (ts, linktype, buf[pos + 16 : end], orig, index, base + pos, 0))
            pos = end
        self._odd.count(
            "pcap.caplen-exceeds-origlen",
            over_orig,
            "a record's captured length exceeds its original length; the captured length was used",
            first_over,
        )
        self._odd.count("capture.time-backwards", backwards, "a packet's timestamp is earlier than the one before", first_back)
