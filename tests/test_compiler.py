"""The generated decoders' names and sources: readable, unique, stable, and shown in tracebacks.

`schema --source` and every traceback through a decoder name the function after its schema, version and path
(`FetchResponse_v16_Responses_Partitions`), and the traceback shows the generated line that was running.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

import pytest
from strategies import TRIPLES, raw_records_hook

from kdissect.capture import open_capture
from kdissect.decode.body import CompiledBodies
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.schema import BUILTIN, DATA_SCHEMAS
from kdissect.schema.compiler import Compiler

CAPTURE = Path(__file__).resolve().parent.parent / "captures" / "client-confluent.pcap"
DEF = re.compile(r"^def (\w+)\(buf, pos\):$", re.M)


class Boom(Exception):
    """Raised by a records hook: nothing the decoders catch, so it leaves through every generated frame."""


def boom(buf, start: int, end: int):
    raise Boom(f"records at {start}-{end}")


def fetch_responses() -> list[tuple[int, bytes, int]]:
    """(version, frame, body offset) of every Fetch response a real client's capture holds, read headers-only."""
    found = []
    with open_capture(CAPTURE) as capture:
        for event in make_dissector(Options(decode=False)).run(capture.packets()):
            if isinstance(event, Exchange) and event.api_key == 1 and event.response is not None:
                found.append((event.api_version, event.response.frame.data, event.response.header.length))
    return found


@pytest.mark.parametrize("spans", [False, True])
def test_a_traceback_through_a_decoder_names_it_and_shows_its_line(spans):
    """Both variants are compiled first: each keeps its own source for tracebacks, whichever came last."""
    bodies = {s: CompiledBodies(BUILTIN, boom, spans=s) for s in (False, True)}
    responses = fetch_responses()
    assert responses
    for version, _, _ in responses:
        for compiled in bodies.values():
            compiled.target(1, version, "response")
    raised = []
    for version, frame, start in responses:
        try:
            bodies[spans].decode(1, version, "response", frame, start)
        except Boom as exc:
            raised.append((version, exc))
    assert raised, "no Fetch response in the capture carries a records field"
    version, exc = raised[0]
    frames = traceback.extract_tb(exc.__traceback__)
    unit = f"FetchResponse_v{version}"
    assert [f.name for f in frames[-4:]] == [unit, f"{unit}_Responses", f"{unit}_Responses_Partitions", "boom"]
    reader = frames[-2]
    assert reader.filename == f"<kdissect decoder {unit}_Responses_Partitions{' with spans' if spans else ''}>"
    assert reader.line == "v = _records(buf, pos, e)"
    text = "".join(traceback.format_exception(exc))
    assert f'File "{reader.filename}", line {reader.lineno}, in {reader.name}\n    v = _records(buf, pos, e)\n' in text


def test_source_is_the_same_whatever_was_compiled_before():
    fresh = CompiledBodies(BUILTIN, raw_records_hook).source(1, 13, "response")
    busy = CompiledBodies(BUILTIN, raw_records_hook)
    for api_key, version, direction in reversed(TRIPLES):
        busy.target(api_key, version, direction)
    assert busy.source(1, 13, "response") == fresh
    assert DEF.findall(fresh)[:3] == ["FetchResponse_v13", "FetchResponse_v13_Responses", "FetchResponse_v13_Responses_Partitions"]


def test_source_shows_the_tagged_field_readers():
    source = CompiledBodies(BUILTIN, raw_records_hook).source(1, 13, "response")
    assert DEF.findall(source)[-6:] == [
        "FetchResponse_v13_Responses_Partitions_tag_0_DivergingEpoch",
        "FetchResponse_v13_Responses_Partitions_DivergingEpoch",
        "FetchResponse_v13_Responses_Partitions_tag_1_CurrentLeader",
        "FetchResponse_v13_Responses_Partitions_CurrentLeader",
        "FetchResponse_v13_Responses_Partitions_tag_2_SnapshotId",
        "FetchResponse_v13_Responses_Partitions_SnapshotId",
    ]
    assert "FetchResponse_v13_Responses_Partitions__tags" in source


def test_every_decoder_gets_a_unique_readable_name():
    """Every body in both variants and every data schema compiles: no two structs claim one name."""
    for spans in (False, True):
        bodies = CompiledBodies(BUILTIN, raw_records_hook, spans)
        for api_key, version, direction in TRIPLES:
            target = bodies.target(api_key, version, direction)
            names = DEF.findall(bodies.source(api_key, version, direction))
            assert names[0] == f"{target.definition.name}_v{target.used}"
            assert all(name == names[0] or name.startswith(names[0] + "_") and name.isidentifier() for name in names)
            assert len(names) == len(set(names))
    compiler = Compiler(raw_records_hook)
    for definitions in DATA_SCHEMAS.values():
        for definition in definitions:
            for version in range(definition.valid.lo, definition.valid.hi + 1):
                assert DEF.findall(compiler.source(definition, version))[0] == f"{definition.name}_v{version}"


def test_a_common_struct_is_one_decoder_named_after_itself():
    """ConsumerGroupDescribe's members hold an Assignment and a TargetAssignment, both the common Assignment."""
    source = CompiledBodies(BUILTIN, raw_records_hook).source(69, 1, "response")
    assert DEF.findall(source) == [
        "ConsumerGroupDescribeResponse_v1",
        "ConsumerGroupDescribeResponse_v1_Groups",
        "ConsumerGroupDescribeResponse_v1_Groups_Members",
        "ConsumerGroupDescribeResponse_v1_Assignment",
        "ConsumerGroupDescribeResponse_v1_TopicPartitions",
    ]
    assert source.count("pos = ConsumerGroupDescribeResponse_v1_Assignment(buf, pos)") == 2


def test_two_definitions_never_share_a_decoder_name():
    """The 3.9 snapshot's FetchResponse also covers v13; a compiler asked for both refuses the second name."""
    trunk, old = BUILTIN.apis[1].responses
    assert 13 in trunk.valid and 13 in old.valid
    compiler = Compiler(raw_records_hook)
    compiler.compile(trunk, 13)
    with pytest.raises(ValueError, match="FetchResponse_v13"):
        compiler.compile(old, 13)


def decoded_fetches(bodies: CompiledBodies) -> list:
    return [bodies.decode(1, version, "response", frame, start) for version, frame, start in fetch_responses()]


def test_compiled_decoders_are_kept_and_loaded_instead_of_compiled(tmp_path, monkeypatch):
    """A second run compiles nothing it compiled before, and decodes the same."""
    from kdissect.schema import code_cache

    monkeypatch.setenv(code_cache.VARIABLE, str(tmp_path))
    first = decoded_fetches(CompiledBodies(BUILTIN, raw_records_hook))
    kept = list((tmp_path / "decoders").glob("*/*"))
    assert len(kept) >= 3  # a Fetch response's decoder, its Responses' and its Partitions'

    def refuse(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(code_cache, "compile", refuse, raising=False)
    assert decoded_fetches(CompiledBodies(BUILTIN, raw_records_hook)) == first


def test_a_damaged_or_unwritable_cache_only_costs_a_compile(tmp_path, monkeypatch):
    from kdissect.schema import code_cache

    monkeypatch.setenv(code_cache.VARIABLE, str(tmp_path))
    expected = decoded_fetches(CompiledBodies(BUILTIN, raw_records_hook))
    kept = list((tmp_path / "decoders").glob("*/*"))
    for path in kept:
        path.write_bytes(b"\x00garbage" if path != kept[0] else b"")
    assert decoded_fetches(CompiledBodies(BUILTIN, raw_records_hook)) == expected
    assert all(path.read_bytes()[:8] != b"\x00garbage" and path.stat().st_size for path in kept)  # compiled and kept again
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(code_cache.VARIABLE, str(blocked))
    assert decoded_fetches(CompiledBodies(BUILTIN, raw_records_hook)) == expected
    monkeypatch.setenv(code_cache.VARIABLE, "")
    assert code_cache.folder() is None
    assert decoded_fetches(CompiledBodies(BUILTIN, raw_records_hook)) == expected
