"""Hostile display filters and hostile values under them (issue 36): every filter the grammar refuses is one line
and status 2 before any output, and no value a capture holds can make `matches` run for ever."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.filter import FilterError, compile_filter
from kdissect.filter.regex import compile_pattern
from kdissect.schema import BUILTIN
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "captures" / "client-kcat.pcap"

REFUSED = {
    "200 parentheses": "(" * 200 + "api == Fetch" + ")" * 200,
    "975 nots": "not " * 975 + "api == Fetch",
    "a 5000-digit number": "correlation_id == " + "9" * 5000,
    "a 5000-digit range": "version in {1.." + "9" * 5000 + "}",
    "an infinite number": "latency_ms > 1e999",
    "a time past the year 9999": "time > 1e300",
    "a date pushed past the calendar": 'time > "9999-12-31T23:59:59-01:00"',
    "a date pushed before it": 'time < "0001-01-01T00:00:00+01:00"',
    "a repetition past RE2's integers": 'client_id matches "a{4294967296}"',
    "lookaround": 'client_id matches "(?<=x)y"',
    "a backreference": 'client_id matches "(x)\\\\1"',
    "a line break and an escape in the text": "api == Fetch\nand \x1b]0;title\x07 > 1",
}


@pytest.mark.parametrize("expression", REFUSED.values(), ids=REFUSED.keys())
def test_the_grammar_refuses_with_one_line(expression):
    with pytest.raises(FilterError) as caught:
        compile_filter([("-Y", expression)], BUILTIN)
    line = str(caught.value)
    assert "\n" not in line and line.startswith("-Y at column ")


@pytest.mark.parametrize("name", ["975 nots", "a time past the year 9999", "a repetition past RE2's integers"])
def test_the_command_says_it_before_any_output(name):
    """The 975 `not`s used to compile and then fail while exchanges were being written: now nothing is written."""
    done = subprocess.run(
        [sys.executable, "-m", "kdissect", "read", str(CAPTURE), "-Y", REFUSED[name]], capture_output=True, timeout=300, check=False
    )
    assert done.returncode == 2 and done.stdout == b""
    [line] = done.stderr.decode().splitlines()
    assert line.startswith("kdissect: error: -Y at column ")


def test_the_deepest_expression_allowed_compiles_and_runs():
    """64 levels: compiled and evaluated by recursion far from Python's limit, whatever called the filter."""
    deepest = compile_filter([("-Y", "not " * 32 + "(" * 32 + "api == Metadata" + ")" * 32)], BUILTIN)
    found = [e for e in make_dissector(Options()).run(_exchange("some-client")) if isinstance(e, Exchange)]
    assert [deepest.matches(e) for e in found] == [True]


def _exchange(client_id: str) -> list:
    """One Metadata v1 exchange from this client id."""
    conv = craft.Conversation()
    request = craft.request(3, 1, 7, b"\xff\xff\xff\xff", client_id=client_id)
    response = craft.response(7, b"\0\0\0\0" + b"\0\0\0\0" + b"\xff\xff" + b"\0\0\0\0" + b"\0\0\0\0")
    return conv.handshake() + conv.send(CLIENT, request) + conv.send(SERVER, response) + conv.close()


def test_a_catastrophic_pattern_on_a_captured_value_ends():
    """`(a+)+$` against a client id of a's and a '!': Python's backtracking `re` takes 2**n steps for n a's and
    would never finish this one; RE2 reads the value once."""
    wanted = compile_filter([("-Y", 'client_id matches "(a+)+$"'), ("-Y #2", 'client_id matches "^(a|aa)+!$"')], BUILTIN)
    found = [e for e in make_dissector(Options()).run(_exchange("a" * 5000 + "!")) if isinstance(e, Exchange)]
    assert len(found) == 1 and not wanted.matches(found[0])


def test_a_pattern_nested_3000_deep_is_matched_without_recursion():
    on_text, on_bytes = compile_pattern("(" * 3000 + "a" + ")" * 3000, 1)
    assert on_text("xa") and not on_text("x") and on_bytes(b"\xffa") and not on_bytes(b"\xff")


ORDINARY = [
    "^kdrig-legacy-0\\.(8|9)",
    "(?i)FETCH",
    "\\d+\\.\\d",
    "^[a-z]+-[0-9]{2,4}$",
    "(?P<name>ab)c",
    "a.c",
    "^$",
    "[^a-c]",
]
VALUES = ["kdrig-legacy-0.9-lz4", "kdrig-legacy-0.10", "fetch", "v1.2", "abc-123", "abc-12345", "abc", "a\nc", "", "dd", "été"]


@pytest.mark.parametrize("pattern", ORDINARY)
def test_ordinary_patterns_mean_what_they_meant(pattern):
    """RE2 reads the patterns people write as Python's `re` did, on text and on bytes (byte by byte)."""
    on_text, on_bytes = compile_pattern(pattern, 1)
    python, binary = re.compile(pattern), re.compile(pattern.encode())
    assert [on_text(v) for v in VALUES] == [python.search(v) is not None for v in VALUES]
    raw = [v.encode() for v in VALUES] + [b"\xff\xfe", b"a\x00c"]
    assert [on_bytes(v) for v in raw] == [binary.search(v) is not None for v in raw]
