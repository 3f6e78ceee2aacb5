"""Hostile message specs (`--spec-dir`) and the bodies they read (issue 36): a spec file is read in time and memory
linear in its size, whatever its numbers, strings and nesting, each problem a located line; and a valid spec whose
structs take no bytes cannot make a small body build millions of them."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from kdissect.decode.body import CompiledBodies
from kdissect.schema import catalog_with
from kdissect.schema.specs import MAX_DIGITS, MAX_NESTING, Document, SpecError, strip_comments
from kdissect.schema.tree import Struct
from kdissect.schema.user_specs import MAX_FILE, SpecFile, from_folders, load

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "captures" / "client-kcat.pcap"
FAN_KEY = 2001


def spec(name: str, kind: str, key: object, fields: list, **extra: object) -> str:
    return json.dumps(
        {"apiKey": key, "type": kind, "name": name, "validVersions": "0", "flexibleVersions": "none", "fields": fields, **extra}
    )


def pair(folder: Path, name: str, fields: list, key: object = FAN_KEY, **extra: object) -> Path:
    """A request spec with these fields and an empty response, in `folder`."""
    folder.mkdir(exist_ok=True)
    (folder / f"{name}Request.json").write_text(spec(f"{name}Request", "request", key, fields, **extra))
    (folder / f"{name}Response.json").write_text(spec(f"{name}Response", "response", key, []))
    return folder


def kdissect(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect", *map(str, args)], capture_output=True, timeout=300, check=False)


# -- reading spec files -------------------------------------------------------------------------------------------


def test_stripping_comments_holds_memory_linear_in_the_text():
    """A string of a million characters (under the file cap): the old comment stripper, a regular expression
    alternating per character, held about 120 bytes of backtracking state per character of it."""
    text = '{"about": "' + "x" * (MAX_FILE - 100) + '" // the end\n}'
    tracemalloc.start()
    stripped = strip_comments(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert stripped == text.replace("// the end", "") and peak < 4 * len(text)


@pytest.mark.parametrize(
    "text,kept",
    [
        ('{"a": "x//y" // c\n}', '{"a": "x//y" \n}'),
        ('"a\\"b//" // c', '"a\\"b//" '),
        ('"\\\\" // c\n"d"', '"\\\\" \n"d"'),
        ("// a\n// b\n{}", "\n\n{}"),
        ('"open // not a comment', '"open // not a comment'),
    ],
)
def test_comments_go_and_strings_stay(text, kept):
    assert strip_comments(text) == kept


def test_a_5000_digit_number_is_a_located_problem():
    text = '{\n  "apiKey": 1,\n  "tag": ' + "9" * 5000 + "\n}"
    with pytest.raises(SpecError) as caught:
        Document("big.json", text)
    assert str(caught.value.problem) == f"big.json:3: a number of 5000 characters: a spec's numbers have at most {MAX_DIGITS}"


def test_spec_files_with_long_numbers_stop_a_read_with_one_line(tmp_path):
    folder = pair(tmp_path / "digits", "Big", [{"name": "X", "type": "int32", "versions": "0+", "default": 1}])
    request = folder / "BigRequest.json"
    request.write_text(request.read_text().replace('"default": 1', '"default": ' + "9" * 5000))
    done = kdissect("read", CAPTURE, "--spec-dir", folder)
    assert done.returncode == 2 and done.stdout == b""
    [line] = done.stderr.decode().splitlines()
    assert line.startswith(f"kdissect: error: {request}:1: a number of 5000 characters")


def test_a_specs_problems_reach_the_terminal_escaped(tmp_path):
    """A spec's names are its writer's: a problem that quotes one shows its control characters as escapes, in
    `schema --check` and in the one line that stops a read."""
    folder = pair(tmp_path / "esc", "Esc", [{"name": "X\x1b]0;title\x07\x1b[2J\u2028\x9b", "type": "int32", "versions": "0+"}])
    for args in (("schema", "--check", folder), ("read", CAPTURE, "--spec-dir", folder)):
        done = kdissect(*args)
        assert done.returncode == 2
        out = done.stdout + done.stderr
        assert not any(c in out.decode() for c in "\x1b\x07\u2028\x9b")
        assert "X\\x1b]0;title\\x07\\x1b[2J\\u2028\\x9b" in out.decode()


def test_a_file_past_the_cap_is_refused_unread(tmp_path):
    folder = pair(tmp_path / "long", "Long", [], about="x" * (8 << 20))
    specs = from_folders([folder], [])
    files, problems = specs.files, specs.problems
    assert [f.path for f in files] == [str(folder / "LongResponse.json")]
    assert [str(p) for p in problems][0] == f"{folder / 'LongRequest.json'}: larger than 1 MiB: not a message spec (Kafka's are a few KB)"


def test_a_key_of_5000_digits_is_a_problem():
    [problem] = load([], ["Fan=" + "9" * 5000]).problems
    assert problem.file == "--key" and "KEY from 0 to 32767" in problem.message


def nested(depth: int) -> dict:
    field: dict = {"name": "Leaf", "type": "int8", "versions": "0+"}
    for level in range(depth):
        field = {"name": f"S{level}", "type": f"S{level}Struct", "versions": "0+", "fields": [field]}
    return field


def test_structs_nest_at_most_32_deep():
    def loaded(depth: int):
        files = [SpecFile("r.json", spec("DeepRequest", "request", 3000, [nested(depth)]))]
        return load([*files, SpecFile("s.json", spec("DeepResponse", "response", 3000, []))], [])

    assert len(loaded(MAX_NESTING).apis) == 1
    [problem] = loaded(MAX_NESTING + 1).problems
    assert problem.message == f"structs nest more than {MAX_NESTING} deep"


# -- structs that take no bytes -----------------------------------------------------------------------------------

EMPTY_IN_TWO_ARRAYS = [
    {
        "name": "Outer",
        "type": "[]OuterItem",
        "versions": "0+",
        "fields": [{"name": "Inner", "type": "[]InnerItem", "versions": "0+", "fields": []}],
    }
]
"""A valid spec: an array of structs each holding an array of empty structs, which cost no bytes at all."""


def body(outer: int, inner: int) -> bytes:
    return struct.pack(">i", outer) + struct.pack(">i", inner) * outer


def structs(value: object) -> int:
    """Structs in a decoded value, at every depth."""
    if isinstance(value, Struct):
        return 1 + sum(structs(v) for v in value.values)
    if isinstance(value, list):
        return sum(structs(v) for v in value)
    return 0


@pytest.fixture(scope="module")
def fan(tmp_path_factory):
    specs = from_folders([pair(tmp_path_factory.mktemp("specs") / "fan", "Fan", EMPTY_IN_TWO_ARRAYS)], [])
    assert not specs.problems
    return catalog_with(specs.definitions)


def test_elements_are_counted_across_nesting(fan):
    """99 outer elements of 10 inner ones each: 1089 structs; a message may hold 500, so decoding stops at the
    array that passes them, the 41st inner one (99 + 40 * 10 = 499), and keeps what came before."""
    whole, told = CompiledBodies(fan, bytes).decode(FAN_KEY, 0, "request", body(99, 10), 0)
    assert structs(whole.fields) == 1 + 99 + 990 and told == []
    cut, told = CompiledBodies(fan, bytes, elements=500).decode(FAN_KEY, 0, "request", body(99, 10), 0)
    [diagnostic] = told
    assert (diagnostic.code, diagnostic.severity, diagnostic.path) == ("body.elements-cut", "warning", "Outer[40].Inner")
    assert structs(cut.fields) <= 1 + 500


def test_a_small_body_cannot_ask_for_millions_of_structs(fan):
    """400 bytes of counts of 65536 empty structs asked for 6.5 million (26 million with more outer elements): the
    message's bound stops them, however the arrays nest."""
    data = body(99, 65536)
    assert len(data) == 400
    cut, told = CompiledBodies(fan, bytes, elements=100_000).decode(FAN_KEY, 0, "request", data, 0)
    assert [d.code for d in told] == ["body.elements-cut"] and structs(cut.fields) <= 1 + 100_000
