"""Layer 1, capture files: any bytes opened as a capture (pcap, pcapng, gzip/zstd/lz4 containers) and read to the end.

Contract: `CaptureError` at open is the only exception; reading never raises; every diagnostic is named and
located by file offset; packet numbers count up from 1 and offsets never go backwards.
"""

from __future__ import annotations

import io

from fuzz.common import Broken, check_diagnostics, instrumented, main

with instrumented():
    from kdissect.capture.source import CaptureError, CaptureFile


def one_input(data: bytes) -> None:
    try:
        capture = CaptureFile(io.BytesIO(data), "fuzz.pcap")
    except CaptureError:
        return
    last_index = last_offset = 0
    for packet in capture.packets():
        if packet.index != last_index + 1 or packet.offset < last_offset:
            raise Broken(f"packet {packet.index} at {packet.offset} after {last_index} at {last_offset}")
        last_index, last_offset = packet.index, packet.offset
    diagnostics = capture.diagnostics()
    check_diagnostics(diagnostics, "capture")
    for d in diagnostics:
        if d.scope != "file" or d.offset is None:
            raise Broken(f"capture diagnostic without a file offset: {d!r}")


if __name__ == "__main__":
    main(one_input)
