"""Capture files out: classic pcap for `live -w`, both for `-w` and `anonymize` (capture/destination.py chooses by
the name), pcapng's variety for tests.

Both writers stream: each packet goes to the output as it comes, so a capture of any size needs no more
memory than one packet.
"""

from __future__ import annotations

import io
import struct
from typing import IO, Iterable

from kdissect.capture.packet import Packet
from kdissect.capture.pcapng import DSB, EPB, IDB, OPT_IF_TSOFFSET, OPT_IF_TSRESOL, SHB, SPB, TLS_KEY_LOG

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
DEFAULT_SNAPLEN = 262144
"""What tcpdump uses: no frame on a real link is longer."""


class PcapWriter:
    """Writes packets of one link type to a classic pcap file, cutting each to `snaplen`.

    A cut record keeps the packet's original length, so readers see what the capture lost.
    """

    def __init__(
        self, stream: IO[bytes], linktype: int, snaplen: int = DEFAULT_SNAPLEN, nanosecond: bool = False, big_endian: bool = False
    ) -> None:
        self._stream = stream
        self.linktype = linktype
        self.snaplen = snaplen
        self._frac_ns = 1 if nanosecond else 1000
        order = ">" if big_endian else "<"
        self._record = struct.Struct(order + "IIII")
        magic = PCAP_MAGIC_NS if nanosecond else PCAP_MAGIC_US
        stream.write(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
        self.packets = 0

    def write(self, packet: Packet) -> None:
        if packet.linktype != self.linktype:
            raise ValueError(f"a pcap file holds one link type ({self.linktype}); this packet has {packet.linktype}")
        data = packet.data[: self.snaplen]
        sec, ns = divmod(packet.ts, 1_000_000_000)
        self._stream.write(self._record.pack(sec, ns // self._frac_ns, len(data), packet.orig_len))
        self._stream.write(data)
        self.packets += 1

    def write_all(self, packets: Iterable[Packet]) -> None:
        for packet in packets:
            self.write(packet)


class PcapngWriter:
    """Writes pcapng: sections, interfaces with their own link type and timestamp resolution, and packets as
    enhanced (EPB), simple (SPB) or obsolete (PB) blocks. Any other block can be written raw with `block`."""

    def __init__(self, stream: IO[bytes], big_endian: bool = False) -> None:
        self._stream = stream
        self._interfaces: list[tuple[int, int, int]] = []
        """(snaplen, timestamp units per second, offset in ns) of each interface of the current section."""
        self.section(big_endian)

    def section(self, big_endian: bool = False) -> None:
        """Start a new section; its interfaces are numbered from 0 again."""
        self._order = ">" if big_endian else "<"
        self._interfaces = []
        self.block(SHB, struct.pack(self._order + "IHHq", 0x1A2B3C4D, 1, 0, -1))

    def interface(self, linktype: int, snaplen: int = 0, tsresol: int | None = None, tsoffset: int = 0) -> int:
        """Describe an interface; returns its id. `tsresol` is the option byte: n for 10**-n, 0x80|n for 2**-n."""
        options = b""
        if tsresol is not None:
            options += self._option(OPT_IF_TSRESOL, bytes([tsresol]))
        if tsoffset:
            options += self._option(OPT_IF_TSOFFSET, struct.pack(self._order + "q", tsoffset))
        if options:
            options += self._option(0, b"")
        self.block(IDB, struct.pack(self._order + "HHI", linktype, 0, snaplen) + options)
        resol = 6 if tsresol is None else tsresol
        per_second = 1 << (resol & 0x7F) if resol & 0x80 else 10 ** (resol & 0x7F)
        self._interfaces.append((snaplen, per_second, tsoffset * 1_000_000_000))
        return len(self._interfaces) - 1

    def packet(self, packet: Packet, interface: int = 0, kind: int = EPB) -> None:
        """Write a packet on an interface as an EPB, an obsolete PB, or an SPB (which always belongs to
        interface 0 and has no timestamp)."""
        snaplen, per_second, offset_ns = self._interfaces[0 if kind == SPB else interface]
        data = packet.data[:snaplen] if snaplen else packet.data
        pad = b"\0" * (-len(data) % 4)
        if kind == SPB:
            self.block(SPB, struct.pack(self._order + "I", packet.orig_len) + data + pad)
            return
        units = (packet.ts - offset_ns) * per_second // 1_000_000_000
        hi, lo = units >> 32, units & 0xFFFFFFFF
        if kind == EPB:
            head = struct.pack(self._order + "IIIII", interface, hi, lo, len(data), packet.orig_len)
        else:
            head = struct.pack(self._order + "HHIIII", interface, 0, hi, lo, len(data), packet.orig_len)
        self.block(kind, head + data + pad)

    def secrets(self, keylog: bytes) -> None:
        """A Decryption Secrets Block holding a TLS key log (NSS format), as `editcap --inject-secrets` writes one:
        readers use it for the packets after it."""
        pad = b"\0" * (-len(keylog) % 4)
        self.block(DSB, struct.pack(self._order + "II", TLS_KEY_LOG, len(keylog)) + keylog + pad)

    def block(self, block_type: int, body: bytes) -> None:
        """Write any block; `body` must be a multiple of 4 bytes long."""
        length = 12 + len(body)
        self._stream.write(struct.pack(self._order + "II", block_type, length) + body + struct.pack(self._order + "I", length))

    def _option(self, code: int, value: bytes) -> bytes:
        return struct.pack(self._order + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def pcap_bytes(
    packets: Iterable[Packet], linktype: int, snaplen: int = DEFAULT_SNAPLEN, nanosecond: bool = False, big_endian: bool = False
) -> bytes:
    """A whole pcap file in memory, for tests."""
    out = io.BytesIO()
    PcapWriter(out, linktype, snaplen, nanosecond, big_endian).write_all(packets)
    return out.getvalue()
