"""Layer 3, framing and pairing: fuzzed TCP conversations through the core without a body decoder.

Exercises size prefixes, frames held open across holes and handed on with the bytes after them, resync after
gaps and garbage (`kafka/detect.py`), request and response headers, pairing by correlation id, acks=0 Produce,
unknown-port detection and the connection bound. Contract: no exception; on each connection frames come out in
stream order without overlapping; what a frame holds after a hole lies inside it, in order; no frame exceeds
the size bound; buffers stay under their bounds after every packet.
"""

from __future__ import annotations

from fuzz.common import Broken, check_diagnostics, fuzz_limits, instrumented, main

with instrumented():
    from fuzz.packets import packets
    from kdissect.dissector import Dissector
    from kdissect.events import Exchange, Notice
    from kdissect.kafka.connection import PROBE_LIMIT
    from kdissect.kafka.framing import RESYNC_WINDOW, Framer
    from kdissect.kafka.phase import PROBING

LIMITS = fuzz_limits()
MAX_SEGMENT = 4096


def check_bounds(dissector: Dissector) -> None:
    held = 0
    for connection, direction in dissector._flows.values():
        if direction or connection.phase.over:
            continue
        held += connection.buffered()
        for stream in connection.streams:
            if stream.pending_bytes > LIMITS.max_stream_buffer:
                raise Broken(f"{stream.pending_bytes} bytes held for a hole")
            sink = stream.sink
            if isinstance(sink, Framer) and len(sink.buf) > LIMITS.max_frame_size + 4 + RESYNC_WINDOW + MAX_SEGMENT:
                raise Broken(f"the framer holds {len(sink.buf)} bytes")
        for probe in connection.probes:
            if probe.held > PROBE_LIMIT + MAX_SEGMENT:
                raise Broken(f"the probe holds {probe.held} bytes")
        if connection.phase is PROBING:
            continue
        pairing = connection.pairing
        if len(pairing.outstanding or ()) > LIMITS.max_outstanding_requests or pairing.silent > LIMITS.max_outstanding_acks_zero:
            raise Broken("outstanding requests past their bound")
    if held > LIMITS.max_buffered_bytes + dissector._held_check_every + 2 * MAX_SEGMENT:
        raise Broken(f"{held} bytes held in all, past the global bound")


def check_order(events: list) -> None:
    frames: dict[tuple[int, str], list] = {}
    for event in events:
        if isinstance(event, Notice):
            check_diagnostics([event.diagnostic], "notice")
            continue
        if not isinstance(event, Exchange):
            continue
        for side, message in (("request", event.request), ("response", event.response)):
            if message is None:
                continue
            check_diagnostics(message.diagnostics, side)
            frame = message.frame
            if not 0 <= len(frame.data) <= frame.size or frame.size > LIMITS.max_frame_size:
                raise Broken(f"a frame of {len(frame.data)} bytes claiming {frame.size}")
            at = len(frame.data)
            for start, piece in frame.rest:  # what the capture holds after a hole: in order, inside the frame
                if start <= at or not piece or start + len(piece) > frame.size:
                    raise Broken(f"a frame of {frame.size} bytes holds {len(piece)} bytes at {start} after {at}")
                at = start + len(piece)
            frames.setdefault((event.connection.id, side), []).append(frame)
    for (connection, side), found in frames.items():
        end = 0
        for frame in sorted(found, key=lambda f: f.offset):
            if frame.offset < end:
                raise Broken(f"connection {connection}: a {side} frame at {frame.offset} overlaps the one before, which ended at {end}")
            end = frame.offset + 4 + len(frame.data)


def one_input(data: bytes) -> None:
    dissector = Dissector(limits=LIMITS, decoder=None)
    events = []
    for packet in packets(data):
        events += dissector.feed(packet)
        check_bounds(dissector)
    events += dissector.finish()
    check_order(events)


if __name__ == "__main__":
    main(one_input)
