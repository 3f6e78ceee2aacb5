"""Display filters (-Y) against a plain-Python reference over the unfiltered JSON, on every capture here and in
../shared/captures-public.

Each expression runs the way `kdissect read -Y` runs it: compiled once, its header-level verdict handed to the
core (which then skips the bodies of exchanges it rejects), its matcher applied to what the core yields. What
passes must be exactly the exchanges the reference picks out of `read --json` without a filter, with exactly
the same JSON: skipping bodies must change nothing of what is shown.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.capture import open_capture
from kdissect.decode.decoder import Decoder
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.filter import FilterError, compile_filter
from kdissect.schema import BUILTIN
from kdissect.schema.encoder import Encoder
from kdissect.testing.body_encoder import build, encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response
from kdissect.views.json_lines import decode_bytes, exchange_json
from kdissect.views.summary import UNDECODED, Summary

ROOT = Path(__file__).resolve().parent.parent
PROJECT = sorted((ROOT / "captures").glob("*.pcap"))
PUBLIC = sorted((ROOT.parent / "shared" / "captures-public").glob("*.pcap*"))
CAPTURES = PROJECT + PUBLIC
PORTS = frozenset({9092, 36333})
"""The public captures' broker ports, as tests/test_public_captures.py reads them."""


def dissect(path: Path, expression: str | None = None) -> list[Exchange]:
    """The exchanges `read -Y expression` shows, made the way the command makes them."""
    wanted = compile_filter([("-Y", expression)] if expression else [], BUILTIN)
    with open_capture(path) as source:
        events = make_dissector(Options(ports=PORTS, keep=wanted.keep)).run(source.packets())
        return [e for e in events if isinstance(e, Exchange) and wanted.matches(e)]


@cache
def unfiltered(path: Path) -> tuple[list[Exchange], list[dict]]:
    """Every exchange of a capture and its JSON, as `read --json` writes it."""
    exchanges = dissect(path)
    return exchanges, [json.loads(json.dumps(exchange_json(e))) for e in exchanges]


# -- the reference: plain Python over the JSON -----------------------------------------------------------------


def leaves(message: dict) -> list[dict]:
    """A legacy message's records: itself when uncompressed, its wrapped messages opened."""
    out = [message] if message["codec"] == "none" else []
    for inner in message["messages"]:
        out += leaves(inner)
    return out


def at(e: dict, dotted: str) -> list:
    """Every value at `side.A.B...` of the JSON, arrays flattened; `records` under a records field means every
    record of every batch; a consumer-protocol payload read by kdissect is entered through `_kdissect`."""
    side, *names = dotted.split(".")
    nodes = [e[side]["body"]] if e[side] and e[side]["body"] else []
    for i, name in enumerate(names):
        out: list = []
        for node in nodes:
            if not isinstance(node, dict):
                continue
            if name == "records" and "batches" in node:
                for batch in node["batches"]:
                    out += batch["records"] if batch["format"] == "v2" else leaves(batch)
                continue
            read = (node.get("_kdissect") or {}).get(name)
            value = read if isinstance(read, dict) and i < len(names) - 1 else node.get(name)
            if value is not None:
                out += value if isinstance(value, list) else [value]
        nodes = out
    return nodes


def raw(values: list) -> list[bytes]:
    return [decode_bytes(v) for v in values]


def ts(e: dict) -> int:
    return (e["request"] or e["response"])["ts_ns"]


def codes(e: dict) -> list[int]:
    return [x["code"] for x in e["errors"]]


def names(e: dict) -> list[str]:
    return [x["name"] for x in e["errors"]]


def diagnostics(e: dict) -> list[str]:
    return [d["code"] for side in ("request", "response") if e[side] for d in e[side]["diagnostics"]]


def lat(e: dict) -> float | None:
    return e["latency_ms"]


def epoch(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()) * 1_000_000_000


PRODUCE_RECORDS = "request.TopicData.PartitionData.Records"
FETCH_RECORDS = "response.Responses.Partitions.Records"

EXPRESSIONS = [
    # the exchange's own fields
    ("api == Fetch", lambda e: e["api_name"] == "Fetch"),
    ("api == 1", lambda e: e["api_key"] == 1),
    ("api == fetch", lambda e: e["api_name"] == "Fetch"),
    ('api == "JoinGroup"', lambda e: e["api_name"] == "JoinGroup"),
    ("api_key == 3", lambda e: e["api_key"] == 3),
    ("api in {Produce, Fetch, 18}", lambda e: e["api_key"] in (0, 1, 18)),
    ("api contains Group", lambda e: e["api_name"] is not None and "Group" in e["api_name"]),
    ('api matches "^(Describe|List)"', lambda e: e["api_name"] is not None and e["api_name"].startswith(("Describe", "List"))),
    ("api_name == Metadata and api_version == 12", lambda e: e["api_name"] == "Metadata" and e["api_version"] == 12),
    ("version >= 9", lambda e: e["api_version"] is not None and e["api_version"] >= 9),
    ("version in {0..2, 7}", lambda e: e["api_version"] in (0, 1, 2, 7)),
    ("api > 20", lambda e: e["api_key"] is not None and e["api_key"] > 20),
    ("correlation_id < 3", lambda e: e["correlation_id"] is not None and e["correlation_id"] < 3),
    ('client_id == "kdrig-admin"', lambda e: e["client_id"] == "kdrig-admin"),
    ("client_id == kdrig-setup", lambda e: e["client_id"] == "kdrig-setup"),
    ("client_id contains member", lambda e: e["client_id"] is not None and "member" in e["client_id"]),
    ('client_id matches "^kdrig-legacy-0\\.(8|9)"', lambda e: (e["client_id"] or "").startswith(("kdrig-legacy-0.8", "kdrig-legacy-0.9"))),
    ("client_id", lambda e: bool(e["client_id"])),
    ("not client_id", lambda e: not e["client_id"]),
    ("status == unanswered", lambda e: e["status"] == "unanswered"),
    ("status != ok", lambda e: e["status"] != "ok"),
    ("status in {orphan-response, unanswered}", lambda e: e["status"] in ("orphan-response", "unanswered")),
    ("latency_ms > 1", lambda e: lat(e) is not None and lat(e) > 1),
    ("latency_ms > 500us", lambda e: lat(e) is not None and lat(e) > 0.5),
    ("latency_ms >= 1s", lambda e: lat(e) is not None and lat(e) >= 1000),
    ("latency_ms <= 0.3", lambda e: lat(e) is not None and lat(e) <= 0.3),
    ("not latency_ms", lambda e: not lat(e)),
    ('time >= "2026-11-21T13:34:00Z"', lambda e: ts(e) >= epoch("2026-11-21T13:34:00")),
    ('time < "2026-11-21 13:33:30.5"', lambda e: ts(e) < epoch("2026-11-21T13:33:30") + 500_000_000),
    ("time > 1795268040", lambda e: ts(e) > 1795268040 * 10**9),
    ("connection == 2", lambda e: e["connection"]["id"] == 2),
    ("connection in {1, 3} and api == ApiVersions", lambda e: e["connection"]["id"] in (1, 3) and e["api_name"] == "ApiVersions"),
    ("client.port > 50000", lambda e: e["connection"]["client"]["port"] > 50000),
    ("broker.port == 9092", lambda e: e["connection"]["broker"]["port"] == 9092),
    ('client.address != "127.0.0.1"', lambda e: e["connection"]["client"]["address"] != "127.0.0.1"),
    ("broker contains :36333", lambda e: e["connection"]["broker"]["port"] == 36333),
    ("id <= 10", lambda e: e["id"] <= 10),
    ("not api == ApiVersions", lambda e: e["api_name"] != "ApiVersions"),
    ("!(api == Metadata) && version > 5", lambda e: e["api_name"] != "Metadata" and (e["api_version"] or 0) > 5),
    ("api == Heartbeat || api == JoinGroup", lambda e: e["api_name"] in ("Heartbeat", "JoinGroup")),
    ("(api == Fetch or api == Produce) and latency_ms > 2", lambda e: e["api_key"] in (0, 1) and (lat(e) or 0) > 2),
    # what bodies mean
    ("topic == codecs", lambda e: "codecs" in e["topics"]),
    ("topic", lambda e: bool(e["topics"])),
    ('topic matches "^admin-"', lambda e: any(t.startswith("admin-") for t in e["topics"])),
    ("count(topic) >= 2", lambda e: len(e["topics"]) >= 2),
    ("group", lambda e: bool(e["groups"])),
    ("group contains kgroup", lambda e: any("kgroup" in g for g in e["groups"])),
    ("error", lambda e: bool(e["errors"])),
    ("not error", lambda e: not e["errors"]),
    ("error == REBALANCE_IN_PROGRESS", lambda e: 27 in codes(e)),
    ("error == 27", lambda e: 27 in codes(e)),
    ("error in {MEMBER_ID_REQUIRED, topic_already_exists}", lambda e: {"MEMBER_ID_REQUIRED", "TOPIC_ALREADY_EXISTS"} & set(names(e))),
    ("error contains TOPIC", lambda e: any("TOPIC" in n for n in names(e))),
    ("diagnostic", lambda e: bool(diagnostics(e))),
    ("diagnostic == body.trailing-bytes or error", lambda e: "body.trailing-bytes" in diagnostics(e) or bool(e["errors"])),
    # paths into bodies, by the specs' names
    ("request.Acks == 0", lambda e: 0 in at(e, "request.Acks")),
    ("request.Acks == -1", lambda e: -1 in at(e, "request.Acks")),
    ("request.Acks != -1", lambda e: bool(at(e, "request.Acks")) and -1 not in at(e, "request.Acks")),
    ("not request.Acks == -1", lambda e: -1 not in at(e, "request.Acks")),
    ("any(request.Acks != -1)", lambda e: any(a != -1 for a in at(e, "request.Acks"))),
    ("request.TransactionalId", lambda e: any(at(e, "request.TransactionalId"))),
    ("response.ThrottleTimeMs == 0", lambda e: 0 in at(e, "response.ThrottleTimeMs")),
    ("request.TimeoutMs >= 30s", lambda e: any(v >= 30000 for v in at(e, "request.TimeoutMs"))),
    ("response.ErrorCode != 0", lambda e: bool(at(e, "response.ErrorCode")) and 0 not in at(e, "response.ErrorCode")),
    ("response.ErrorCode == MEMBER_ID_REQUIRED", lambda e: 79 in at(e, "response.ErrorCode")),
    (
        "response.Responses.PartitionResponses.ErrorCode == UNKNOWN_PRODUCER_ID",
        lambda e: 59 in at(e, "response.Responses.PartitionResponses.ErrorCode"),
    ),
    (
        "all(response.Responses.Partitions.ErrorCode == 0)",
        lambda e: bool(at(e, "response.Responses.Partitions.ErrorCode")) and set(at(e, "response.Responses.Partitions.ErrorCode")) == {0},
    ),
    (
        "any(response.Responses.PartitionResponses.BaseOffset > 10)",
        lambda e: any(v > 10 for v in at(e, "response.Responses.PartitionResponses.BaseOffset")),
    ),
    ("count(request.Topics) > 1", lambda e: len(at(e, "request.Topics")) > 1),
    ("count(request.Topics) == 0 and api == Metadata", lambda e: not at(e, "request.Topics") and e["api_name"] == "Metadata"),
    ("request.Topics.Name contains admin", lambda e: any("admin" in n for n in at(e, "request.Topics.Name") if isinstance(n, str))),
    (
        'response.Topics.Name matches "^c?admin-[ab]$"',
        lambda e: any(n in ("admin-a", "admin-b", "cadmin-a", "cadmin-b") for n in at(e, "response.Topics.Name")),
    ),
    ("response.Topics.TopicId", lambda e: any(at(e, "response.Topics.TopicId"))),
    ("request.GroupId == kdrig-kgroup", lambda e: "kdrig-kgroup" in at(e, "request.GroupId")),
    ("request.ProtocolType == consumer", lambda e: "consumer" in at(e, "request.ProtocolType")),
    ("request.SessionTimeoutMs >= 10s", lambda e: any(v >= 10000 for v in at(e, "request.SessionTimeoutMs"))),
    ("request.Protocols.Metadata.Topics == kgrp", lambda e: "kgrp" in at(e, "request.Protocols.Metadata.Topics")),
    ("response.Members.Metadata.Topics", lambda e: any(at(e, "response.Members.Metadata.Topics"))),
    ("request.IsolationLevel == 1 and api == Fetch", lambda e: 1 in at(e, "request.IsolationLevel") and e["api_key"] == 1),
    # records, in requests and responses
    (
        f"{PRODUCE_RECORDS}.records.key contains key-2",
        lambda e: any(b"key-2" in k for k in raw(at(e, f"{PRODUCE_RECORDS}.records.key")) if k),
    ),
    (
        f"{PRODUCE_RECORDS}.records.key == ff:00:fe:80:81:7f",
        lambda e: b"\xff\x00\xfe\x80\x81\x7f" in raw(at(e, f"{PRODUCE_RECORDS}.records.key")),
    ),
    (f'{PRODUCE_RECORDS}.records.value == ""', lambda e: b"" in raw(at(e, f"{PRODUCE_RECORDS}.records.value"))),
    (f"{PRODUCE_RECORDS}.records.headers.key == trace", lambda e: "trace" in at(e, f"{PRODUCE_RECORDS}.records.headers.key")),
    (f"{PRODUCE_RECORDS}.batches.codec == zstd", lambda e: "zstd" in at(e, f"{PRODUCE_RECORDS}.batches.codec")),
    (f"{PRODUCE_RECORDS}.batches.transactional", lambda e: any(at(e, f"{PRODUCE_RECORDS}.batches.transactional"))),
    (f"{PRODUCE_RECORDS}.batches.magic < 2", lambda e: any(m < 2 for m in at(e, f"{PRODUCE_RECORDS}.batches.magic"))),
    (f"count({PRODUCE_RECORDS}.records) > 5", lambda e: len(at(e, f"{PRODUCE_RECORDS}.records")) > 5),
    (
        f"len({PRODUCE_RECORDS}.records.value) > 1000",
        lambda e: any(len(v) > 1000 for v in raw(at(e, f"{PRODUCE_RECORDS}.records.value")) if v),
    ),
    (
        f"all({PRODUCE_RECORDS}.batches.crc_valid == true)",
        lambda e: bool(at(e, f"{PRODUCE_RECORDS}.batches.crc_valid")) and all(at(e, f"{PRODUCE_RECORDS}.batches.crc_valid")),
    ),
    (f"{FETCH_RECORDS}.records.key", lambda e: any(raw(at(e, f"{FETCH_RECORDS}.records.key")))),
    (
        f"{FETCH_RECORDS}.records.control.name == COMMIT",
        lambda e: any(c and c["name"] == "COMMIT" for c in at(e, f"{FETCH_RECORDS}.records.control")),
    ),
    (
        "api == Produce and not request.TopicData.PartitionData.Records.batches.codec in {none}",
        lambda e: e["api_name"] == "Produce" and "none" not in at(e, f"{PRODUCE_RECORDS}.batches.codec"),
    ),
]


def test_there_are_enough_expressions():
    assert len(EXPRESSIONS) >= 60


@pytest.mark.parametrize("expression,reference", EXPRESSIONS, ids=[e for e, _ in EXPRESSIONS])
def test_expression_matches_the_reference_with_the_same_json(expression, reference):
    picked = shown = 0
    total = 0
    for path in CAPTURES:
        _, everything = unfiltered(path)
        want = [e for e in everything if reference(e)]
        got = [json.loads(json.dumps(exchange_json(e))) for e in dissect(path, expression)]
        assert [e["id"] for e in got] == [e["id"] for e in want], path.name
        assert got == want, path.name  # exactly the JSON of the unfiltered run
        picked, shown, total = picked + len(want), shown + len(got), total + len(everything)
    assert 0 < picked < total, "each expression must tell exchanges apart on these captures"


# -- the language's laws, over random expressions ----------------------------------------------------------------

ATOMS = [expression for expression, _ in EXPRESSIONS]


def expressions() -> st.SearchStrategy[str]:
    return st.recursive(
        st.sampled_from(ATOMS),
        lambda inner: st.one_of(
            st.builds(lambda a: f"not ({a})", inner),
            st.builds(lambda a, b: f"({a}) and ({b})", inner, inner),
            st.builds(lambda a, b: f"({a}) || ({b})", inner, inner),
        ),
        max_leaves=5,
    )


@cache
def pool() -> list[Exchange]:
    """Exchanges of every kind: a consumer group, admin calls, records of every codec, orphans, unanswered."""
    chosen = ["consumer-group-kafka-python", "admin-kafka-python", "produce-codecs-confluent", "produce-transactions", "legacy-magic1"]
    found = [p for p in PROJECT if any(p.name.startswith(name) for name in chosen)] + PUBLIC
    return [e for p in found for e in unfiltered(p)[0]]


LAWS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@LAWS
@given(expressions(), expressions())
def test_two_filters_are_their_conjunction(a, b):
    apart = compile_filter([("-Y", a), ("-Y", b)], BUILTIN)
    together = compile_filter([("-Y", f"({a}) and ({b})")], BUILTIN)
    assert [apart.matches(e) for e in pool()] == [together.matches(e) for e in pool()]


@LAWS
@given(expressions())
def test_not_is_the_complement(a):
    yes, no = compile_filter([("-Y", a)], BUILTIN), compile_filter([("-Y", f"not ({a})")], BUILTIN)
    assert all(yes.matches(e) != no.matches(e) for e in pool())


@LAWS
@given(expressions())
def test_the_header_verdict_never_rejects_what_matches(a):
    """`keep` False (from the request alone, or with the response) means `matches` is False, and once False
    it stays False when the response comes: the core relies on both."""
    wanted = compile_filter([("-Y", a)], BUILTIN)
    if wanted.keep is None:
        return
    for e in pool():
        if e.request is None or e.request.header is None:
            continue
        early = wanted.keep(e.connection, e.request, None)
        late = early if e.response is None else wanted.keep(e.connection, e.request, e.response)
        assert early or not late
        assert late or not wanted.matches(e)


# -- skipping bodies changes nothing that is shown, even where later bodies need earlier ones --------------------

JOIN_GROUP, SYNC_GROUP, SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA, FETCH, HEARTBEAT = 11, 14, 17, 36, 3, 1, 12
TOPIC_ID = "00000000-0000-0000-0000-00000000abcd"


def subscription_bytes() -> bytes:
    from kdissect.schema import CONSUMER_PROTOCOL_ASSIGNMENT

    spec = CONSUMER_PROTOCOL_ASSIGNMENT[0]
    value = build(spec.fields, 0, {"AssignedPartitions": [{"Topic": "orders", "Partitions": [0, 1]}], "UserData": None})
    return b"\x00\x00" + Encoder().encode(spec.fields, 0, False, value)


def stateful_packets() -> list:
    """A connection whose later bodies read what earlier ones said: a SASL mechanism, a group's protocol type
    (a connect group, whose assignment bytes look like a consumer's), topic ids named by a Metadata response."""
    clock = Clock()
    conv = Conversation(client_port=40001, clock=clock)
    other = Conversation(client_port=40002, clock=clock)
    assignment = subscription_bytes()
    calls = [
        (conv, SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"}, {"Mechanisms": ["PLAIN"]}),
        (conv, SASL_AUTHENTICATE, 2, {"AuthBytes": b"\0alice\0secret"}, {"AuthBytes": b""}),
        (conv, JOIN_GROUP, 5, {"GroupId": "g", "ProtocolType": "connect", "Protocols": [{"Name": "default"}]}, {"MemberId": "m"}),
        (conv, SYNC_GROUP, 3, {"GroupId": "g", "Assignments": [{"MemberId": "m", "Assignment": assignment}]}, {"Assignment": assignment}),
        (other, METADATA, 12, {"Topics": None}, {"Topics": [{"Name": "orders", "TopicId": TOPIC_ID}]}),
        (conv, HEARTBEAT, 4, {"GroupId": "g"}, {}),
        (
            conv,
            FETCH,
            13,
            {"Topics": [{"TopicId": TOPIC_ID, "Partitions": [{"Partition": 0}]}]},
            {"Responses": [{"TopicId": TOPIC_ID, "Partitions": [{"PartitionIndex": 0}]}]},
        ),
    ]
    packets = conv.handshake() + other.handshake()
    for correlation, (side, key, version, req, resp) in enumerate(calls, 1):
        packets += side.send(CLIENT, request(key, version, correlation, encode_body(key, version, "request", req), client_id="c"))
        header = 1 if BUILTIN.is_flexible(key, version) else 0
        packets += side.send(SERVER, response(correlation, encode_body(key, version, "response", resp), header))
    return packets


STATEFUL = [
    "api == SaslAuthenticate",
    "api == SyncGroup",
    "api == Fetch",
    "api in {Fetch, SyncGroup} and latency_ms < 1s",
    "not api in {17, 11, 3}",
]


def shown_json(expression: str, packets: list) -> list[dict]:
    wanted = compile_filter([("-Y", expression)], BUILTIN)
    events = make_dissector(Options(keep=wanted.keep)).run(packets)
    return [exchange_json(e) for e in events if isinstance(e, Exchange) and wanted.matches(e)]


@pytest.mark.parametrize("expression", STATEFUL)
def test_bodies_that_teach_are_decoded_even_when_rejected(expression):
    packets = stateful_packets()
    every = [exchange_json(e) for e in make_dissector(Options()).run(packets) if isinstance(e, Exchange)]
    wanted = compile_filter([("-Y", expression)], BUILTIN)
    assert wanted.keep is not None
    want = [j for j, e in zip(every, [e for e in make_dissector(Options()).run(packets) if isinstance(e, Exchange)]) if wanted.matches(e)]
    assert want and shown_json(expression, packets) == want


def test_the_stateful_capture_would_tell_if_teaching_bodies_were_skipped(monkeypatch):
    """The test above can fail: decode every rejected body's state away and the shown JSON changes."""
    packets = stateful_packets()
    before = {expression: shown_json(expression, packets) for expression in STATEFUL[:3]}
    monkeypatch.setattr(Decoder, "carries_state", lambda self, api_key, version, direction: False)
    for expression, json_before in before.items():
        assert shown_json(expression, packets) != json_before, expression


def test_bodies_of_rejected_exchanges_are_not_decoded():
    wanted = compile_filter([("-Y", "api == Heartbeat")], BUILTIN)
    path = next(p for p in PROJECT if p.name.startswith("consumer-group-kafka-python"))
    with open_capture(path) as source:
        exchanges = [e for e in make_dissector(Options(keep=wanted.keep)).run(source.packets()) if isinstance(e, Exchange)]
    decoder = Decoder(BUILTIN)
    for e in exchanges:
        if e.api_key == HEARTBEAT:
            assert e.request.body is not None and e.response.body is not None
            continue
        teaches = [decoder.carries_state(e.api_key, e.api_version, side) for side in ("request", "response")]
        assert [m is not None and m.body is not None for m in (e.request, e.response)] == [
            t and m is not None for t, m in zip(teaches, (e.request, e.response))
        ], (e.id, e.api_key)
    assert any(e.api_key == JOIN_GROUP and e.request.body is not None for e in exchanges)  # a teaching request, kept
    assert any(e.api_key == FETCH and e.request.body is None for e in exchanges)


@pytest.mark.parametrize("expression", ["api == Heartbeat", "api == Fetch and topic == kgrp", "status != ok", "status == malformed"])
def test_the_totals_under_a_filter_tell_each_status_or_that_it_is_not_known(expression):
    """A hidden exchange is counted with its unfiltered status, or as not decoded when its response body was
    skipped; never as ok when it was an error."""
    wanted = compile_filter([("-Y", expression)], BUILTIN)
    undecoded = 0
    for path in CAPTURES:
        everything, _ = unfiltered(path)
        summary = Summary()
        with open_capture(path) as source:
            events = make_dissector(Options(ports=PORTS, keep=wanted.keep)).run(source.packets())
            seen = [e for e in events if isinstance(e, Exchange)]
        assert [e.id for e in seen] == [e.id for e in everything], path.name
        want: Counter[str] = Counter()
        for e, truth in zip(seen, everything):
            shown = wanted.matches(e)
            summary.add(e, shown)
            skipped = not shown and e.response is not None and e.response.body is None and e.status != "malformed"
            counted = UNDECODED if skipped else e.status
            assert counted == UNDECODED or counted == truth.status, (path.name, e.id)
            assert counted != UNDECODED or truth.status in ("ok", "error", "malformed"), (path.name, e.id)
            want[counted] += 1
        assert summary.statuses == want, path.name
        undecoded += want[UNDECODED]
    assert undecoded > 0 if expression.startswith("api") else undecoded == 0


def test_headers_only_leaves_body_fields_empty_without_failing():
    path = PROJECT[0]
    with open_capture(path) as source:
        exchanges = [e for e in make_dissector(Options(decode=False)).run(source.packets()) if isinstance(e, Exchange)]
    wanted = compile_filter([("-Y", "request.Acks or topic or api == Metadata")], BUILTIN)
    assert [e.id for e in exchanges if wanted.matches(e)] == [e.id for e in exchanges if e.api_key == METADATA]


# -- what is wrong with a filter, and where -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression,column,says",
    [
        ("latncy_ms > 5", 1, "unknown field 'latncy_ms' (did you mean 'latency_ms'?)"),
        ("api == Fetch and latncy > 5", 18, "did you mean 'latency_ms'?"),
        ("Acks == 0", 1, "did you mean 'request.Acks'?"),
        ("request.Topics.Partitons", 16, "no request has a field 'Partitons' under request.Topics (did you mean 'Partitions'"),
        ("request", 1, "request is a side, not a field"),
        ("(api == Fetch", 1, "this '(' is never closed"),
        ("api == Fetch)", 13, "this ')' closes nothing"),
        ("api == Fetch and", 17, "the filter ends where"),
        ("api == ", 8, "a value after '=='"),
        ("api = Fetch", 5, "a single '=' is not an operator"),
        ("api == Fetc", 8, "Fetc is not an API name (did you mean 'Fetch'?)"),
        ("error == NOT_LEADER", 10, "did you mean 'NOT_LEADER_OR_FOLLOWER'"),
        ("status == okay", 11, "okay is not a status"),
        ("latency_ms > slow", 14, "type mismatch: latency_ms is a number of milliseconds, and slow is not"),
        ("request.Acks == all", 17, "type mismatch"),
        ("client_id > 5", 11, "> compares numbers and times; client_id is text"),
        ("request.Acks contains 1", 14, "contains reads text and bytes"),
        ("request.Acks > 1s", 16, "a unit (ms, s, us) goes only with durations"),
        ('client_id matches "a(b"', 20, "bad regular expression: missing )"),
        ('client_id matches "(?<!x)y"', 20, "RE2 has no lookaround"),
        ('client_id matches "(a)\\1"', 23, "RE2 has no backreferences"),
        ('client_id matches "a{4294967296}"', 21, "a repetition count goes up to 1000"),
        ("(" * 65 + "api == Fetch" + ")" * 65, 65, "the filter nests more than 64 levels deep"),
        ("not " * 65 + "api == Fetch", 257, "the filter nests more than 64 levels deep"),
        ("(not " * 33 + "api == Fetch" + ")" * 33, 161, "the filter nests more than 64 levels deep"),
        ("correlation_id == " + "9" * 5000, 19, "a number has at most 20 digits"),
        ("latency_ms > 1e999", 14, "1e999 is too large for a number"),
        ("version in {1.." + "9" * 5000 + "}", 13, "a range is two whole numbers"),
        ("time > 1e300", 8, "a time lies between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z"),
        ('time < "9999-12-31T23:59:59-01:00"', 8, "a time lies between"),
        ("request.Topics == x", 19, "request.Topics holds structs"),
        ('client_id == "open', 14, "this string has no closing quote"),
        ("version in {3..1}", 13, "a range goes up"),
        ("api == Fetch api", 14, "expected 'and', 'or' or the end of the filter"),
        ("all(api == Fetch or api == Produce)", 18, "')' closing all(...)"),
        ("client_id == @x", 14, "unexpected '@'"),
    ],
)
def test_mistakes_name_the_column(expression, column, says):
    with pytest.raises(FilterError) as caught:
        compile_filter([("-Y", expression)], BUILTIN)
    error = caught.value
    assert error.column == column and says in str(error)
    line = str(error)
    assert "\n" not in line and line.startswith(f"-Y at column {column}: ")
    assert line.endswith(expression[: column - 1] + "^" + expression[column - 1 :])


def test_the_second_filter_is_named_when_it_is_wrong():
    from kdissect.commands.options import UserError, make_filter

    with pytest.raises(UserError, match=r"^-Y #2 at column 8: x is not an API name: api == \^x$"):
        make_filter(BUILTIN, ["api == Fetch", "api == x"])


def test_fixed_options_are_shorthands_of_the_language():
    from kdissect.filter.shorthands import shorthands

    parts = shorthands(BUILTIN, api="Produce,fetch", version="9-12", topic=['a"b'], errors=True, connection="1,2", min_latency=1.5)
    assert parts == [
        ("--api", "api_key in {0, 1}"),
        ("--version", "version in {9..12}"),
        ("--topic", 'topic in {"a\\"b"}'),
        ("--errors", "error or diagnostic"),
        ("--connection", "connection in {1, 2}"),
        ("--min-latency", "(latency_ms >= 1.5 or status == unanswered)"),
    ]
    compile_filter(parts, BUILTIN)  # every one compiles
    for bad, says in (
        (dict(api="Nope"), "--api: unknown API 'Nope'"),
        (dict(api="9" * 5000), "--api: unknown API '999"),
        (dict(version="7-3"), "--version: bad version '7-3'"),
    ):
        with pytest.raises(FilterError, match=says):
            shorthands(BUILTIN, **bad)


# -- docs/filters.md stays true --------------------------------------------------------------------------------

DOC = ROOT / "docs" / "filters.md"


def doc_commands() -> list[tuple[str, str]]:
    """(command, what it prints) of every `$ kdissect ...` line in the doc's console blocks."""
    out: list[tuple[str, str]] = []
    inside = False
    for line in DOC.read_text().splitlines():
        if line.startswith("```"):
            inside = line == "```console"
            continue
        if inside and line.startswith("$ kdissect "):
            out.append((line[len("$ kdissect ") :], ""))
        elif inside and out:
            out[-1] = (out[-1][0], out[-1][1] + line + "\n")
    return out


def run_cli(command: str) -> str:
    import contextlib
    import io
    import os
    import shlex

    from kdissect.cli import main

    printed = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            try:
                main(shlex.split(command))
            except SystemExit:
                pass
    finally:
        os.chdir(cwd)
    return printed.getvalue()


@pytest.mark.parametrize("command,printed", doc_commands(), ids=[c for c, _ in doc_commands()])
def test_the_docs_examples_print_what_the_docs_show(command, printed):
    assert run_cli(command) == printed


def test_the_docs_have_twenty_examples_and_every_field():
    text = DOC.read_text()
    examples = text[text.index("## Examples") :]
    assert sum(1 for command, _ in doc_commands() if f"$ kdissect {command}" in examples) >= 20
    from kdissect.filter.fields import ALIASES, EXCHANGE_FIELDS

    assert all(f"`{name}`" in text for name in [*EXCHANGE_FIELDS, *ALIASES])
