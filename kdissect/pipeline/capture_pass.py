"""One capture read whole in one pass, its packets dealt to a dissector per connection key (demux.py): the events
made into the tables' rows (table_rows.py), judged by the doctor, or both.

`kdissect tables` makes a capture's rows and findings in one such pass; Spark makes the rows on its core stage,
the capture cut in ranges and its keys spread over tasks, and the findings in a pass of this kind per capture
(findings.FindingsStage). The capture is read by the reader Spark's ranges use (`CaptureFile`, as reader.py opens
a whole range), so packets, offsets and file diagnostics are the same.

`kdissect tables --jobs N` reads a capture in N such passes at once, each making the rows of its share of the
connection keys (demux.Share); the judged one, which dissects every key, also makes the capture's own rows (its
file diagnostics, its packet count) and names every topic id its connections named.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any, BinaryIO

from kdissect.capture.oddities import Oddity
from kdissect.capture.source import CaptureError, CaptureFile
from kdissect.doctor.engine import Doctor
from kdissect.events import Event
from kdissect.pipeline.config import decoder_of, filter_of, options_of, values_of
from kdissect.pipeline.demux import EVERY_KEY, ConnectionDemux, Keyed, Share
from kdissect.pipeline.findings import finding_rows
from kdissect.pipeline.reader import merge_oddities, oddities_json, open_path
from kdissect.pipeline.table_rows import TableRows


class CapturePass:
    """One capture (`path`, file `file_id` of the job's `config`) into `rows` (None: no rows) of the keys of
    `share` and, when `judged`, the doctor's findings (`findings` once `run` is over)."""

    def __init__(
        self, config: dict[str, Any], file_id: int, path: str, rows: TableRows | None, judged: bool, share: Share = EVERY_KEY
    ) -> None:
        self.path = path
        self.rows = rows
        options = options_of(config)
        values = values_of(config)
        wanted = filter_of(config, options.catalog, values)
        self.doctor = Doctor(wanted=wanted, values=values) if judged else None
        if self.doctor is None:
            options = replace(options, keep=wanted.keep)  # the doctor reads every body, whatever the filter shows
        secrets = config.get("tls_secrets", {}).get(str(file_id), b"")
        self.demux = ConnectionDemux(options, decoder_of(config, options), secrets, numbered=judged, share=share)
        self.topics: dict[str, str] = {}
        """Every topic id named on the capture's connections: the job names the rest of the tables' topics with them."""
        self.findings: list[dict[str, Any]] = []

    def run(self, opener: Callable[[str], BinaryIO] = open_path, stopping: Callable[[], bool] = lambda: False) -> bool:
        """Read the capture; False when `stopping` said to stop before its end (nothing is then finished)."""
        name = os.path.basename(self.path.rstrip("/")) or self.path
        raw = opener(self.path)
        try:
            try:
                capture = CaptureFile(raw, name)
            except CaptureError as exc:
                self._file_diagnostics([Oddity("capture.unreadable", str(exc), 0, "error", 1)])
                return True
            except (OSError, EOFError, ValueError) as exc:
                self._file_diagnostics([Oddity("capture.unreadable", f"{name}: cannot read: {exc}", 0, "error", 1)])
                return True
            feed = self.demux.feed
            for packet in capture.packets():
                dealt = feed(packet)
                if dealt is not None and dealt[1]:
                    self._events(*dealt)
                if stopping():
                    return False
            for keyed, events in self.demux.finish():
                self._events(keyed, events)
                self.topics.update(keyed.rows.names)
                if stopping():  # between keys too: a capture whose connections stay open ends with all their rows
                    return False
            self._file_diagnostics(capture.oddities())
        finally:
            raw.close()
        if self.rows is not None and self.doctor is not None:
            self.rows.stats["packets"] += self.demux.packets
        if self.doctor is not None:
            demux = self.demux
            self.findings = list(finding_rows(self.doctor.findings(), self.path, demux.exchange_ids, demux.connection_ids))
        return True

    def _events(self, keyed: Keyed, events: list[Event]) -> None:
        if self.rows is not None and keyed.mine:
            self.rows.add(events, self.path, keyed.rows)
        doctor = self.doctor
        if doctor is not None:
            for event in events:
                doctor.add(self.demux.for_doctor(keyed, event))

    def _file_diagnostics(self, entries: list[Oddity]) -> None:
        """As the Spark job adds up its ranges' (reader.merge_oddities), for a capture read in one range; by the
        judged pass only, when several share the capture."""
        if self.rows is not None and self.doctor is not None:
            self.rows.file_diagnostics(merge_oddities([oddities_json(entries)]).diagnostics(), self.path)
