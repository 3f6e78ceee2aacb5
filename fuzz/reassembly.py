"""Layer 2, TCP reassembly: one direction's segments in any order, lost, repeated, overlapping, with sequence
jumps, wrap-around, acknowledgements, SYN/FIN/RST and snapshot-length cuts, and acknowledged holes held open
for a patience window chosen by the input.

The input is a list of 7-byte operations over a true byte stream. Contract: the reassembler never raises;
every byte it delivers is the true byte at that offset (when no segment carried different bytes); what it
delivers and the gaps it names tile the stream without overlap; late bytes it offers the sink lie inside
gaps it named; the bytes it holds stay under its bound.
"""

from __future__ import annotations

import struct

from fuzz.common import Broken, instrumented, main

with instrumented():
    from kdissect.net.reassembly import Patience, Reassembler
    from kdissect.net.tcp import FIN, RST, SYN

MAX_BUFFER = 4096
OP = struct.Struct(">BBhH")
"""flags and options, ack delta, offset delta, length."""
TRUTH = bytes(range(251)) * 300
"""The true stream: 75 KB whose every byte says its own offset modulo 251."""


class Sink:
    def __init__(self) -> None:
        self.offset = 0
        self.origin: int | None = None
        self.chunks: list[tuple[int, bytes]] = []
        self.gaps: list[tuple[int, int]] = []

    def start(self, mid_stream: bool) -> None:
        pass

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        self.chunks.append((self.offset, chunk))
        self.offset += len(chunk)

    def gap(self, length: int, ts: int) -> None:
        if length <= 0:
            raise Broken(f"a gap of {length} bytes")
        self.gaps.append((self.offset, self.offset + length))
        self.offset += length

    def fill(self, offset: int, data: bytes) -> int:
        """Late bytes: they must belong to a named gap; every other one is taken, as an open frame would."""
        if not data or not any(lo <= offset and offset + len(data) <= hi for lo, hi in self.gaps):
            raise Broken(f"{len(data)} late bytes at {offset} offered outside every gap")
        return len(data) if offset % 2 else 0


def one_input(data: bytes) -> None:
    if len(data) < 5:
        return
    isn = int.from_bytes(data[:4], "big")
    reorder = bool(data[4] & 1)
    patience = Patience((data[4] >> 1 & 7) * OP.size, MAX_BUFFER >> (data[4] >> 4 & 3), 1 << 30)
    sink = Sink()
    stream = Reassembler(sink, lambda d, ts, i: None, MAX_BUFFER, reorder, patience)
    flipped = False
    first_true: int | None = None
    cursor = 0
    for i in range(5, len(data) - OP.size + 1, OP.size):
        options, ack_delta, delta, length = OP.unpack_from(data, i)
        flags = (SYN if options & 1 else 0) | (FIN if options & 2 else 0) | (RST if options & 4 else 0)
        cursor = max(0, min(len(TRUTH) - 1, cursor + delta))
        length %= 1500
        payload = TRUTH[cursor : cursor + length]
        if options & 8 and payload:
            payload = bytes([payload[0] ^ 0xFF]) + payload[1:]
            flipped = True
        missing = (length - len(payload)) + (options >> 4 & 3) * 100
        seq = (isn + 1 + cursor - (1 if flags & SYN else 0)) & 0xFFFFFFFF
        if options & 64:
            seq = (seq + (ack_delta << 16)) & 0xFFFFFFFF  # a sequence jump far outside the window
            flipped = True
        if options & 128:
            stream.acknowledged((isn + 1 + cursor + ack_delta) & 0xFFFFFFFF, 0, i)
        was_started = stream.started
        stream.segment(seq, payload, missing, flags, 0, i)
        if not was_started and stream.started:
            first_true = cursor
        if stream.pending_bytes > MAX_BUFFER:
            raise Broken(f"{stream.pending_bytes} bytes held, past the bound of {MAX_BUFFER}")
        if stream.offset != sink.offset:
            raise Broken(f"reassembler at {stream.offset}, its sink at {sink.offset}")
    stream.flush(0)
    if stream.pending or stream.pending_bytes or stream.offset != sink.offset:
        raise Broken("bytes still held after the flush")
    if flipped or first_true is None:
        return
    for at, chunk in sink.chunks:
        true = first_true + at
        if chunk != TRUTH[true : true + len(chunk)] and true + len(chunk) <= len(TRUTH):
            raise Broken(f"bytes delivered at stream offset {at} are not the true ones")


if __name__ == "__main__":
    main(one_input)
