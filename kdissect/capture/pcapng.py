"""pcapng files: several sections and interfaces, enhanced, simple and obsolete packet blocks."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Iterator

from kdissect.capture.chunked import ChunkedInput
from kdissect.capture.oddities import Oddities
from kdissect.capture.packet import Packet

SHB = 0x0A0D0D0A
MAGIC = SHB.to_bytes(4, "little")
"""How a pcapng file starts: its first section header's block type, which reads the same in both byte orders."""
IDB = 0x00000001
PB = 0x00000002
SPB = 0x00000003
EPB = 0x00000006
DSB = 0x0000000A
TLS_KEY_LOG = 0x544C534B
"""A Decryption Secrets Block's type for TLS key logs (NSS format), what `editcap --inject-secrets tls,FILE` writes."""
SECTION_BYTE_ORDER = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}
"""A section header's byte-order magic as it reads on disk, and the struct byte order it means."""
KNOWN_SKIPPED = frozenset({0x4, 0x5, 0x7, 0x8, 0x9, 0xA, 0xB, 0xBAD, 0x40000BAD})
"""Name resolution, statistics, IRIG, ARINC, journal, decryption secrets, custom: nothing for packets in them
(a decryption secrets block holding a TLS key log goes to `on_secrets`)."""

OPT_END = 0
OPT_IF_TSRESOL = 9
OPT_IF_TSOFFSET = 14

MAX_BLOCK = 64 << 20
MIN_LENGTH = {SHB: 28, IDB: 20, PB: 32, SPB: 16, EPB: 32}
"""The shortest each block can be: its fixed fields and the two lengths."""


@dataclass(frozen=True, slots=True)
class Interface:
    linktype: int
    snaplen: int
    ts_mul: int
    ts_div: int
    """Timestamp units to nanoseconds: ns = units * ts_mul // ts_div."""
    ts_offset_ns: int


def _interface(body: bytes, order: str) -> Interface:
    linktype, _reserved, snaplen = struct.unpack_from(order + "HHI", body, 0)
    mul, div, offset = 1000, 1, 0
    pos = 8
    while pos + 4 <= len(body):
        code, length = struct.unpack_from(order + "HH", body, pos)
        value = body[pos + 4 : pos + 4 + length]
        if code == OPT_END:
            break
        if code == OPT_IF_TSRESOL and value:  # lengths are checked against the bytes present, not as claimed
            exp = value[0] & 0x7F
            if value[0] & 0x80:
                mul, div = 1_000_000_000, 1 << exp
            elif exp <= 9:
                mul, div = 10 ** (9 - exp), 1
            else:
                mul, div = 1, 10 ** (exp - 9)
        elif code == OPT_IF_TSOFFSET and len(value) >= 8:
            offset = struct.unpack_from(order + "q", value)[0] * 1_000_000_000
        pos += 4 + ((length + 3) & ~3)
    return Interface(linktype, snaplen, mul, div, offset)


class PcapngReader:
    format = "pcapng"

    def __init__(self, inp: ChunkedInput, oddities: Oddities, index_base: int = 0) -> None:
        self._inp = inp
        self._odd = oddities
        self._index_base = index_base
        """Packets before the first one read, as in `PcapReader`."""
        self._interfaces: list[Interface] = []
        self._seen_linktypes: list[int] = []
        self.sections = 0
        self.on_secrets: Callable[[bytes], None] | None = None
        """Called with each TLS key log embedded in the file, when it is read: before the packets after it."""

    def linktypes(self) -> list[int]:
        return self._seen_linktypes

    def _section(self, offset: int) -> str | None:
        """Read a section header's byte order; None if the block is not a valid one."""
        inp = self._inp
        if not inp.fill(12):
            self._odd.add("pcapng.truncated", "the file ends inside a section header", offset, "error")
            return None
        order = SECTION_BYTE_ORDER.get(bytes(inp.buf[inp.pos + 8 : inp.pos + 12]))
        if order is None:
            self._odd.add("pcapng.bad-section", "a section header has no valid byte-order magic", offset, "error")
            return None
        self.sections += 1
        self._interfaces = []
        return order

    def packets(self) -> Iterator[Packet]:
        inp = self._inp
        odd = self._odd
        header = struct.Struct("<II")
        epb = struct.Struct("<IIIII")
        order = "<"
        index = self._index_base
        last_ts = 0
        while True:
            start = inp.offset
            if not inp.fill(8):
                if inp.remaining():
                    odd.add("pcapng.truncated", "the file ends inside a block header", start, "error")
                return
            block_type, length = header.unpack_from(inp.buf, inp.pos)
            if block_type == SHB:
                # the block type reads the same in both byte orders; the length only in the section's own
                section_order = self._section(start)
                if section_order is None:
                    return
                order = section_order
                header = struct.Struct(order + "II")
                epb = struct.Struct(order + "IIIII")
                block_type, length = header.unpack_from(inp.buf, inp.pos)
            if length < 12 or length % 4 or length > MAX_BLOCK:
                odd.add("pcapng.corrupt-block", f"a block claims a length of {length}; reading stops", start, "error")
                return
            if not inp.fill(length):
                odd.add("pcapng.truncated", "the file ends inside a block", start, "error")
                return
            buf, pos = inp.buf, inp.pos
            inp.pos += length
            if length < MIN_LENGTH.get(block_type, 12):
                odd.add("pcapng.corrupt-block", f"a block of type 0x{block_type:x} is too short ({length} bytes); skipped", start, "error")
                continue
            if block_type == EPB or block_type == PB:
                if block_type == EPB:
                    iface, hi, lo, caplen, orig = epb.unpack_from(buf, pos + 8)
                else:
                    iface, _drops, hi, lo, caplen, orig = struct.unpack_from(order + "HHIIII", buf, pos + 8)
                    odd.add("pcapng.obsolete-packet-block", "obsolete Packet Blocks (type 2) are present", start, "note")
                if caplen > length - 32:
                    odd.add("pcapng.corrupt-block", "a packet block's captured length exceeds the block", start, "error")
                    caplen = length - 32
                data = buf[pos + 28 : pos + 28 + caplen]
                units = hi << 32 | lo
            elif block_type == SPB:
                iface, units = 0, None
                orig = struct.unpack_from(order + "I", buf, pos + 8)[0]
                # the block holds min(original length, interface 0's snaplen) bytes, then padding
                caplen = min(orig, length - 16)
                if self._interfaces and self._interfaces[0].snaplen:
                    caplen = min(caplen, self._interfaces[0].snaplen)
                data = buf[pos + 12 : pos + 12 + caplen]
            elif block_type == SHB:
                continue
            elif block_type == IDB:
                interface = _interface(buf[pos + 8 : pos + length - 4], order)
                self._interfaces.append(interface)
                if interface.linktype not in self._seen_linktypes:
                    self._seen_linktypes.append(interface.linktype)
                continue
            else:
                if block_type == DSB and self.on_secrets is not None and length >= 20:
                    kind, size = struct.unpack_from(order + "II", buf, pos + 8)
                    if kind == TLS_KEY_LOG:
                        self.on_secrets(bytes(buf[pos + 16 : pos + 16 + min(size, length - 20)]))
                if block_type not in KNOWN_SKIPPED:
                    odd.add("pcapng.unknown-block", f"blocks of unknown type 0x{block_type:x} were skipped", start, "note")
                continue
            if iface >= len(self._interfaces):
                odd.add("pcapng.unknown-interface", f"a packet names interface {iface}, which was never described", start, "error")
                continue
            interface = self._interfaces[iface]
            if units is None:
                ts = last_ts  # simple packet blocks carry no timestamp: the previous one is the best we know
            else:
                ts = units * interface.ts_mul // interface.ts_div + interface.ts_offset_ns
            if len(data) > orig:
                odd.add("pcapng.caplen-exceeds-origlen", "a packet's captured length exceeds its original length", start)
                orig = len(data)
            if ts < last_ts:
                odd.add("capture.time-backwards", "a packet's timestamp is earlier than the one before", start)
            last_ts = ts
            index += 1
            yield tuple.__new__(Packet, (ts, interface.linktype, data, orig, index, start, 0))
