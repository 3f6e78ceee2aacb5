"""Hostile key logs (issue 36): a key log is read once, a line at a time, and holds its secrets, not its bytes; a
followed one is handed on a chunk at a time."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from kdissect.capture import open_capture
from kdissect.commands.options import read_keylog
from kdissect.dissector import Options, file_dissector
from kdissect.events import Exchange
from kdissect.tls.follow import CHUNK, POLL_BYTES, KeyLogFollower
from kdissect.tls.keylog import MAX_LINE, KeyLog, KeyLogFile

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
TLS = CAPTURES / "tls13-aes128-kafka-python.pcap"


def secret_lines(count: int) -> bytes:
    return b"".join(b"CLIENT_RANDOM %064x %096x\n" % (i, i) for i in range(count))


def test_a_large_key_log_costs_its_secrets_not_its_size(tmp_path):
    """16 MiB of lines kdissect has no use for around three secrets: the old reader held the file, then its lines,
    then parsed it all twice; this one holds a line at a time."""
    path = tmp_path / "keys.log"
    ignored = b"EXPORTER_SECRET " + b"ab" * 32 + b" " + b"cd" * 48 + b"\n"
    path.write_bytes(ignored * ((8 << 20) // len(ignored)) + secret_lines(3) + ignored * ((8 << 20) // len(ignored)))
    tracemalloc.start()
    log = read_keylog(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert isinstance(log, KeyLogFile) and (log.count.secrets, len(log)) == (3, path.stat().st_size)
    assert peak < 1 << 20


def test_each_line_is_parsed_once(tmp_path, monkeypatch):
    """From the option to the dissector: the options' key log is looked in, not read again."""
    path = TLS.with_suffix(".keylog")
    parsed: list[bytes] = []
    line = KeyLog._line
    monkeypatch.setattr(KeyLog, "_line", lambda self, raw: parsed.append(raw) or line(self, raw))
    options = Options(tls_keylog=read_keylog(path))
    with open_capture(TLS) as capture:
        decrypted = [e for e in file_dissector(capture, options).run(capture.packets()) if isinstance(e, Exchange)]
    assert len(parsed) == len(path.read_bytes().splitlines())
    with open_capture(TLS) as capture:
        from_text = [
            e for e in file_dissector(capture, Options(tls_keylog=path.read_bytes())).run(capture.packets()) if isinstance(e, Exchange)
        ]
    assert [(e.id, e.api_key, e.status) for e in decrypted] == [(e.id, e.api_key, e.status) for e in from_text] and decrypted


def test_a_line_longer_than_any_key_log_line_is_read_past(tmp_path):
    path = tmp_path / "keys.log"
    path.write_bytes(secret_lines(1) + b"CLIENT_RANDOM " + b"a" * (10 << 20) + b"\n" + secret_lines(2)[len(secret_lines(1)) :])
    tracemalloc.start()
    log = KeyLogFile(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (log.count.secrets, log.count.malformed) == (2, 1) and peak < 64 * MAX_LINE


def test_the_secrets_travel_as_key_log_lines():
    """What the Spark job sends its executors: the secrets kept, read back the same."""
    first = KeyLog()
    first.add(secret_lines(5) + b"# a comment\nRSA x y\n")
    again = KeyLog()
    assert again.add(first.text()).secrets == 5 and again.secrets == first.secrets


def test_a_followed_key_log_is_handed_on_a_chunk_at_a_time(tmp_path):
    """40 MiB appended while a live session runs: each poll hands on at most POLL_BYTES, in whole lines of at most
    CHUNK bytes at a time, and the polls together hand on every line once."""
    path = tmp_path / "keys.log"
    path.write_bytes(b"")
    handed: list[bytes] = []
    follower = KeyLogFollower(path, 0, handed.append)
    lines = secret_lines(200_000)
    path.write_bytes(lines)
    polls = 0
    while follower.offset < len(lines):
        before = follower.offset
        follower.poll()
        polls += 1
        assert 0 < follower.offset - before <= POLL_BYTES
    assert handed[0] == b"" and max(map(len, handed)) <= CHUNK and b"".join(handed) == lines and polls > 1
