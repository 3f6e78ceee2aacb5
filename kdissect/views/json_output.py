"""The json format: one compact JSON object per line (NDJSON), for scripts and jq (layout: docs/json.md)."""

from __future__ import annotations

from typing import IO, Any

from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.views.json_lines import (
    LAYOUT,
    JsonLinesWriter,
    connection_end_json,
    finding_json,
    notice_json,
    streamed_record_json,
    verdict_json,
)
from kdissect.views.output import Closing, Output, Settings


class JsonOutput(Output):
    def __init__(self, stream: IO[str], settings: Settings) -> None:
        super().__init__(stream, settings)
        self.writer = JsonLinesWriter(stream, flush_each=settings.live is not None, values=settings.values)
        """A live session's lines reach the reader at once."""

    def exchange(self, exchange: Exchange) -> None:
        self.writer.write_exchange(exchange)

    def record(self, record: Any) -> None:
        self.writer.write(streamed_record_json(record))

    def notice(self, event: Notice | ConnectionEnd) -> None:
        if self.settings.all_events:
            self.writer.write(notice_json(event) if isinstance(event, Notice) else connection_end_json(event))

    def finding(self, finding: Any) -> None:
        self.writer.write(finding_json(finding))

    def raw(self, data: bytes) -> None:
        self.writer.raw(data)

    def end(self, closing: Closing) -> None:
        """`stats` ends with one object per table, its findings a table too; `live` with one object per finding; both,
        and `doctor`, with the verdict."""
        report = closing.report
        if closing.stats is not None:
            for name, rows in closing.stats.tables():
                self.writer.write({"type": "stats", "layout": LAYOUT, "table": name, "rows": rows})
            findings = [finding_json(f) for f in report.findings] if report is not None else []
            self.writer.write({"type": "stats", "layout": LAYOUT, "table": "findings", "rows": findings})
        elif report is not None and self.settings.command == "live":
            for finding in report.findings:
                self.finding(finding)
        for row in closing.schemas or ():
            self.writer.write({"type": "schema", "layout": LAYOUT, **{k: v for k, v in row.items() if k != "type"}})
        if report is not None:
            self.writer.write(verdict_json(report))
        self.stream.flush()
