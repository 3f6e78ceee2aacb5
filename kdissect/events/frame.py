"""The value the framer hands on: one size-delimited Kafka frame, as much of it as the capture holds."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.frozen import fast_constructor


@dataclass(frozen=True, slots=True)
class Frame:
    data: bytes
    """The frame after its size prefix: header and body. Shorter than `size` when the capture lost bytes."""
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

    @property
    def lost(self) -> int:
        """Bytes of the frame the capture does not hold (a gap, or the snapshot length)."""
        return self.size - len(self.data)


new_frame = fast_constructor(Frame)
