"""`kdissect anonymize`: the same capture with nothing of its owner's in it, in two passes over it.

The first pass is the core's: every exchange decoded, and each frame written again anonymized (rewrite/bodies.py)
into a store on disk (rewrite/units.py); SASL exchanges are written as nothing. The second reads the packets again
and restreams every Kafka connection (rewrite/restream.py): each frame's new bytes go out in the packet that
completed the old ones, so times and latencies stay; TLS connections the key log opens go out in the clear, the
others not at all; anything that is not a Kafka connection is left out. Addresses are renumbered throughout.

A frame the capture holds only part of cannot be read to be anonymized: it is left out, and the report counts it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from kdissect.capture.packet import Packet
from kdissect.dissector import Options, file_dissector
from kdissect.events import ConnectionEnd, Endpoint, Exchange
from kdissect.net.flow_key import flow_key, key_addresses
from kdissect.rewrite.addresses import Renumbering
from kdissect.rewrite.bodies import Anonymizer, filler
from kdissect.rewrite.placement import Conversations, Track
from kdissect.rewrite.pseudonyms import Pseudonyms
from kdissect.rewrite.restream import Pair, Pairs, Restream, restreamed
from kdissect.rewrite.tls_records import Opened, RecordTransform, TlsRecords
from kdissect.rewrite.units import Units
from kdissect.schema import ApiKey
from kdissect.taps.dissector import tapped
from kdissect.taps.joined import joined
from kdissect.tls.keylog import KeyLog, own_key_log
from kdissect.tls.records import APPLICATION_DATA

SASL = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
WHOLE = 1 << 40
"""The record and array bounds of the first pass: a record or element left undecoded could not be written again."""
CLIENT, BROKER = 0, 1


@dataclass
class Report:
    """What an anonymization wrote and left out."""

    packets: int = 0
    connections: int = 0
    exchanges: int = 0
    sasl_removed: int = 0
    incomplete_frames: int = 0
    """Frames the capture holds only part of: left out."""
    tls_in_the_clear: int = 0
    tls_left_out: int = 0
    """TLS connections no key opened: left out, with everything they carried."""
    other_connections: int = 0
    """TCP connections that carried no Kafka: left out."""
    names: Pseudonyms = field(default_factory=Pseudonyms)


@dataclass(frozen=True, slots=True)
class Kept:
    """A Kafka connection the second pass writes."""

    client: Endpoint
    tls: bool


def anonymize(reopen: Callable[[], Any], options: Options, write: Callable[[Packet], None], drop_values: bool) -> Report:
    """Anonymize the capture (or captures read as one, capture/merge.py) that `reopen()` opens, twice, through
    `write`, with the core's `options` (ports, key log, catalogue); record keys, values and header values are emptied
    with `drop_values`, else filled."""
    report = Report()
    limits = replace(
        options.limits,
        max_records_batch=WHOLE,
        max_records_exchange=WHOLE,
        max_records_capture=WHOLE,
        max_array_elements=WHOLE,
    )
    options = replace(options, limits=limits, keep=None, decode=True, show_secrets=False)
    with tempfile.TemporaryDirectory(prefix="kdissect-anonymize-") as folder:
        units = Units(folder)
        try:
            _reserve_addresses(reopen, report.names)
            kept = _first_pass(reopen, options, units, report, drop_values)
            units.done()
            _second_pass(reopen, options, units, kept, report, write)
        finally:
            units.close()
    return report


def _reserve_addresses(reopen: Callable[[], Any], names: Pseudonyms) -> None:
    """Every address the capture's packets carry, reserved before the first pseudonym is made: a host named early (a
    broker's advertised address) could otherwise take as pseudonym the address of a connection opened later."""
    keys = set()
    with reopen() as source:
        for packet in source.packets():
            keys.add(flow_key(packet.linktype, packet.data))
    for key in keys:
        ends = key_addresses(key) if key is not None else None
        if ends is not None:
            names.reserve(ends[0])
            names.reserve(ends[1])


def _first_pass(reopen: Callable[[], Any], options: Options, units: Units, report: Report, drop_values: bool) -> dict[int, Kept]:
    anonymizer = Anonymizer(options.catalog, report.names, filler(drop_values))
    kept: dict[int, Kept] = {}
    with reopen() as source:
        for event in tapped(file_dissector(source, options), source, options.limits).run(source.packets()):
            if isinstance(event, Exchange):
                _exchange(event, anonymizer, units, report)
            elif isinstance(event, ConnectionEnd):
                info = event.connection
                if info.tls is not None and info.tls.secret is None:
                    report.tls_left_out += 1
                    continue
                kept[info.id] = Kept(info.client, info.tls is not None)
                report.tls_in_the_clear += info.tls is not None
    return kept


def _exchange(exchange: Exchange, anonymizer: Anonymizer, units: Units, report: Report) -> None:
    """Store the exchange's frames anonymized; a SASL exchange's as nothing."""
    sasl = exchange.sasl_token or exchange.api_key in SASL
    report.sasl_removed += sasl
    report.exchanges += not sasl
    connection = exchange.connection.id
    for side, message in ((CLIENT, exchange.request), (BROKER, exchange.response)):
        if message is None:
            continue
        frame = message.frame
        if frame.lost:
            report.incomplete_frames += 1
            continue
        if sasl:
            data = b""
        elif side == CLIENT:
            data = anonymizer.request(message)
        else:
            data = anonymizer.response(message, exchange.request)
        units.add(connection, side, frame.offset, frame.offset + 4 + frame.size, data)


def _second_pass(
    reopen: Callable[[], Any],
    options: Options,
    units: Units,
    kept: dict[int, Kept],
    report: Report,
    write: Callable[[Packet], None],
) -> None:
    keys = own_key_log(options.tls_keylog)
    renumbering = Renumbering(report.names)
    conversations = Conversations(options.limits)
    others: set[int] = set()

    def made(track: Track) -> Pair:
        report.connections += 1
        return _restreams(track, kept[track.id], units, keys, options)

    pairs = Pairs(conversations, made)
    with reopen() as source:

        def learn(text: bytes) -> None:
            keys.add(text)  # the secrets a pcapng embeds, as they come

        source.secrets_to(learn)
        for packet in joined(source, options.limits):
            placed = conversations.place(packet)
            if placed is None:
                continue
            if placed.track.id not in kept:
                others.add(placed.track.id)
                continue
            pair = pairs.of(placed.track)
            if pair is None:
                continue
            for out in restreamed(placed, pair, renumbering):
                write(out)
                report.packets += 1
    report.other_connections = len(others) - report.tls_left_out


def _restreams(track: Track, connection: Kept, units: Units, keys: KeyLog, options: Options) -> tuple[Restream, Restream]:
    """A kept connection's two directions in the track's order, each writing its side's stored frames."""
    client = track.direction_from(connection.client)
    sides = (CLIENT, BROKER) if client == 0 else (BROKER, CLIENT)
    records = TlsRecords(keys) if connection.tls else None
    made = []
    for side in sides:
        frames = Frames(units.stream(track.id, side))
        made.append(Restream(frames if records is None else InTheClear(records, side, frames), options.limits))
    return made[0], made[1]


class Frames:
    """The `Transform` of a plaintext direction: as the stream passes the end of a stored frame, its new bytes."""

    def __init__(self, stored: Iterator[tuple[int, int, bytes]]) -> None:
        self._stored = stored
        self._next = next(stored, None)
        self._offset = 0

    def data(self, chunk: bytes) -> bytes:
        self._offset += len(chunk)
        return self._passed()

    def gap(self, length: int) -> None:
        self._offset += length
        self._passed()  # frames a gap runs through were left out by the first pass; nothing of them is stored

    def _passed(self) -> bytes:
        out = b""
        while self._next is not None and self._next[1] <= self._offset:
            out += self._next[2]
            self._next = next(self._stored, None)
        return out


class InTheClear(RecordTransform):
    """The transform of a TLS direction the key log opens: its records opened, their Kafka bytes handed to the
    direction's `Frames`; handshake records, alerts and the TLS framing itself are left out. Records the capture
    lost took their frames with them (the first pass left those out)."""

    def __init__(self, records: TlsRecords, side: int, frames: Frames) -> None:
        super().__init__(records, side)
        self.frames = frames

    def record(self, opened: Opened) -> None:
        if opened.inner == APPLICATION_DATA and opened.content is not None and opened.cipher is not None:
            self.out += self.frames.data(opened.content)
