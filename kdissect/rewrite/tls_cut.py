"""A chosen TLS connection's direction in a cut: record by record, what the same key log opens again.

Records in the clear (the hellos, ChangeCipherSpec) are kept as they were; sealed handshake messages (Finished,
tickets, KeyUpdate) and alerts are kept; application data keeps the chosen plaintext bytes only, and a record left
with none is dropped. A record's sequence number is its place in its key's epoch, so once one record of an epoch is
dropped, every later kept record of that epoch is sealed again at the number it now has, with the same key: a reader
of the cut opens them with the key log it was given. Records that nothing changed go out as captured.
"""

from __future__ import annotations

import struct

from kdissect.rewrite.spans import Spans
from kdissect.rewrite.tls_records import Opened, RecordTransform, TlsRecords
from kdissect.tls.records import APPLICATION_DATA

_HEADER = struct.Struct(">BHH").pack


class TlsCutError(Exception):
    """The TLS connection cannot be cut (its stream lost bytes, or a record that must be sealed again cannot be
    opened); the message is one line for the user."""


class SealedCut(RecordTransform):
    """The transform of one side of a TLS connection in a cut."""

    def __init__(self, records: TlsRecords, side: int, spans: Spans, connection: int) -> None:
        super().__init__(records, side)
        self.spans = spans
        self.connection = connection
        self.plaintext = 0
        """Application bytes opened so far: the offsets the core's exchanges (and so the spans) count in."""
        self.next_seq: dict[int, int] = {}
        """Per epoch, the sequence number the next kept record has in the cut."""
        self.moved: set[int] = set()
        """Epochs where a record was dropped or shortened: later records there are sealed at new numbers."""

    def record(self, opened: Opened) -> None:
        if opened.content is None or opened.cipher is None:
            self._as_captured(opened)
            return
        content = opened.content
        if opened.inner == APPLICATION_DATA:
            start = self.plaintext
            self.plaintext += len(content)
            content = b"".join(content[lo - start : hi - start] for lo, hi in self.spans.kept(start, self.plaintext))
            if not content:
                self.moved.add(opened.epoch)
                return
        seq = self.next_seq.get(opened.epoch, 0)
        self.next_seq[opened.epoch] = seq + 1
        if seq == opened.seq and content == opened.content:
            self.out += _HEADER(opened.ctype, opened.version, len(opened.fragment)) + opened.fragment
            return
        self.moved.add(opened.epoch)
        inner = content + bytes([opened.inner]) if self.records.tls13 else content
        sealed = opened.cipher.seal(seq, opened.ctype, opened.version, inner)
        self.out += _HEADER(opened.ctype, opened.version, len(sealed)) + sealed

    def _as_captured(self, opened: Opened) -> None:
        """A record in the clear, or sealed under a key the key log lacks (a TLS 1.3 handshake record): kept as it is,
        which needs its sequence number to be unchanged."""
        if opened.content is None and opened.epoch in self.moved:
            raise TlsCutError(f"connection {self.connection}: a TLS record no key opens would have to move; it cannot be cut")
        self.out += _HEADER(opened.ctype, opened.version, len(opened.fragment)) + opened.fragment

    def lost(self, records: int | None, length: int, offset: int, ts: int) -> None:
        raise TlsCutError(f"connection {self.connection}: its TLS stream lost {length} bytes in the capture, so it cannot be cut")

    def skipped(self, length: int, offset: int) -> None:
        raise TlsCutError(f"connection {self.connection}: {length} bytes of its TLS stream are no record, so it cannot be cut")
