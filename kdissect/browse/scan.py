"""Passes over the capture file: every exchange (for the index, a filter, a written set) and one exchange on demand.

The index keeps no bodies. To show one, its connection's packets from its request's first to its response's last
are read again (from the nearest checkpoint of the file's packet offsets, for a plain pcap; from the start
otherwise) and dissected on their own: the connection is then picked up mid-stream, which the core is built for. What earlier
messages taught the decoder (topic names of topic ids, a connection's SASL mechanism and group protocols) comes
from the pass that built the index.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from kdissect.capture import open_capture
from kdissect.capture.packet import Packet
from kdissect.capture.source import CaptureFile
from kdissect.diagnostic import Diagnostic
from kdissect.dissector import MAKE, Options, file_dissector
from kdissect.events import ConnectionInfo, Event, Exchange
from kdissect.net.malformed import Malformed
from kdissect.net.segments import SegmentDecoder

CHECKPOINT = 64
"""The file offset of one packet in this many is kept, so a body can be re-read without reading from the start."""
PCAP_HEADER = 24


def events(
    path: Path,
    options: Options,
    packets: list[int] | None = None,
    decoder: Any = MAKE,
    ended: Callable[[int, list[Diagnostic]], Any] | None = None,
) -> Iterator[Event]:
    """Every event of the capture; `packets`, when given, collects the file offset of every CHECKPOINT-th packet;
    `ended` is told, once the last event is out, how many packets the file held and its own diagnostics."""
    with open_capture(path) as source:
        feed = source.packets()
        if packets is not None:
            feed = checkpointed(feed, packets)
        dissector = file_dissector(source, options, decoder)
        yield from dissector.run(feed)
        if ended is not None:
            ended(dissector.counters.packets, source.diagnostics())


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
    for event in connection_exchanges(path, options, offsets, row.connection, first, row.last_packet, decoder):
        if event.correlation_id == row.correlation_id:
            return event
    return None


def connection_exchanges(
    path: Path, options: Options, offsets: list[int], info: ConnectionInfo, first: int, last: int, decoder: Any
) -> Iterator[Exchange]:
    """The exchanges of connection `info` whose frames lie between packets `first` and `last`, read again from the
    file (from the checkpoint before `first` to the one after `last`) and dissected alone, every body decoded by
    `decoder`: a body on demand here, the exchanges a capture's index answers with (index/answer.py)."""
    ends = (info.client, info.broker)
    with _opened_at(path, offsets, first, last) as source:
        packets = _of(info, _between(source.packets(), first, last), options.limits.max_fragment_bytes)
        for event in file_dissector(source, replace(options, keep=None), decoder).run(packets):
            if type(event) is Exchange and (event.connection.client, event.connection.broker) == ends:
                yield event


def _of(info: ConnectionInfo, packets: Iterator[Packet], fragments: int) -> Iterator[Packet]:
    """The packets of one connection: the others' would cost the core their reassembly, and their responses, met
    without their requests, a guess at every API they could answer."""
    client, broker = (_packed(e.address) for e in (info.client, info.broker))
    ends = {(client, info.client.port, broker, info.broker.port), (broker, info.broker.port, client, info.client.port)}
    segments = SegmentDecoder(fragments)
    for packet in packets:
        try:
            segment = segments.decode(packet)
        except Malformed:
            continue
        if segment is not None and (segment.src, segment.sport, segment.dst, segment.dport) in ends:
            yield packet


def _packed(address: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6 if ":" in address else socket.AF_INET, address)


def _between(packets: Iterator[Any], first: int, last: int) -> Iterator[Any]:
    for packet in packets:
        if packet.index > last:
            return
        if packet.index >= first:
            yield packet


def _opened_at(path: Path, offsets: list[int], first: int, last: int | None = None) -> CaptureFile:
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
