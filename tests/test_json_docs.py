"""docs/json.md shows what the code emits: every example there is regenerated from its capture and compared.

Each example block is preceded by a marker naming where it comes from:

    <!-- example: CAPTURE SELECTOR [drop=PACKET] -->

CAPTURE may be several joined by `+`, read as one (capture/merge.py, kdissect/taps/). SELECTOR is `exchange=N`,
`connection=N`, `notice=N` (the N-th notice, 1-based), `record=N` (the N-th line of
`kdissect records --json`), `finding=N` (the doctor's N-th finding, 1-based), `verdict=1` (the doctor's verdict),
`stats=TABLE` or `api=KEY`
(`kdissect schema --json`, whatever the capture); `drop=P`
removes packet P before dissecting (to show a gap). `python tests/test_json_docs.py` rewrites the examples.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kdissect.capture.merge import open_captures
from kdissect.decode.streamed import exchange_records
from kdissect.dissector import Options, make_dissector
from kdissect.doctor.engine import Doctor
from kdissect.events import ConnectionEnd, Exchange, Notice
from kdissect.schema import BUILTIN
from kdissect.taps.dissector import tapped
from kdissect.values.reader import ValueReader
from kdissect.views import json_lines
from kdissect.views.schema_table import rows as schema_rows
from kdissect.views.stats import Stats

DOC = ROOT / "docs" / "json.md"
MARKER = re.compile(r"<!-- example: (\S+) (\w+)=(\S+)(?: drop=(\d+))? -->\n```json\n(.*?)\n```", re.S)


def generate(capture: str, kind: str, which: str, drop: str | None) -> dict:
    core = make_dissector(Options())
    here = os.getcwd()
    os.chdir(ROOT)  # the captures' names as the document gives them, which several captures' JSON shows
    try:
        with open_captures(capture.split("+")) as source:
            source.secrets_to(core.add_tls_keylog)  # a pcapng's own TLS secrets, as the commands use them
            packets = [p for p in source.packets() if drop is None or p.index != int(drop)]
            dissector = tapped(core, source, Options().limits)
    finally:
        os.chdir(here)
    events = list(dissector.run(packets))
    if kind == "exchange":
        return json_lines.exchange_json(next(e for e in events if isinstance(e, Exchange) and e.id == int(which)))
    if kind == "connection":
        return json_lines.connection_end_json(next(e for e in events if isinstance(e, ConnectionEnd) and e.connection.id == int(which)))
    if kind == "notice":
        return json_lines.notice_json([e for e in events if isinstance(e, Notice)][int(which) - 1])
    values = ValueReader()  # what the capture itself teaches: its _schemas records
    if kind == "record":
        streamed = [r for e in events if isinstance(e, Exchange) for r in exchange_records(e, values=values)]
        return json_lines.streamed_record_json(streamed[int(which) - 1])
    if kind == "api":
        return next(row for row in schema_rows(BUILTIN) if row["api_key"] == int(which))
    if kind in ("finding", "verdict"):
        doctor = Doctor()
        for event in events:
            doctor.add(event)
        if kind == "verdict":
            return json_lines.verdict_json(doctor.report())
        return json_lines.finding_json(doctor.findings()[int(which) - 1])
    stats = Stats(values)
    for event in events:
        if isinstance(event, Exchange):
            stats.add(event)
        elif isinstance(event, ConnectionEnd):
            stats.add_connection(event)
    rows = dict(stats.tables())[which]
    return {"type": "stats", "layout": json_lines.LAYOUT, "table": which, "rows": rows}


def examples() -> list[tuple[str, str, str, str | None, str]]:
    return MARKER.findall(DOC.read_text())


def test_the_document_has_an_example_of_every_shape():
    kinds = {kind for _, kind, _, _, _ in examples()}
    assert kinds == {"exchange", "connection", "notice", "record", "stats", "api", "finding", "verdict"}


@pytest.mark.parametrize("capture,kind,which,drop,shown", examples(), ids=lambda v: v if isinstance(v, str) and len(v) < 40 else "")
def test_documented_example_is_what_the_code_emits(capture, kind, which, drop, shown):
    assert json.loads(shown) == generate(capture, kind, which, drop or None)


def rewrite() -> None:
    def fill(match: re.Match) -> str:
        capture, kind, which, drop, _ = match.groups()
        text = json.dumps(generate(capture, kind, which, drop), indent=2, ensure_ascii=False)
        head = match.group(0).split("\n", 1)[0]
        return f"{head}\n```json\n{text}\n```"

    DOC.write_text(MARKER.sub(fill, DOC.read_text()))


if __name__ == "__main__":
    rewrite()
