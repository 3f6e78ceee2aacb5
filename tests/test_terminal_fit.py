"""What a person sees on a real terminal, 80×24 and 200×50: kdissect run on a pseudo-terminal, its bytes played
on a terminal emulator (pyte). No line is wider than the terminal, and the progress bar, drawn while reading,
leaves nothing behind and never lands inside the output."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rich.cells import cell_len

pyte = pytest.importorskip("pyte", reason="the terminal tests play the output on pyte: pip install pyte")

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "captures" / "consumer-group-confluent.pcap"
SHIM = "import sys; from kdissect.cli import main; main(sys.argv[1:])"
SIZES = [(80, 24), (200, 50)]
CONTROL = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]")


def on_terminal(args: list, cols: int, rows: int, stdout=None, status: int = 0) -> bytes:
    """Run kdissect with standard error (and standard output unless given) on a cols×rows pseudo-terminal; all
    it wrote there."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    process = subprocess.Popen(
        [sys.executable, "-c", SHIM, *map(str, args)], stdin=slave, stdout=stdout or slave, stderr=slave, env=env, cwd=ROOT
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the program closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert process.wait(timeout=300) == status
    return b"".join(chunks)


def physical_lines(data: bytes) -> list[str]:
    """What the program wrote between line breaks and carriage returns, control sequences removed."""
    return [piece.decode("utf-8", "replace") for piece in re.split(rb"\r\n|\n|\r", CONTROL.sub(b"", data))]


def screen(data: bytes, cols: int) -> list[str]:
    """The terminal's contents at the end, on a screen tall enough to keep every line."""
    shown = pyte.Screen(cols, 20000)
    pyte.ByteStream(shown).feed(data)
    return [line.rstrip() for line in shown.display]


def assert_fits(data: bytes, cols: int) -> list[str]:
    wide = [line for line in physical_lines(data) if cell_len(line) > cols]
    assert not wide, f"{len(wide)} lines wider than {cols} columns, e.g. {wide[0]!r}"
    lines = screen(data, cols)
    assert not any("reading" in line for line in lines), "the progress bar is still on the screen"
    return lines


@pytest.mark.parametrize("cols,rows", SIZES)
def test_read_with_progress_fits_and_leaves_no_bar(many_connections, cols, rows):
    data = on_terminal(["read", many_connections, "--api", "JoinGroup"], cols, rows)
    assert b"reading" in data  # the bar was drawn while the rows were printing
    lines = assert_fits(data, cols)
    rows_shown = [line for line in lines if "JoinGroup v7 " in line and line.lstrip()[:1].isdigit()]
    assert len(rows_shown) == 1800  # six JoinGroups a copy, each on one line of its own
    assert any(line.startswith("Flows") for line in lines) and any(line.startswith("Errors") for line in lines)
    header = next(line for line in lines if line.lstrip().startswith("# "))
    assert ("completed (UTC)" if cols >= 100 else "completed") in header


@pytest.mark.parametrize("cols,rows", SIZES)
def test_stats_keeps_api_names_whole_and_fits(cols, rows):
    lines = assert_fits(on_terminal(["stats", CAPTURE], cols, rows), cols)
    assert any("│ OffsetCommit " in line for line in lines) and any("│ OffsetFetch " in line for line in lines)
    assert any("│ GetTelemetrySubscriptions " in line for line in lines)


@pytest.mark.parametrize("cols,rows", SIZES)
def test_flows_name_the_broker_by_address_and_port(cols, rows):
    lines = assert_fits(on_terminal(["read", CAPTURE], cols, rows), cols)
    assert any("127.0.0.1:33600 → 127.0.0.1:9092" in line for line in lines)


@pytest.mark.parametrize("cols,rows", SIZES)
def test_show_fits(cols, rows):
    lines = assert_fits(on_terminal(["show", ROOT / "captures" / "produce-codecs-kafka-python.pcap", "--exchange", "15"], cols, rows), cols)
    assert lines[0].startswith("Exchange 15")
    words = " ".join(line.replace("│", " ").replace("├──", " ").replace("└──", " ") for line in lines).split()
    assert "003; gzip value 003; '" in " ".join(words)  # record values wrap inside the tree, never cut at the edge
    assert "1f… (256 bytes)" in " ".join(words)


def test_output_to_a_file_holds_no_progress_and_the_terminal_ends_clean(many_connections, tmp_path):
    """`kdissect stats big.pcap > st.txt` on a terminal: the bar on the terminal while reading, then gone; the
    file holds the tables alone."""
    target = tmp_path / "st.txt"
    with open(target, "wb") as out:
        data = on_terminal(["stats", many_connections], 80, 24, stdout=out)
    assert b"reading" in data
    assert [line for line in screen(data, 80) if line] == []
    text = target.read_text()
    assert text.startswith("APIs") and "\x1b" not in text and "reading" not in text


@pytest.mark.parametrize(
    "command", [["doctor", "doctor-rebalance-storm.pcap"], ["show", "produce-codecs-kafka-python.pcap", "--exchange", "15"]]
)
def test_a_pager_gets_text_laid_out_for_the_terminal(command):
    """`kdissect doctor F | less` on an 80-column terminal: standard output is a pipe, standard error the terminal;
    the lines fit the terminal the pager shows them on, and carry no colour."""
    read, write = os.pipe()
    with os.fdopen(read, "rb") as pipe:
        args = [command[0], ROOT / "captures" / command[1], *command[2:]]
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
        process = subprocess.Popen([sys.executable, "-c", SHIM, *map(str, args)], stdout=write, stderr=slave, env=env, cwd=ROOT)
        os.close(write)
        os.close(slave)
        text = pipe.read().decode()
        os.close(master)
    assert process.wait(timeout=300) == 0
    lines = text.splitlines()
    assert len(lines) > 10 and max(cell_len(line) for line in lines) <= 80 and "\x1b" not in text


@pytest.mark.parametrize("cols,rows", [(80, 24), (120, 40), (200, 50)])
def test_the_live_screen_fits_the_terminal(cols, rows):
    from outputs import ViewOutput
    from rich.console import Console

    from kdissect.capture import open_capture
    from kdissect.dissector import Options, make_dissector
    from kdissect.filter import EVERYTHING
    from kdissect.views.live_view import LiveView
    from kdissect.views.sink import EventSink

    console = Console(width=cols, height=rows, record=True, file=open(os.devnull, "w"), force_terminal=True)
    screen = ViewOutput(command="live")
    sink = EventSink(EVERYTHING, screen)
    view = screen.view = LiveView(console, sink.summary, "lo", 1, "tcp port 9092")
    with open_capture(CAPTURE) as source:
        for event in make_dissector(Options()).run(source.packets()):
            sink.add(event)
    console.print(view.render())
    lines = console.export_text().splitlines()
    assert len(lines) <= rows and all(cell_len(line) <= cols for line in lines)
    assert any("Latest exchanges" in line for line in lines)


def test_standard_input_on_a_terminal_is_no_capture():
    """`kdissect read -` typed without a pipe: one line, instead of waiting for a capture from the keyboard."""
    data = on_terminal(["read", "-"], 200, 24, status=2)
    expected = "kdissect: error: standard input is a terminal, not a capture: pipe one in (tcpdump -U -w - | kdissect read -)"
    assert screen(data, 200)[0] == expected
