"""Passes over the capture file: every exchange (for the index, a filter, a written set) and one exchange on demand.

The index keeps no bodies. To show one, the packets from its request's first to its response's last are read
again (from the nearest checkpoint of the file's packet offsets, for a plain pcap; from the start otherwise) and
dissected on their own: the connection is then picked up mid-stream, which the core is built for. What earlier
messages taught the decoder (topic names of topic ids, a connection's SASL mechanism and group protocols) comes
from the pass that built the index.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from kdissect.capture import open_capture
from kdissect.capture.source import CaptureFile
from kdissect.dissector import MAKE, Options, file_dissector
from kdissect.events import Event, Exchange

CHECKPOINT = 64
"""The file offset of one packet in this many is kept, so a body can be re-read without reading from the start."""
PCAP_HEADER = 24


def events(path: Path, options: Options, packets: list[int] | None = None, decoder: Any = MAKE) -> Iterator[Event]:
    """Every event of the capture; `packets`, when given, collects the file offset of every CHECKPOINT-th packet."""
    with open_capture(path) as source:
        feed = source.packets()
        if packets is not None:
            feed = checkpointed(feed, packets)
        yield from file_dissector(source, options, decoder).run(feed)


def checkpointed(feed: Iterator[Any], offsets: list[int]) -> Iterator[Any]:
    for packet in feed:
        if packet.index % CHECKPOINT == 1:
            offsets.append(packet.offset)
        yield packet


def exchange_at(path: Path, options: Options, offsets: list[int], row: Any, decoder: Any) -> Exchange | None:
    """One exchange (an index `Row`), decoded with every field's byte span, from the packets its frames span.

    `decoder` records spans and knows what the pass over the whole capture learnt before this exchange: the
    topic ids' names, and the connection's session (indexer.py makes it)."""
    first = 1 if row.connection.tls is not None else row.first_packet  # TLS: the records' keys come from the handshake on
    found = _read(path, options, offsets, row, decoder, first)
    if first > 1 and (found is None or found.status != row.status):
        # picked up mid-stream, the core could not tell the request for one (its client id is not printable,
        # say), where the pass, which saw the connection open, could: read as the pass did, from the start
        found = _read(path, options, offsets, row, decoder, 1)
    return found


def _read(path: Path, options: Options, offsets: list[int], row: Any, decoder: Any, first: int) -> Exchange | None:
    info, correlation_id, last = row.connection, row.correlation_id, row.last_packet
    with opened_at(path, offsets, first) as source:
        feed = (p for p in between(source.packets(), first, last))
        for event in file_dissector(source, replace(options, keep=None), decoder).run(feed):
            if (
                isinstance(event, Exchange)
                and event.connection.client == info.client
                and event.connection.broker == info.broker
                and event.correlation_id == correlation_id
            ):
                return event
    return None


def between(packets: Iterator[Any], first: int, last: int) -> Iterator[Any]:
    for packet in packets:
        if packet.index > last:
            return
        if packet.index >= first:
            yield packet


def opened_at(path: Path, offsets: list[int], first: int, last: int | None = None) -> CaptureFile:
    """The capture, positioned at the checkpoint before packet `first` when it is a plain pcap file; with `last`,
    read no further than the checkpoint after it (a chunk of the file, not a megabyte, for a few packets)."""
    source = open_capture(path)
    checkpoint = (first - 1) // CHECKPOINT
    if source.format != "pcap" or source.compression is not None or checkpoint >= len(offsets) or checkpoint == 0:
        return source
    source.close()
    raw = open(path, "rb")
    prefix = raw.read(PCAP_HEADER)
    after = len(offsets) if last is None else (last - 1) // CHECKPOINT + 1
    stop = offsets[after] if after < len(offsets) else None
    return CaptureFile(raw, str(path), first=offsets[checkpoint], prefix=prefix, index_base=checkpoint * CHECKPOINT, stop=stop)
