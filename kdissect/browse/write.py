"""`w` in the browser: the exchanges on the list written to a pcap or NDJSON (`read --json`'s layout).

A pcap gets every packet from each exchange's first to its last: frames of other exchanges interleaved there
come along (a packet can carry several), so reading the file back with the same filter gives the same exchanges.
"""

from __future__ import annotations

from bisect import bisect_right
from pathlib import Path

from kdissect.browse.scan import events
from kdissect.capture import open_capture
from kdissect.capture.writer import PcapWriter
from kdissect.dissector import Options
from kdissect.events import Exchange
from kdissect.views.json_lines import JsonLinesWriter

JSON_SUFFIXES = (".ndjson", ".jsonl", ".json")
PAGE_SUFFIXES = (".html", ".htm")
"""The report page (`kdissect report`'s) of what the list shows: report/build.py writes it."""


def write_set(out: Path, path: Path, options: Options, ids: list[int], packets: list[tuple[int, int]]) -> int:
    """Write the exchanges `ids` of the capture at `path`, whose frames span the packets `packets` (first, last);
    the format follows the name's suffix. Returns how many were written (packets for a pcap, exchanges for
    NDJSON). OSError and ValueError name what went wrong."""
    if out.suffix.lower() in JSON_SUFFIXES:
        wanted = set(ids)
        written = 0
        with open(out, "w", encoding="utf-8") as stream:
            lines = JsonLinesWriter(stream)
            for event in events(path, options):
                if isinstance(event, Exchange) and event.id in wanted:
                    lines.write_exchange(event)
                    written += 1
        return written
    if out.suffix.lower() not in (".pcap", ".cap"):
        raise ValueError(f"{out.name}: give a name ending in .pcap, .ndjson, .jsonl, .json or .html")
    ranges = _merged(sorted(packets))
    starts = [first for first, _ in ranges]
    with open_capture(path) as source, open(out, "wb") as stream:
        writer: PcapWriter | None = None
        for packet in source.packets():
            at = bisect_right(starts, packet.index) - 1
            if at < 0 or packet.index > ranges[at][1]:
                continue
            if writer is None:
                writer = PcapWriter(stream, packet.linktype)
            writer.write(packet)
        return writer.packets if writer else 0


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for first, last in ranges:
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out
