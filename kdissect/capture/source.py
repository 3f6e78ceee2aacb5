"""Open a capture file whatever its container: pcap or pcapng, plain or compressed, named right or not."""

from __future__ import annotations

import gzip
import os
import sys
import zlib
from typing import BinaryIO, Callable, Iterator

import lz4.frame
import zstandard

from kdissect.capture.chunked import ChunkedInput, Readable
from kdissect.capture.oddities import Oddities, Oddity
from kdissect.capture.packet import Packet
from kdissect.capture.pcap import MAGICS as PCAP_MAGICS
from kdissect.capture.pcap import PcapReader
from kdissect.capture.pcapng import MAGIC as PCAPNG_MAGIC
from kdissect.capture.pcapng import PcapngReader
from kdissect.diagnostic import Diagnostic

COMPRESSIONS = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"\x04\x22\x4d\x18": "lz4"}
"""The magic a compressed file starts with, and its compression."""


class CaptureError(Exception):
    """The input cannot be read as a capture at all; the message is one line for the user."""


STREAM_ERRORS: tuple[type[Exception], ...] = (EOFError, OSError)
"""What gzip, lz4 and plain files raise when their data ends early or is corrupt."""


def compression_of(head: bytes) -> str | None:
    """The compression a file's first bytes announce; None for a plain file."""
    for magic, name in COMPRESSIONS.items():
        if head.startswith(magic):
            return name
    return None


def _decompressing(raw: BinaryIO | Unread, head: bytes) -> tuple[Readable, str | None, tuple[type[Exception], ...]]:
    """The stream to read, the compression's name, and the exceptions that mean its data is bad."""
    compression = compression_of(head)
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb"), compression, (*STREAM_ERRORS, zlib.error)
    if compression == "zstd":
        return ZstdStream(raw), compression, (*STREAM_ERRORS, zstandard.ZstdError)
    if compression == "lz4":
        return lz4.frame.LZ4FrameFile(raw, mode="rb"), compression, (*STREAM_ERRORS, RuntimeError)
    return raw, None, STREAM_ERRORS


ZSTD_STEP = 4096
"""Compressed bytes decompressed at a time: zstd expands at most 32768-fold, so one step yields at most 128 MiB."""


class ZstdStream:
    """zstd frames one after another, read so that a stream cut short says so.

    zstandard's own stream reader ends quietly wherever its input does, even mid-frame, and its `read1`
    drops a decoded block when the cut falls on a block boundary; `decompressobj` knows whether a frame ended.
    """

    def __init__(self, raw: Readable) -> None:
        self._raw = raw
        self._new = zstandard.ZstdDecompressor().decompressobj
        self._frame = self._new()
        self._in_frame = False
        self._out = b""
        self._pos = 0

    def read(self, n: int) -> bytes:
        if self._pos == len(self._out):
            self._out, self._pos = self._decompress(), 0
        out = self._out[self._pos : self._pos + n]
        self._pos += len(out)
        return out

    def _decompress(self) -> bytes:
        """The next decompressed bytes; b"" at the end of the stream, EOFError if that is inside a frame."""
        parts: list[bytes] = []
        while not parts:
            data = self._raw.read(ZSTD_STEP)
            if not data:
                if self._in_frame:
                    raise EOFError("cut inside a frame")
                return b""
            while data:
                self._in_frame = True
                parts.append(self._frame.decompress(data))
                data = b""
                if self._frame.eof:
                    data = self._frame.unused_data
                    self._frame = self._new()
                    self._in_frame = False
            parts = [part for part in parts if part]
        return b"".join(parts)


class Unread:
    """A stream that cannot seek (a pipe, a socket, `tcpdump -w -`) made to start again once, after its first
    bytes were read to learn its container; it counts the bytes read, for the progress display."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._kept = b""
        self._replay: bytes | None = None
        self._read = 0

    def read(self, n: int = -1) -> bytes:
        if self._replay:
            data, self._replay = self._replay[:n] if n >= 0 else self._replay, self._replay[n:] if n >= 0 else b""
        else:
            data = self._raw.read(n)
            if self._replay is None:
                self._kept += data
        self._read += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        if offset != 0 or whence != 0 or self._replay is not None:
            raise OSError("a pipe can only start again once, from its beginning")
        self._replay, self._kept, self._read = self._kept, b"", 0
        return 0

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._read

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        self._raw.close()

    @property
    def closed(self) -> bool:
        return self._raw.closed


class CaptureFile:
    """A capture being read: its format, its packets, and what was odd about it.

    Iterating `packets()` streams the file once; `diagnostics()` is complete after that.

    A byte range of a plain capture can be read on its own (capture/ranges.py plans them): `first` is the offset
    of its first record, `prefix` what the reader needs before it (the pcap file header, or the pcapng section
    and interface blocks in force there), `index_base` the packets before it, `stop` where its records end.
    Packets then carry the file's own offsets and numbers, as when the file is read whole.
    """

    def __init__(
        self, raw: BinaryIO, name: str, *, first: int = 0, prefix: bytes = b"", index_base: int = 0, stop: int | None = None
    ) -> None:
        self.name = name
        self._raw: BinaryIO | Unread = raw
        self._size = _size_of(raw)
        self._odd = Oddities()
        stream: Readable
        if first:
            raw.seek(first)
            stream, self.compression, errors, magic = raw, None, STREAM_ERRORS, prefix[:4]
        else:
            if not raw.seekable():
                self._raw = Unread(raw)
            head = self._raw.read(4)
            self._raw.seek(0)
            stream, self.compression, errors = _decompressing(self._raw, head)
            try:
                prefix = magic = stream.read(4)
            except errors as exc:
                raise CaptureError(f"{name}: cannot read the {self.compression} stream: {exc}") from None
        self._input = ChunkedInput(stream, prefix, errors, first - len(prefix) if first else 0, stop)
        if magic in PCAP_MAGICS:
            if not self._input.fill(24):
                raise CaptureError(f"{name}: truncated inside the pcap file header")
            self._reader: PcapReader | PcapngReader = PcapReader(self._input, self._odd, index_base)
        elif magic == PCAPNG_MAGIC:
            self._reader = PcapngReader(self._input, self._odd, index_base)
        elif not magic:
            raise CaptureError(f"{name}: the {self.compression} stream holds no data" if self.compression else f"{name}: the file is empty")
        else:
            raise CaptureError(f"{name}: not a pcap or pcapng capture (it starts with {magic.hex(' ')})")
        self.format = self._reader.format
        if not first:
            self._misnamed()

    def _misnamed(self) -> None:
        suffix = os.path.splitext(self.name[:-3] if self.name.endswith(".gz") else self.name)[1].lower()
        if self.format == "pcapng" and suffix in (".pcap", ".cap"):
            self._odd.add("capture.misnamed", f"the file is pcapng although its name ends in {suffix}", 0, "note")
        elif self.format == "pcap" and suffix == ".pcapng":
            self._odd.add("capture.misnamed", "the file is classic pcap although its name ends in .pcapng", 0, "note")

    def packets(self) -> Iterator[Packet]:
        yield from self._reader.packets()
        if self._input.error:
            self._odd.add(
                "capture.truncated-stream",
                f"the {self.compression or 'file'} stream ended early: {self._input.error}",
                self._input.offset,
                "error",
            )

    def linktypes(self) -> list[int]:
        return self._reader.linktypes()

    def stops_when(self, stopped: Callable[[], bool]) -> None:
        """Have the reader ask `stopped` between the steps of a long search (past a corrupt pcap record header) and
        end the packets when it says so, so that Ctrl-C is answered within a second whatever the bytes."""
        if isinstance(self._reader, PcapReader):
            self._reader.stopped = stopped

    def secrets_to(self, callback: Callable[[bytes], None]) -> None:
        """Hand each TLS key log the file embeds (pcapng Decryption Secrets Blocks) to `callback` as it is read,
        before the packets that follow it; a classic pcap has none."""
        if isinstance(self._reader, PcapngReader):
            self._reader.on_secrets = callback

    def diagnostics(self) -> list[Diagnostic]:
        return self._odd.diagnostics()

    def oddities(self) -> list[Oddity]:
        """What `diagnostics()` tells, as entries that add up across byte ranges (`Oddities.merge`)."""
        return self._odd.entries()

    def progress(self) -> tuple[int, int]:
        """(bytes consumed, total bytes) of the file on disk, compressed or not; total is 0 when unknown."""
        try:
            return self._raw.tell(), self._size
        except (OSError, ValueError):
            return 0, self._size

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> CaptureFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _size_of(raw: BinaryIO) -> int:
    try:
        return os.fstat(raw.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        return 0


SECRETS_HEAD = 1 << 20
"""How far into a file `embedded_tls_keylogs` looks: editcap writes its secrets block before the first packet."""


def embedded_tls_keylogs(raw: BinaryIO, name: str) -> bytes:
    """The TLS key logs a pcapng embeds in its first MiB, for readers that take a file in byte ranges (the
    Spark job) and so cannot meet its secrets blocks in order; b"" for anything else."""
    found: list[bytes] = []
    head = raw.read(4)
    if head != PCAPNG_MAGIC and compression_of(head) is None:
        return b""  # a classic pcap: no secrets blocks, no need to read on
    raw.seek(0)
    try:
        capture = CaptureFile(raw, name, stop=SECRETS_HEAD)
    except CaptureError:
        return b""
    if capture.format == "pcapng":
        capture.secrets_to(found.append)
        for _ in capture.packets():
            pass
    return b"\n".join(found)


STDIN = "-"
"""The name that reads standard input (`tcpdump -w - | kdissect read -`)."""


def open_capture(path: str | os.PathLike[str]) -> CaptureFile:
    """Open a capture for streaming; CaptureError names what is wrong with a path that is not one. `-` is standard
    input; a pipe or any stream that cannot seek is read as it comes, pcap or pcapng, compressed or not."""
    name = os.fspath(path)
    if name == STDIN:
        if sys.stdin.isatty():
            raise CaptureError("standard input is a terminal, not a capture: pipe one in (tcpdump -U -w - | kdissect read -)")
        return _open_stream(os.fdopen(os.dup(sys.stdin.fileno()), "rb"), "standard input")
    if os.path.isdir(name):
        raise CaptureError(f"{name}: is a directory, not a capture file")
    try:
        raw = open(name, "rb")
    except FileNotFoundError:
        raise CaptureError(f"{name}: no such file") from None
    except OSError as exc:
        raise CaptureError(f"{name}: {exc.strerror or exc}") from None
    return _open_stream(raw, name)


def _open_stream(raw: BinaryIO, name: str) -> CaptureFile:
    try:
        return CaptureFile(raw, name)
    except CaptureError:
        raw.close()
        raise
    except (OSError, EOFError, ValueError) as exc:
        raw.close()
        raise CaptureError(f"{name}: cannot read: {exc}") from None
