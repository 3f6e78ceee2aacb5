"""The value the framer hands on: one size-delimited Kafka frame, as much of it as the capture holds."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.frozen import fast_constructor


@dataclass(frozen=True, slots=True)
class Frame:
    data: bytes
    """The frame after its size prefix, header and body, up to its first missing byte. Shorter than `size`
    when the capture lost bytes."""
    size: int
    """What the size prefix claims."""
    offset: int
    """Stream offset of the size prefix."""
    ts_first: int
    """Capture time (ns) of the packet carrying the first byte."""
    ts: int
    """Capture time (ns) of the packet carrying the last byte: when the frame was whole."""
    first_packet: int
    last_packet: int
    rest: tuple[tuple[int, bytes], ...] = ()
    """What the capture holds after the first hole: (frame offset, bytes) of each run, in order. Empty unless
    a hole inside the frame was followed by more of it (the bytes after a lost segment, salvaged)."""

    @property
    def lost(self) -> int:
        """Bytes of the frame the capture does not hold (a gap, or the snapshot length)."""
        return self.size - len(self.data) - sum(len(piece) for _, piece in self.rest)

    def holes(self) -> tuple[tuple[int, int], ...]:
        """(start, end) frame offsets of every run of bytes the capture does not hold, in order."""
        out = []
        at = len(self.data)
        for start, piece in self.rest:
            if start > at:
                out.append((at, start))
            at = start + len(piece)
        if at < self.size:
            out.append((at, self.size))
        return tuple(out)

    def filled(self) -> bytearray:
        """The whole frame with its holes as zeros, for decoders told where the holes are (`holes()`)."""
        out = bytearray(self.size)
        out[: len(self.data)] = self.data
        for start, piece in self.rest:
            out[start : start + len(piece)] = piece
        return out


new_frame = fast_constructor(Frame)
