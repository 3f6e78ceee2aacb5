"""A capture file to write, its format and compression chosen by its name: what `-w` and `anonymize` write.

`.pcap` (or `.cap`) is classic pcap with nanosecond timestamps, `.pcapng` is pcapng; either may end in `.gz`,
`.zst` or `.lz4`, the compressions the reader opens. A classic pcap holds one link type, which its first packet
gives; pcapng describes an interface per link type.
"""

from __future__ import annotations

import gzip
import os
from typing import Any, BinaryIO

from kdissect.capture.packet import Packet
from kdissect.capture.writer import PcapngWriter, PcapWriter

FORMATS = {".pcap": "pcap", ".cap": "pcap", ".pcapng": "pcapng"}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".lz4": "lz4"}
NANOSECONDS = 9
"""pcapng's if_tsresol for nanoseconds: the core's timestamps are nanoseconds, so nothing is rounded."""


class DestinationError(Exception):
    """The file cannot be written as asked; the message is one line for the user."""


def format_of(name: str) -> tuple[str, str | None]:
    """(pcap or pcapng, the compression or None) that the file's name asks for; DestinationError otherwise."""
    stem, last = os.path.splitext(name)
    compression = COMPRESSIONS.get(last.lower())
    if compression is not None:
        last = os.path.splitext(stem)[1]
    fmt = FORMATS.get(last.lower())
    if fmt is None:
        raise DestinationError(f"{name}: give a name ending in .pcap or .pcapng (and .gz, .zst or .lz4 to compress it)")
    return fmt, compression


def _open(path: str, compression: str | None) -> BinaryIO:
    if compression == "gzip":
        return gzip.open(path, "wb")  # type: ignore[return-value]
    if compression == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().stream_writer(open(path, "wb"), closefd=True)
    if compression == "lz4":
        import lz4.frame

        return lz4.frame.open(path, "wb")
    return open(path, "wb")


class CaptureDestination:
    """Packets to a capture file, streamed: each is written as it comes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.name = os.fspath(path)
        self.format, self.compression = format_of(self.name)
        if os.path.isdir(self.name):
            raise DestinationError(f"{self.name}: is a directory")
        try:
            self._stream = _open(self.name, self.compression)
        except OSError as exc:
            raise DestinationError(f"{self.name}: {exc.strerror or exc}") from None
        self._pcap: PcapWriter | None = None
        self._pcapng: PcapngWriter | None = PcapngWriter(self._stream) if self.format == "pcapng" else None
        self._interfaces: dict[int, int] = {}
        self.packets = 0

    def write(self, packet: Packet) -> None:
        try:
            if self._pcapng is not None:
                interface = self._interfaces.get(packet.linktype)
                if interface is None:
                    interface = self._interfaces[packet.linktype] = self._pcapng.interface(packet.linktype, tsresol=NANOSECONDS)
                self._pcapng.packet(packet, interface)
            else:
                if self._pcap is None:
                    self._pcap = PcapWriter(self._stream, packet.linktype, nanosecond=True)
                elif packet.linktype != self._pcap.linktype:
                    raise DestinationError(
                        f"{self.name}: the packets have several link types ({self._pcap.linktype}, {packet.linktype}), which a classic "
                        "pcap cannot hold: name the file .pcapng"
                    )
                self._pcap.write(packet)
        except OSError as exc:
            raise DestinationError(f"cannot write {self.name}: {exc.strerror or exc}") from None
        self.packets += 1

    def secrets(self, keylog: bytes) -> bool:
        """Embed a TLS key log (pcapng only); False when the format cannot hold one."""
        if self._pcapng is None or not keylog:
            return False
        self._pcapng.secrets(keylog)
        return True

    def close(self) -> None:
        try:
            if self._pcapng is None and self._pcap is None:
                PcapWriter(self._stream, 1, nanosecond=True)  # nothing was selected: a valid, empty capture
            self._stream.close()
        except OSError as exc:
            raise DestinationError(f"cannot write {self.name}: {exc.strerror or exc}") from None

    def __enter__(self) -> CaptureDestination:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
