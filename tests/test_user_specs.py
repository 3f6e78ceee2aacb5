"""Users' message specs (--spec-dir, --key): frames an encoder wrote from the spec files themselves, with random
values, decoded back field for field through the CLI; a version added to a built-in API; and every problem of
a broken spec named with its file, line and field.

The draft specs are read from ../shared/kafka-draft-specs (KIP-848's client-side assignor, KIP-4's AlterTopics,
ListAcls and AlterAcls); the tests that need them skip when the folder is absent.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from strategies import filled_struct, normal, raw_records_hook, struct_of

from kdissect.capture.linktypes import LINKTYPE_ETHERNET
from kdissect.capture.writer import pcap_bytes
from kdissect.decode.body import CompiledBodies
from kdissect.schema import BUILTIN, Api, Catalog, Field, error_name
from kdissect.schema.encoder import Encoder
from kdissect.schema.specs import Problem
from kdissect.schema.tree import Struct, UnknownTag
from kdissect.schema.user_specs import SpecFile, UserSpecs, from_folders, load
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER, Conversation
from kdissect.views.json_lines import decode_bytes

ROOT = Path(__file__).resolve().parent.parent
DRAFTS = ROOT.parent / "shared" / "kafka-draft-specs"
KEYS = {
    "ConsumerGroupPrepareAssignment": 120,
    "ConsumerGroupInstallAssignment": 300,
    "AlterTopics": 1000,
    "ListAcls": 5000,
    "AlterAcls": 32767,
}
"""Keys no built-in API has: below 128, above it (two-byte keys in the request header), and the highest."""
KEY_OPTIONS = [arg for name, key in KEYS.items() for arg in ("--key", f"{name}={key}")]


def kdissect(*args: Any) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])", *map(str, args)],
        capture_output=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )


def exchanges(*args: Any, status: int = 0) -> list[dict]:
    """`read --json`'s exchanges; `status` is the exit status the run must end with (1: the capture is damaged)."""
    done = kdissect("read", *args, "--json", "-q")
    assert done.returncode == status, done.stderr.decode()
    lines = done.stdout.decode().split("\n")[:-1]  # not splitlines(): a JSON string may hold U+2028 or U+0085 as it is
    return [e for e in map(json.loads, lines) if e["type"] == "exchange"]


@pytest.fixture(scope="module")
def drafts() -> UserSpecs:
    if not DRAFTS.is_dir():
        pytest.skip(f"the draft specs are not here ({DRAFTS.name} beside the project): nothing to decode")
    specs = from_folders([DRAFTS], [f"{name}={key}" for name, key in KEYS.items()])
    assert not specs.problems, specs.problems
    assert sorted(api.key for api in specs.definitions) == sorted(KEYS.values())
    return specs


# ------------------------------------------------------------------------------------------- writing frames


def body_bytes(api: Api, version: int, direction: str, value: Struct) -> bytes:
    definition = api.request(version) if direction == "request" else api.response(version)
    assert definition is not None
    return Encoder().encode(definition.fields, version, version in definition.flexible, value)


def exchange_bytes(catalog: Catalog, api: Api, version: int, correlation: int, request: Struct, response: Struct) -> tuple[bytes, bytes]:
    """A request and its response as a client and a broker would write them (header versions from the catalogue that
    holds the API)."""
    body = body_bytes(api, version, "request", request)
    request_frame = craft.request(api.key, version, correlation, body, client_id="draft-client", catalog=catalog)
    header = catalog.response_header_version(api.key, version)
    return request_frame, craft.response(correlation, body_bytes(api, version, "response", response), header)


def write_capture(path: Path, conversations: list[tuple[Conversation, list[tuple[bytes, bytes]], bool]]) -> Path:
    """Each conversation's exchanges, request then response; with a handshake or starting mid-stream."""
    packets = []
    for conversation, frames, handshake in conversations:
        if handshake:
            packets += conversation.handshake()
        for request, response in frames:
            packets += conversation.send(CLIENT, request) + conversation.send(SERVER, response)
        packets += conversation.close()
    path.write_bytes(pcap_bytes(packets, LINKTYPE_ETHERNET))
    return path


# ------------------------------------------------------------------------------------------ reading them back


def same(got: Any, want: Any, path: str = "body") -> None:
    """The CLI's JSON of a decoded value equals the value the encoder wrote, type and all."""
    if isinstance(want, Struct):
        assert isinstance(got, dict), path
        known = [(name, value) for name, value in want.items() if not isinstance(value, UnknownTag)]
        unknown = [value for value in want.values if isinstance(value, UnknownTag)]
        assert list(got) == [name for name, _ in known] + (["_unknown_tags"] if unknown else []), path
        for name, value in known:
            same(got[name], value, f"{path}.{name}")
        for tag, entry in zip(unknown, got.get("_unknown_tags", ())):
            assert (entry["tag"], decode_bytes(entry["data"])) == (tag.tag, tag.data), path
        assert len(got.get("_unknown_tags", ())) == len(unknown), path
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{path}[{i}]")
    elif isinstance(want, bytes):
        assert decode_bytes(got) == want, path
    elif isinstance(want, float):
        assert isinstance(got, float) and struct.pack(">d", got) == struct.pack(">d", want), path
    else:
        assert type(got) is type(want) and got == want, (path, got, want)


def findings(fields: tuple[Field, ...], value: Struct, prefix: str, out: dict[str, list]) -> None:
    """What the specs' facts say the body holds: error codes (int16 *ErrorCode), topics and groups (entityType)."""
    for f in fields:
        if f.name not in value.names:
            continue
        v = value[f.name]
        if f.is_struct and v is not None:
            for i, item in enumerate(v if f.array else [v]):
                if isinstance(item, Struct):
                    findings(f.fields, item, f"{prefix}{f.name}[{i}]." if f.array else f"{prefix}{f.name}.", out)
        elif f.type == "int16" and f.name.endswith("ErrorCode") and not f.array and v:
            out["errors"].append((f"{prefix}{f.name}", v))
        elif f.type == "string" and f.entity in ("topicName", "groupId"):
            kind = "topics" if f.entity == "topicName" else "groups"
            out[kind] += [s for s in (v if f.array else [v]) if isinstance(s, str)]


def check_exchange(got: dict, api: Api, version: int, request: Struct, response: Struct) -> None:
    assert (got["api_key"], got["api_name"], got["api_version"]) == (api.key, api.name, version)
    expected: dict[str, list] = {"errors": [], "topics": [], "groups": []}
    errors = []
    for side, value in (("request", request), ("response", response)):
        message = got[side]
        definition = api.request(version) if side == "request" else api.response(version)
        assert definition is not None
        assert (message["schema"], message["schema_version"], message["assumed_version"]) == (definition.name, version, False)
        assert message["diagnostics"] == [], message["diagnostics"]
        same(message["body"], value)
        findings(definition.fields, value, "", expected)
        errors += [{"side": side, "path": path, "code": code, "name": error_name(code)} for path, code in expected["errors"]]
        expected["errors"] = []
    assert got["errors"] == errors
    assert got["status"] == ("error" if any(e["side"] == "response" for e in errors) else "ok")  # docs/json.md
    assert got["topics"] == list(dict.fromkeys(expected["topics"]))
    assert got["groups"] == list(dict.fromkeys(expected["groups"]))


def draw_bodies(data: st.DataObject, api: Api, version: int) -> tuple[Struct, Struct]:
    out = []
    for definition in (api.request(version), api.response(version)):
        assert definition is not None
        out.append(data.draw(struct_of(definition.fields, version, version in definition.flexible)))
    return out[0], out[1]


# ------------------------------------------------------------------------------------------ drafts


EXPENSIVE = settings(
    max_examples=4,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # each example runs the CLI: shrinking would take minutes
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
"""Each example runs the CLI once; a failure shows its example unshrunk."""


@EXPENSIVE
@given(data=st.data())
def test_every_draft_api_decodes_back_field_for_field(drafts, tmp_path, data):
    """Random bodies of every draft request and response, under keys given with --key, read back by the CLI."""
    written = []
    catalog = Catalog(drafts.definitions)
    frames = []
    for correlation, api in enumerate(drafts.definitions, start=1):
        for version in api.versions:
            request, response = draw_bodies(data, api, version)
            written.append((api, version, request, response))
            frames.append(exchange_bytes(catalog, api, version, correlation * 100 + version, request, response))
    capture = write_capture(tmp_path / "drafts.pcap", [(Conversation(), frames, True)])
    got = exchanges(capture, "--spec-dir", DRAFTS, *KEY_OPTIONS)
    assert len(got) == len(written)
    for exchange, (api, version, request, response) in zip(got, written):
        check_exchange(exchange, api, version, request, response)


def rich_exchanges(specs: UserSpecs, first_correlation: int = 1) -> list[tuple[Api, Struct, Struct, tuple[bytes, bytes]]]:
    """Every API of the specs at its newest version, every field present, arrays of two: the richest bodies."""
    out = []
    catalog = Catalog(specs.definitions)
    for i, api in enumerate(specs.definitions):
        version = api.max_version
        request_definition, response_definition = api.request(version), api.response(version)
        assert request_definition is not None and response_definition is not None
        request = filled_struct(request_definition.fields, version, version in request_definition.flexible)
        response = filled_struct(response_definition.fields, version, version in response_definition.flexible)
        out.append((api, request, response, exchange_bytes(catalog, api, version, first_correlation + i, request, response)))
    return out


def test_draft_apis_are_recognised_off_the_kafka_port_and_after_a_cut(drafts, tmp_path):
    """Request detection knows the users' keys: on an unknown port the client's first request tells which side is
    which, and a capture that starts inside a frame finds the next request, two-byte keys included."""
    rich = rich_exchanges(drafts)
    frames = [f for *_, f in rich]
    cut = rich[-1][3][0][-7:]  # the last bytes of a request whose start the capture missed
    mid_stream = Conversation(client_port=40001)
    capture = write_capture(
        tmp_path / "elsewhere.pcap",
        [
            (Conversation(client_port=40000, server_port=30001), frames, True),
            (mid_stream, [(cut, b"")] + frames, False),
        ],
    )
    got = exchanges(capture, "--spec-dir", DRAFTS, *KEY_OPTIONS)
    by_connection: dict[int, list[dict]] = {}
    for exchange in got:
        by_connection.setdefault(exchange["connection"]["id"], []).append(exchange)
    assert [len(v) for v in by_connection.values()] == [len(rich), len(rich)]
    for found in by_connection.values():
        for exchange, (api, request, response, _) in zip(found, rich):
            check_exchange(exchange, api, api.max_version, request, response)
    without = exchanges(capture, status=1)  # the built-in tables alone: not Kafka on port 30001, no request found on 9092
    assert not any(e["status"] in ("ok", "error", "malformed") or e["api_key"] in KEYS.values() for e in without)  # none paired


def test_two_dissectors_with_different_specs_decode_side_by_side_in_one_process(drafts, heartbeat_v5, tmp_path):
    """A catalogue is a value each dissector carries: one with the draft specs and one with Heartbeat v5 read the same
    capture packet by packet, interleaved, and each decodes by its own specs alone."""
    from kdissect.capture import open_capture
    from kdissect.dissector import Options, make_dissector
    from kdissect.events import Exchange

    rich = rich_exchanges(drafts)
    heartbeat_specs = from_folders([heartbeat_v5], [])
    heartbeat_catalog = Catalog(heartbeat_specs.definitions)
    heartbeat = heartbeat_catalog.apis[12]
    request, response = (filled_struct(d.fields, 5, 5 in d.flexible) for d in (heartbeat.request(5), heartbeat.response(5)))
    frames = [f for *_, f in rich] + [exchange_bytes(heartbeat_catalog, heartbeat, 5, 9999, request, response)]
    capture = write_capture(tmp_path / "both.pcap", [(Conversation(), frames, True)])
    dissectors = {
        "drafts": make_dissector(Options(catalog=Catalog(drafts.definitions))),
        "heartbeat": make_dissector(Options(catalog=heartbeat_catalog)),
    }
    seen: dict[str, list[Exchange]] = {name: [] for name in dissectors}
    with open_capture(str(capture)) as source:
        for packet in source.packets():
            for name, dissector in dissectors.items():
                seen[name] += [e for e in dissector.feed(packet) if isinstance(e, Exchange)]
    for name, dissector in dissectors.items():
        seen[name] += [e for e in dissector.finish() if isinstance(e, Exchange)]

    drafts_saw, heartbeat_saw = seen["drafts"], seen["heartbeat"]
    assert len(drafts_saw) == len(heartbeat_saw) == len(rich) + 1
    for exchange, (api, *_) in zip(drafts_saw, rich):  # the draft APIs: decoded by one, unknown to the other
        assert exchange.status in ("ok", "error") and not exchange.diagnostics  # the filled bodies hold error codes
        assert exchange.api_name == api.name and exchange.request.body.schema == api.request(api.max_version).name
    for exchange in heartbeat_saw[:-1]:
        assert exchange.api_name is None and {d.code for d in exchange.diagnostics} == {"body.unknown-api"}
    by_drafts, by_heartbeat = drafts_saw[-1], heartbeat_saw[-1]  # Heartbeat v5: assumed v4 by one, decoded by the other
    assert by_drafts.request.body.assumed and by_drafts.request.body.version == 4
    assert not by_heartbeat.request.body.assumed and by_heartbeat.request.body.version == 5 and not by_heartbeat.diagnostics


def test_filters_stats_and_hex_see_the_users_apis(drafts, tmp_path):
    rich = rich_exchanges(drafts)
    capture = write_capture(tmp_path / "drafts.pcap", [(Conversation(), [f for *_, f in rich], True)])
    options = ["--spec-dir", DRAFTS, *KEY_OPTIONS]
    assert [e["api_name"] for e in exchanges(capture, *options, "--api", "ListAcls,alteracls")] == ["ListAcls", "AlterAcls"]
    every = exchanges(capture, *options)
    group = next(e for e in every if e["groups"])["groups"][0]
    grouped = [e["id"] for e in every if group in e["groups"]]
    assert grouped and [e["id"] for e in exchanges(capture, *options, "--group", group)] == grouped
    api, request, *_ = next(item for item in rich if item[0].name == "AlterTopics")
    topic = request["Topics"][1]["TopicName"]
    by_field = exchanges(capture, *options, "-Y", f'request.Topics.TopicName == "{topic}" or api == AlterAcls')
    assert [e["api_name"] for e in by_field] == ["AlterTopics", "AlterAcls"]
    done = kdissect("read", capture, *options, "-Y", "request.Topics.NoSuchField == 1")
    assert done.returncode == 2 and "NoSuchField" in done.stderr.decode() and b"Traceback" not in done.stderr
    done = kdissect("stats", capture, "--json", "-q", *options)
    apis = next(t for t in map(json.loads, done.stdout.decode().splitlines()) if t["table"] == "apis")["rows"]
    assert sorted((row["api_key"], row["api_name"]) for row in apis) == sorted((key, name) for name, key in KEYS.items())
    done = kdissect("show", capture, "--api", "AlterTopics", "--hex", *options)
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    assert "AlterTopics v0" in text and "Body AlterTopicsRequest v0" in text and "Body AlterTopicsResponse v0" in text
    topic = request["Topics"][0]["TopicName"]
    encoded = topic.encode()
    spans = [line for line in text.splitlines() if f"TopicName: {topic!r}" in line]
    assert spans and all(f"[00 {len(encoded):02x} {encoded[0]:02x}" in line and "  @" in line for line in spans)


# ------------------------------------------------------------------------------------------ a built-in API extended

HEARTBEAT_V5 = """// Heartbeat v5, which Kafka never defined: what a broker fork might add, in the specs' own format.
{
  "apiKey": 12,
  "type": "request",
  "name": "HeartbeatRequest",
  "validVersions": "5",
  "flexibleVersions": "4+",
  "fields": [
    { "name": "GroupId", "type": "string", "versions": "0+", "entityType": "groupId", "about": "The group id." },
    { "name": "GenerationId", "type": "int32", "versions": "0+", "about": "The generation." },
    { "name": "MemberId", "type": "string", "versions": "0+", "about": "The member id." },
    { "name": "GroupInstanceId", "type": "string", "versions": "3+", "nullableVersions": "3+", "default": "null",
      "about": "The static member's instance id." },
    { "name": "Load", "type": "float64", "versions": "5+", "about": "How busy the member is." },
    { "name": "Sequence", "type": "uint32", "versions": "5+", "about": "A counter." },
    { "name": "Owned", "type": "[]OwnedTopic", "versions": "5+", "nullableVersions": "5+",
      "about": "What the member owns.", "fields": [
      { "name": "TopicId", "type": "uuid", "versions": "5+", "about": "The topic id." },
      { "name": "TopicName", "type": "string", "versions": "5+", "entityType": "topicName", "about": "Its name." },
      { "name": "Partitions", "type": "[]int32", "versions": "5+", "about": "The partitions." }
    ]},
    // an inline struct named again, without fields: the same struct
    { "name": "Pending", "type": "[]OwnedTopic", "versions": "5+", "about": "What it is about to own." },
    { "name": "Rack", "type": "Rack", "versions": "5+", "nullableVersions": "5+", "about": "Where it runs." },
    { "name": "Token", "type": "bytes", "versions": "5+", "nullableVersions": "5+", "about": "Opaque." },
    { "name": "Labels", "type": "[]string", "versions": "5+", "taggedVersions": "5+", "tag": 0, "about": "Tags." },
    { "name": "Location", "type": "Rack", "versions": "5+", "taggedVersions": "5+", "tag": 1, "about": "Tagged struct." }
  ],
  "commonStructs": [
    { "name": "Rack", "versions": "5+", "fields": [
      { "name": "Id", "type": "string", "versions": "5+", "about": "The rack." },
      { "name": "Zone", "type": "int16", "versions": "5+", "about": "The zone." }
    ]}
  ]
}
"""
HEARTBEAT_V5_RESPONSE = """// The response of Heartbeat v5 (see HeartbeatRequest.json).
{
  "apiKey": 12,
  "type": "response",
  "name": "HeartbeatResponse",
  "validVersions": "5",
  "flexibleVersions": "4+",
  "fields": [
    { "name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "about": "Throttled for." },
    { "name": "ErrorCode", "type": "int16", "versions": "0+", "about": "The error code." },
    { "name": "Members", "type": "[]MemberState", "versions": "5+", "about": "Per member.", "fields": [
      { "name": "MemberId", "type": "string", "versions": "5+", "about": "The member." },
      { "name": "ErrorCode", "type": "int16", "versions": "5+", "about": "Its error." },
      { "name": "Stable", "type": "bool", "versions": "5+", "about": "Whether it is stable." }
    ]},
    { "name": "Hint", "type": "string", "versions": "5+", "taggedVersions": "5+", "tag": 0, "nullableVersions": "5+",
      "about": "A tagged hint." }
  ]
}
"""


@pytest.fixture
def heartbeat_v5(tmp_path) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "HeartbeatRequest.json").write_text(HEARTBEAT_V5)
    (folder / "HeartbeatResponse.json").write_text(HEARTBEAT_V5_RESPONSE)
    return folder


@EXPENSIVE
@given(data=st.data())
def test_a_version_added_to_a_built_in_api_decodes_beside_the_built_in_ones(heartbeat_v5, tmp_path, data):
    specs = from_folders([heartbeat_v5], [])
    assert not specs.problems, specs.problems
    [user] = specs.apis
    assert user.builtin is not None and user.builtin.versions == (0, 1, 2, 3, 4)
    catalog = Catalog(specs.definitions)
    heartbeat = catalog.apis[12]
    assert heartbeat.versions == (0, 1, 2, 3, 4, 5) and heartbeat.name == "Heartbeat"
    written = [(heartbeat, version, *draw_bodies(data, heartbeat, version)) for version in (5, 4, 5)]
    frames = [exchange_bytes(catalog, api, version, i, request, response) for i, (api, version, request, response) in enumerate(written)]
    assert BUILTIN.apis[12].versions == (0, 1, 2, 3, 4)  # the built-in catalogue is untouched
    capture = write_capture(tmp_path / "heartbeat.pcap", [(Conversation(), frames, True)])
    got = exchanges(capture, "--spec-dir", heartbeat_v5, "--show-secrets")
    assert len(got) == len(written)
    for exchange, (api, version, request, response) in zip(got, written):
        check_exchange(exchange, api, version, request, response)
    for exchange, (_, version, request, _) in zip(exchanges(capture, "--spec-dir", heartbeat_v5), written):
        token = request.get("Token") if version == 5 else None
        if token:  # a user's field named like a credential is one: redacted unless --show-secrets
            assert exchange["request"]["body"]["Token"] == {"redacted": True, "size": len(token)}
    without = exchanges(capture)  # v5 read as v4: malformed bodies, the sender's, not capture damage: exit status 0
    assert [(e["request"]["schema_version"], e["request"]["assumed_version"]) for e in without] == [(4, True), (4, False), (4, True)]


def test_schema_lists_what_was_loaded_and_from_where(drafts, heartbeat_v5):
    done = kdissect("schema", "--spec-dir", DRAFTS, "--spec-dir", heartbeat_v5, *KEY_OPTIONS, "--json")
    assert done.returncode == 0, done.stderr.decode()
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [(r["api_key"], r["name"]) for r in rows] == sorted([(12, "Heartbeat")] + [(key, name) for name, key in KEYS.items()])
    heartbeat = rows[0]
    assert heartbeat["builtin"] == {"name": "Heartbeat", "versions": "0-4", "added": "5", "replaced": None}
    assert heartbeat["request_file"] == str(heartbeat_v5 / "HeartbeatRequest.json") and heartbeat["flexible_from"] == 5
    alter = next(r for r in rows if r["name"] == "AlterTopics")
    assert alter["builtin"] is None and alter["response_file"] == str(DRAFTS / "AlterTopicsResponse.json")
    text = kdissect("schema", "--spec-dir", heartbeat_v5).stdout.decode()
    assert "built-in Heartbeat 0-4: adds 5" in text and f"{heartbeat_v5 / 'HeartbeatResponse.json'}: Heartbeat response (key 12)" in text
    source = kdissect("schema", "--spec-dir", DRAFTS, *KEY_OPTIONS, "--source", "ListAcls:0:response")
    assert source.returncode == 0 and "def ListAclsResponse_v0(buf, pos):" in source.stdout.decode()


# ------------------------------------------------------------------------------------------ problems


def broken(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for file_name, text in files.items():
        (folder / file_name).write_text(text)
    return folder


def check_lines(*args: Any) -> list[str]:
    """`schema --check`'s problem lines; it must end with exit status 2 and one error line, never a traceback."""
    done = kdissect("schema", "--check", *args)
    assert done.returncode == 2, done
    errors = done.stderr.decode().splitlines()
    assert len(errors) == 1 and errors[0].startswith("kdissect: error: ") and "problem" in errors[0], errors
    return done.stdout.decode().splitlines()


def draft(name: str, *edits: tuple[str, str]) -> str:
    """A draft spec's text with each edit's first text replaced (each must be there)."""
    text = (DRAFTS / name).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(
    "file_name,edit,says",
    [
        (
            "AlterTopicsRequest.json",
            ('"Partitions", "type": "int32"', '"Partitions", "type": "int23"'),
            ':13: Topics.Partitions: unknown type "int23"',
        ),
        (
            "ListAclsRequest.json",
            ('"validVersions": "0"', '"validVersions": "3-1"'),
            ':6: validVersions: validVersions "3-1" is not a version range',
        ),
        (
            "ListAclsRequest.json",
            ('"Principal", "type": "string", "versions": "0+"', '"Principal", "type": "string", "versions": "0+x"'),
            ":9: Principal: versions",
        ),
        (
            "ConsumerGroupInstallAssignmentResponse.json",
            ('"int16", "versions": "0+"', '"int16", "versions": "0+", "taggedVersions": "0+"'),
            ":11: ErrorCode: a tagged",
        ),
        (
            "AlterAclsResponse.json",
            ('"flexibleVersions": "none"', '"flexibleVersions": "0-3"'),
            ':7: flexibleVersions: flexibleVersions "0-3" must be',
        ),
    ],
)
def test_check_names_each_problem_with_file_line_and_field(drafts, tmp_path, file_name, edit, says):
    folder = broken(tmp_path, "broken", {file_name: draft(file_name, edit)})
    lines = check_lines(folder)
    assert any(line.startswith(str(folder / file_name)) and says in line for line in lines), lines


def test_check_reports_every_problem_at_once(drafts, tmp_path):
    """Several files, several problems each, in one pass: a struct used before it is defined, a tag used twice, an
    unknown key, a tagged field without a tag, an unknown type, a duplicate API key, bad --key settings."""
    early = '{ "name": "Early", "type": "PartitionAssignment", "versions": "0+" },\n    { "name": "Topics"'
    member = '"versions": "0+",\n      "about": "The member'
    folder = broken(
        tmp_path,
        "many",
        {
            "AlterTopicsRequest.json": draft("AlterTopicsRequest.json", ('{ "name": "Topics"', early)),
            "AlterTopicsResponse.json": draft("AlterTopicsResponse.json"),
            "ConsumerGroupPrepareAssignmentRequest.json": draft(
                "ConsumerGroupPrepareAssignmentRequest.json", (member, member.replace('"0+",', '"0+", "taggedVersions": "0+", "tag": 3,'))
            ),
            "ConsumerGroupPrepareAssignmentResponse.json": draft(
                "ConsumerGroupPrepareAssignmentResponse.json",
                (
                    '"0+", "nullableVersions": "0+", "default": "null",\n      "about": "The top',
                    '"0+", "nullableVersion": "0+",\n      "about": "The top',
                ),
                (
                    '"GroupEpoch", "type": "int32", "versions": "0+",',
                    '"GroupEpoch", "type": "int32", "versions": "0+", "taggedVersions": "0+",',
                ),
                ('"AssignorName", "type": "string"', '"AssignorName", "type": "str"'),
            ),
            "ListAclsRequest.json": draft("ListAclsRequest.json"),
            "ListAclsResponse.json": draft("ListAclsResponse.json"),
            "ListAclsCopyRequest.json": draft("ListAclsRequest.json", ('"ListAclsRequest"', '"ListAclsCopyRequest"')),
            "ListAclsCopyResponse.json": draft("ListAclsResponse.json", ('"ListAclsResponse"', '"ListAclsCopyResponse"')),
        },
    )
    keys = ["AlterTopics=1000", "ConsumerGroupPrepareAssignment=1001", "ListAcls=7", "ListAclsCopy=7", "Nope=3", "ListAcls"]
    lines = check_lines(folder, *(arg for key in keys for arg in ("--key", key)))

    def at(name: str, line: int) -> str:
        return f"{folder / name}:{line}: "

    expected = [
        at("AlterTopicsRequest.json", 9) + "Early: struct PartitionAssignment is used before it is defined (at line 18)",
        at("ConsumerGroupPrepareAssignmentRequest.json", 14) + "MemberEpoch: tag 3 is also the tag of MemberId (line 12)",
        at("ConsumerGroupPrepareAssignmentResponse.json", 14) + 'ErrorMessage: unknown key "nullableVersion"',
        at("ConsumerGroupPrepareAssignmentResponse.json", 16) + 'GroupEpoch: a tagged field needs a tag: taggedVersions is "0+"',
        at("ConsumerGroupPrepareAssignmentResponse.json", 18) + 'AssignorName: unknown type "str"',
        "--key: Nope=3: no spec is named NopeRequest or NopeResponse",
        "--key: ListAcls: give NAME=KEY",
        at("ListAclsRequest.json", 3) + "apiKey: API key 7 is also the key of ListAclsCopyRequest",
        at("ListAclsResponse.json", 3) + "apiKey: API key 7 is also the key of ListAclsCopyResponse",
    ]
    for want in expected:
        assert any(want in line for line in lines), (want, lines)
    assert len(lines) == len(expected), lines


def test_problems_stop_a_read_with_one_line(drafts, tmp_path):
    capture = ROOT / "captures" / "consumer-group-kafka-python.pcap"
    done = kdissect("read", capture, "--spec-dir", DRAFTS)
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    [line] = done.stderr.decode().splitlines()
    assert 'apiKey "TBD" is not a number: give one with --key AlterAcls=KEY (9 more: `kdissect schema --check' in line
    done = kdissect("read", capture, "--spec-dir", tmp_path / "nowhere")
    assert done.returncode == 2 and "cannot list the folder" in done.stderr.decode()
    (tmp_path / "bad.json").write_text('// not a spec\n{ "name": "X",\n  "type": [1, }\n')
    lines = check_lines(tmp_path)
    assert lines == [f"{tmp_path / 'bad.json'}:3: not JSON: Expecting value"]


# ------------------------------------------------------------------------------------------ any spec the check passes

PRIMITIVE_TYPES = ["int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool", "string", "bytes", "uuid"]
FIELD_NAMES = st.sampled_from(["A", "B", "Topics", "Rack", "names", "tags", "groups", "flat", "tag", "v1"])
"""Few names, some of them the compiler's own words, so that names meet: two fields of one struct, a field and a
common struct, a field and a decoder's constant."""
RANGES = st.sampled_from(["0+", "0+", "1+", "2+", "0-1", "1", "none"])
OPEN_RANGES = st.sampled_from(["0+", "1+"])


def spec_fields(depth: int) -> st.SearchStrategy[list[dict]]:
    primitive = st.sampled_from(PRIMITIVE_TYPES).flatmap(lambda t: st.sampled_from([t, f"[]{t}"]))
    kinds = [primitive.map(lambda t: {"type": t}), st.sampled_from(["Rack", "[]Rack", "Zone", "[]Other"]).map(lambda t: {"type": t})]
    if depth:
        kinds.append(
            st.tuples(st.sampled_from(["Inner", "Other", "Rack"]), st.booleans(), spec_fields(depth - 1)).map(
                lambda t: {"type": ("[]" if t[1] else "") + t[0], "fields": t[2]}
            )
        )
    tagged = st.none() | st.tuples(OPEN_RANGES | RANGES, st.integers(0, 2), st.booleans())
    field = st.tuples(FIELD_NAMES, st.one_of(kinds), RANGES, st.none() | st.none() | OPEN_RANGES, tagged)
    return st.lists(field, max_size=4).map(
        lambda items: [
            {"name": name, **kind, "versions": tag[0] if tag and tag[2] else versions}  # mostly tagged in all its versions
            | ({"nullableVersions": nullable} if nullable else {})
            | ({"taggedVersions": tag[0], "tag": tag[1]} if tag else {})
            for name, kind, versions, nullable, tag in items
        ]
    )


specs_texts = st.tuples(
    st.sampled_from(["0-2", "0", "1-3"]),
    st.sampled_from(["none", "0+", "0+", "1+"]),
    spec_fields(2),
    st.lists(st.tuples(st.sampled_from(["Rack", "Zone"]), spec_fields(1)), max_size=2),
)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=specs_texts, data=st.data())
def test_any_spec_the_check_passes_compiles_and_decodes_what_the_encoder_writes(spec, data):
    """Random specs (names that meet, structs by name and inline, tags, nullable and tagged ranges): either the check
    names a problem, or every version of both halves compiles, with and without spans, and reads back what the
    encoder wrote from the same definitions. The check never raises."""
    valid, flexible, fields, common = spec
    body = {"apiKey": 1000, "name": "XRequest", "type": "request", "validVersions": valid, "flexibleVersions": flexible}
    body |= {"fields": fields, "commonStructs": [{"name": n, "versions": "0+", "fields": f} for n, f in common]}
    request = json.dumps(body, indent=1)
    response = request.replace('"XRequest"', '"XResponse"').replace('"request"', '"response"')
    specs = load([SpecFile("XRequest.json", request), SpecFile("XResponse.json", response)], [])
    assert all(isinstance(problem, Problem) for problem in specs.problems)
    if specs.problems:
        return
    [api] = specs.definitions
    catalog = Catalog(specs.definitions)
    plain, spans = CompiledBodies(catalog, raw_records_hook), CompiledBodies(catalog, raw_records_hook, spans=True)
    for version in api.versions:
        for direction in ("request", "response"):
            definition = api.request(version) if direction == "request" else api.response(version)
            assert definition is not None
            value = data.draw(struct_of(definition.fields, version, version in definition.flexible))
            encoded = Encoder().encode(definition.fields, version, version in definition.flexible, value)
            for bodies in (plain, spans):
                decoded, diagnostics = bodies.decode(api.key, version, direction, encoded, 0)
                assert diagnostics == [] and normal(decoded.fields, encoded) == normal(value)


def test_kafka_s_own_specs_pass_the_check():
    """The checker is Kafka's generator's rules, not stricter: every spec of both snapshots passes."""
    specs_dir = ROOT.parent / "shared" / "kafka-message-specs"
    if not specs_dir.is_dir():
        pytest.skip("Kafka's message specs are not here (../shared/kafka-message-specs)")
    for folder in (specs_dir, specs_dir / "kafka-3.9"):
        specs = from_folders([folder], [])
        assert not specs.problems, specs.problems[:5]
        assert len(specs.apis) > 80


def test_a_catalogue_of_users_specs_leaves_the_built_in_one_as_it_is(drafts):
    before = (dict(BUILTIN.apis), dict(BUILTIN.names), BUILTIN.max_version, BUILTIN.top_version)
    catalog = Catalog(drafts.definitions)
    assert catalog.names[32767] == "AlterAcls" and catalog.max_version[300] == 0 and len(catalog.max_version) == 32768
    assert catalog.is_flexible(120, 0) and catalog.request_header_version(1000, 0) == 1
    assert 32767 not in BUILTIN.names and not BUILTIN.known_request(300, 0)
    assert (dict(BUILTIN.apis), dict(BUILTIN.names), BUILTIN.max_version, BUILTIN.top_version) == before


def test_the_spark_job_sends_the_specs_to_its_executors(drafts, tmp_path):
    """Executors are other processes: the spec files' text travels in the job's config and is installed there."""
    pytest.importorskip("pyarrow", reason="the pipeline needs pyarrow: pip install 'kdissect[spark]'")
    from kdissect.pipeline.session import SparkUnavailable, check_java, check_pyspark

    try:
        check_pyspark()
        check_java()
    except SparkUnavailable as exc:
        pytest.skip(f"Spark is not here: {exc}")
    import pyarrow.dataset as ds

    rich = rich_exchanges(drafts)
    capture = write_capture(tmp_path / "drafts.pcap", [(Conversation(), [f for *_, f in rich], True)])
    out = tmp_path / "tables"
    wanted = [item for item in rich if item[0].name != "ListAcls"]
    options = ["--spec-dir", DRAFTS, *KEY_OPTIONS, "-Y", "not request.Principal"]  # a field only ListAcls requests have
    done = kdissect("spark", capture, "--out", out, "--master", "local[1]", "-q", *options)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    table = ds.dataset(out / "exchanges", format="parquet", partitioning="hive").to_table().to_pylist()
    got = sorted((json.loads(row["json"]) for row in table), key=lambda e: e["correlation_id"])
    assert sorted({row["api"] for row in table}) == sorted(api.name for api, *_ in wanted)
    assert len(got) == len(wanted)
    for exchange, (api, request, response, _) in zip(got, wanted):
        check_exchange(exchange, api, api.max_version, request, response)
