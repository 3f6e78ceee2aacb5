"""Text from the wire is data, never code: every view fed client ids, topics, groups, record keys, values and header
keys that hold terminal escapes, line breaks, C1 controls, bidirectional overrides and rich markup.

Nothing a capture holds may reach the output as a control character (the escape is written visibly instead), no
markup may be interpreted (the brackets are printed as they were), no row may be forged by a line break, and no view
may fail on such text.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.printable import one_line, printable
from kdissect.testing.hostile_text import CALLS, HOSTILE, hostile_capture

ROOT = Path(__file__).resolve().parent.parent
SHIM = "import sys; from kdissect.cli import main; main(sys.argv[1:])"

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What no view may write: every control character but the line break and the tab (the fields format's separator)."""


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    return hostile_capture(tmp_path_factory.mktemp("hostile") / "hostile.pcap")


def kdissect(*args: object) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SHIM, *map(str, args)], capture_output=True, cwd=ROOT, env={**os.environ, "COLUMNS": "200"}
    )
    stderr = done.stderr.decode()
    assert done.returncode in (0, 1), stderr
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    assert not UNSAFE.search(stderr), stderr
    return done.stdout.decode("utf-8")


def assert_inert(output: str) -> None:
    """No control character from the wire, and the markup printed as text (escaped, bracket for bracket)."""
    found = UNSAFE.search(output)
    assert found is None, f"{found.group()!r} at {found.start()}: {output[max(0, found.start() - 60) : found.start() + 20]!r}"
    assert "\t" not in output
    assert "a[/x]b" in output or "a\\[/x]b" in output


VIEWS = {
    "read": ["read"],
    "read -V": ["read", "-V"],
    "stats": ["stats"],
    "doctor": ["doctor"],
    "records": ["records"],
    "show": ["show", "-Y", "id >= 1"],
    "show --hex": ["show", "--hex", "-Y", "id >= 1"],
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_every_text_view_shows_wire_text_escaped_and_never_as_markup(capture, view):
    output = kdissect(*VIEWS[view], capture)
    assert_inert(output)


def test_read_rows_are_one_line_each_and_name_every_client_escaped(capture):
    output = kdissect("read", capture)
    rows = [line for line in output.splitlines() if re.match(r"\s*\d+ ", line)]
    assert len(rows) == CALLS * len(HOSTILE)
    for text in HOSTILE:  # the client id column keeps 30 characters: a longer id loses its middle
        assert any(printable(text)[:12] in row for row in rows), text


def test_the_doctor_and_stats_name_the_hostile_client_ids_escaped(capture):
    for output in (kdissect("doctor", capture), kdissect("stats", capture)):
        assert "\\x1b]52;c;aGk=\\x07" in output


def test_fields_and_csv_keep_one_line_per_exchange_whatever_the_values_hold(capture):
    fields = kdissect("read", capture, "-T", "fields", "-e", "id", "-e", "client_id", "-e", "topic", "-e", "group")
    lines = fields.splitlines()
    assert len(lines) == CALLS * len(HOSTILE)
    assert all(line.count("\t") == 3 for line in lines)  # the separator only between the four fields
    assert not UNSAFE.search(fields.replace("\t", " "))
    assert any(printable("line\nbreak") == line.split("\t")[1] for line in lines)
    quoted = kdissect("read", capture, "-T", "fields", "-e", "client_id", "-E", "quote=d", "-E", "separator=,")
    assert len(quoted.splitlines()) == CALLS * len(HOSTILE) and not UNSAFE.search(quoted)
    spaced = kdissect("read", capture, "-T", "fields", "-e", "client_id", "-e", "id", "-E", "separator=/s")
    assert all(len(line.split(" ")) == 2 for line in spaced.splitlines())
    assert one_line("tab\there", " ") in spaced
    csv_text = kdissect("read", capture, "-T", "csv", "-e", "id", "-e", "client_id")
    assert len(csv_text.splitlines()) == 1 + CALLS * len(HOSTILE) and not UNSAFE.search(csv_text)


def test_records_without_a_format_escape_keys_values_topics_and_headers(capture):
    lines = kdissect("records", capture).splitlines()
    assert len(lines) == len(HOSTILE)  # each batch's record, produced
    assert_inert("\n".join(lines).replace("\t", " "))


def test_records_with_a_format_stay_raw_as_kcat_writes_them(capture):
    """-f is kcat's raw format on request: the key as sent, byte for byte (documented)."""
    raw = subprocess.run(
        [sys.executable, "-c", SHIM, "records", str(capture), "-f", "%k\\n", "--direction", "produce"], capture_output=True, cwd=ROOT
    ).stdout
    assert raw == b"".join(text.encode() + b"\n" for text in HOSTILE)


def test_the_live_screen_shows_wire_text_escaped(capture):
    from outputs import ViewOutput
    from rich.console import Console

    from kdissect.capture import open_capture
    from kdissect.dissector import Options, make_dissector
    from kdissect.filter import EVERYTHING
    from kdissect.views.live_view import LiveView
    from kdissect.views.sink import EventSink

    console = Console(width=200, height=60, record=True, file=open(os.devnull, "w"), force_terminal=True)
    screen = ViewOutput(command="live")
    sink = EventSink(EVERYTHING, screen)
    view = screen.view = LiveView(console, sink.summary, "lo", 1, "")
    with open_capture(str(capture)) as source:
        for event in make_dissector(Options()).run(source.packets()):
            sink.add(event)
    console.print(view.render())
    assert_inert(console.export_text())


def test_a_spec_s_hostile_names_are_shown_escaped_by_schema_check(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "XRequest.json").write_text(
        '{"apiKey": 1000, "type": "request", "name": "XRequest", "validVersions": "0", "flexibleVersions": "none",'
        ' "fields": [{"name": "A\\u001b]0;pwned\\u0007[/x]", "type": "int8", "versions": "0+"}]}'
    )
    done = subprocess.run([sys.executable, "-c", SHIM, "schema", "--check", str(folder)], capture_output=True, cwd=ROOT)
    assert done.returncode == 2
    text = done.stdout.decode() + done.stderr.decode()
    assert "\\x1b]0;pwned\\x07" in text and not UNSAFE.search(text)
