"""`w` in the browser: the exchanges on the list written to a capture (`-w`'s cut, rewrite/cut.py: exactly their
packets, with their connections' handshakes and closes; pcap or pcapng, compressed or not, by the name) or to NDJSON
(`read --json`'s layout)."""

from __future__ import annotations

from pathlib import Path

from kdissect.browse.scan import events
from kdissect.capture import open_capture
from kdissect.capture.destination import DestinationError
from kdissect.dissector import Options
from kdissect.events import Exchange
from kdissect.rewrite.cut import CutError, choose, cut_into
from kdissect.views.json_lines import JsonLinesWriter

JSON_SUFFIXES = (".ndjson", ".jsonl", ".json")
PAGE_SUFFIXES = (".html", ".htm")
"""The report page (`kdissect report`'s) of what the list shows: report/build.py writes it."""


def write_set(out: Path, path: Path, options: Options, ids: list[int]) -> int:
    """Write the exchanges `ids` of the capture at `path`; the format follows the name's suffix. Returns how many
    were written (packets for a capture, exchanges for NDJSON). OSError and ValueError name what went wrong."""
    wanted = set(ids)
    if out.suffix.lower() in JSON_SUFFIXES:
        written = 0
        with open(out, "w", encoding="utf-8") as stream:
            lines = JsonLinesWriter(stream)
            for event in events(path, options):
                if isinstance(event, Exchange) and event.id in wanted:
                    lines.write_exchange(event)
                    written += 1
        return written
    selection = choose(events(path, options), wanted)
    try:
        with open_capture(path) as source:
            return cut_into(out, source, selection, options.limits, options.tls_keylog).packets
    except (DestinationError, CutError) as exc:
        raise ValueError(str(exc)) from None
