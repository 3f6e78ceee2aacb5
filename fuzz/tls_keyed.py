"""Layer 3½ with the keys: the records of a real TLS connection after its handshake, mutated, opened with the
capture's own key log.

Each TLS capture with a key log in captures/ gives its first connection. Both sides' bytes before their
ChangeCipherSpec (the hellos, and in TLS 1.2 the key exchange) go in as captured; the input picks a connection and
a side, then holds, as for `tls_records`, a count of 3-byte chunk/gap operations and that side's bytes from its
ChangeCipherSpec on: the capture's records, cut, damaged, shortened, lengthened or made up. Records the fuzzer left
whole open with the real keys, so what decryption feeds is reached: Kafka framers cut the plaintext. The other
side's records follow as captured.

Contract: nothing raises; every diagnostic is named; what each side holds stays within its bounds; the frames cut
from each side's plaintext follow each other without overlapping.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

from fuzz.common import Broken, check_diagnostics, feed, fuzz_limits, instrumented, main, operations

with instrumented():
    from kdissect.capture.source import open_capture
    from kdissect.kafka.detect import find_request, find_response
    from kdissect.kafka.framing import RESYNC_WINDOW, Framer
    from kdissect.net.segments import SegmentDecoder
    from kdissect.schema import BUILTIN
    from kdissect.tls.decryptor import HOLD_BYTES, TlsSession
    from kdissect.tls.keylog import KeyLog
    from kdissect.tls.records import HEADER, MAX_LENGTH, SEARCH_WINDOW

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
CHANGE_CIPHER_SPEC = b"\x14\x03\x03\x00\x01\x01"
MAX_FRAME = fuzz_limits().max_frame_size
MAX_CHUNK = 0xFFFF
"""The largest chunk an operation hands on."""
BOUND = HOLD_BYTES + SEARCH_WINDOW + 2 * (HEADER + MAX_LENGTH) + MAX_CHUNK + MAX_FRAME + 4 + RESYNC_WINDOW + MAX_LENGTH
"""What one side may hold: records waiting for keys, a search window and the records around it, a chunk, and its
framer's frame or search window with a record's plaintext."""


class Connection(NamedTuple):
    """A captured TLS connection's two sides, each cut at its ChangeCipherSpec, and the key log that opens it."""

    keylog: bytes
    heads: tuple[bytes, bytes]
    """(client, server): what each side sent before its ChangeCipherSpec."""
    rests: tuple[bytes, bytes]
    """What each side sent from its ChangeCipherSpec on."""


def first_connection_streams(path: Path) -> tuple[bytes, bytes]:
    """(client, server) bytes of a capture's first TCP connection, the client being the side that spoke first. The
    captures are clean loopback ones: their segments come in order, none lost."""
    decoder = SegmentDecoder(1 << 20)
    streams: dict[tuple[bytes, int], bytearray] = {}
    ends = None
    with open_capture(path) as capture:
        for packet in capture.packets():
            segment = decoder.decode(packet)
            if segment is None or not segment.payload:
                continue
            source, destination = (segment.src, segment.sport), (segment.dst, segment.dport)
            if ends is None:
                ends = (source, destination)
            if source in ends and destination in ends:
                streams.setdefault(source, bytearray()).extend(segment.payload)
    assert ends is not None, path
    return bytes(streams[ends[0]]), bytes(streams.get(ends[1], b""))


@functools.cache
def connections() -> tuple[Connection, ...]:
    found = []
    for path in sorted(CAPTURES.glob("tls*.pcap")):
        keylog = path.with_suffix(".keylog")
        if not keylog.exists():
            continue
        client, server = first_connection_streams(path)
        at = client.index(CHANGE_CIPHER_SPEC), server.index(CHANGE_CIPHER_SPEC)
        found.append(Connection(keylog.read_bytes(), (client[: at[0]], server[: at[1]]), (client[at[0] :], server[at[1] :])))
    return tuple(found)


def _framer(frames: list, report, requests: bool) -> Framer:
    if requests:
        return Framer(frames.append, report, lambda buf, start: find_request(buf, start, MAX_FRAME, BUILTIN), 8, MAX_FRAME, True)
    return Framer(frames.append, report, lambda buf, start: find_response(buf, start, MAX_FRAME, ()), 4, MAX_FRAME, True)


def one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    flags, ops, stream = operations(data)
    known = connections()
    connection = known[(flags & 0x0F) % len(known)]
    side = flags >> 4 & 1
    keys = KeyLog()
    keys.add(connection.keylog)
    diagnostics: list = []

    def report(diagnostic, ts: int, index: int) -> None:
        diagnostics.append(diagnostic)

    frames: tuple[list, list] = ([], [])
    framers = (_framer(frames[0], report, True), _framer(frames[1], report, False))
    session = TlsSession(keys, report, framers, lambda info: None, set())
    directions = session.directions
    for direction, head in zip(directions, connection.heads):
        direction.start(False)
        direction.data(head, 0, 0)
    fuzzed, other = directions[side], directions[1 - side]
    feed(fuzzed, ops, stream, lambda: fuzzed.held <= BOUND)
    other.data(connection.rests[1 - side], 0, 0)
    for direction in directions:
        direction.finish()
    check_diagnostics(diagnostics, "tls")
    for cut in frames:
        end = 0
        for frame in cut:
            if frame.offset < end:
                raise Broken(f"a plaintext frame at {frame.offset} overlaps the one before, which ended at {end}")
            end = frame.offset + 4 + len(frame.data)


if __name__ == "__main__":
    main(one_input)
