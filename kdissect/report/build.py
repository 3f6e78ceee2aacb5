"""One pass that makes a report: the doctor and the page's collector fed the same events, then the page written.
`kdissect report`, `doctor --html` and the browser's `w` all make the page this way."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import IO

from kdissect.capture import open_capture
from kdissect.dissector import Options, file_dissector
from kdissect.doctor.consumers import LONG_POLL
from kdissect.doctor.engine import Doctor
from kdissect.filter import EVERYTHING, Filter
from kdissect.report.collector import Collector
from kdissect.report.page import Told, write_page


class Build:
    def __init__(self, doctor: Doctor, wanted: Filter = EVERYTHING, ladder: Filter = EVERYTHING) -> None:
        """`doctor`: made with the run's thresholds and `wanted`, the display filter; `ladder`: the ladder's episode."""
        self.doctor = doctor
        self.collector = Collector(doctor.settings(LONG_POLL, "threshold"), wanted, ladder)

    def add(self, event: object) -> bool:
        """Whether the event is an exchange the page shows."""
        self.doctor.add(event)
        return self.collector.add(event)

    def write(self, stream: IO[str], told: Told) -> None:
        write_page(stream, self.collector, self.doctor.report(), self.doctor.clients, told)


def write_report_file(out: Path, capture: Path, options: Options, wanted: Filter = EVERYTHING) -> int:
    """The page of the capture at `capture` (what `wanted` shows) written to `out`, in one pass without a progress
    display (the browser's `w` runs it in the background); returns the exchanges it shows. OSError when `out` cannot
    be written."""
    build = Build(Doctor(wanted=wanted), wanted)
    shown = 0
    with open_capture(capture) as source:
        for event in file_dissector(source, replace(options, keep=None)).run(source.packets()):  # the doctor reads every body
            shown += build.add(event)
        notes = tuple(source.diagnostics())
    with open(out, "w", encoding="utf-8") as stream:
        build.write(stream, Told((str(capture),), wanted.text, notes))
    return shown
