"""`kdissect doctor` on real bytes: each finding fires on a capture that has the problem and stays silent on the
healthy ones.

The rig's doctor-* captures (rig/scenarios/doctor.py) reproduce problems with real clients against tansu, and
their manifests list the findings each must yield (`expect` lines) with the evidence that must name them.
What tansu cannot do (throttling, OFFSET_OUT_OF_RANGE, fetch sessions, KIP-848 fencing, refused batches, SASL
failures, slow brokers) is crafted here with the project's encoders; what a capture loses is made by dropping
packets from a real capture.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.capture import open_capture
from kdissect.dissector import Options, make_dissector
from kdissect.doctor.engine import RULES, Doctor
from kdissect.doctor.finding import Finding
from kdissect.doctor.protocol import REMOVED_IN_4
from kdissect.doctor.rule import SettingError
from kdissect.doctor.values import Values
from kdissect.events import Exchange
from kdissect.filter import EVERYTHING, Filter, compile_filter
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import BUILTIN
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
PUBLIC = ROOT.parent / "shared" / "captures-public"
SPECS_39 = ROOT.parent / "shared" / "kafka-message-specs" / "kafka-3.9"
SCENARIOS = sorted(CAPTURES.glob("doctor-*.pcap"))
PUBLIC_CAPTURES = sorted(p for p in PUBLIC.glob("*.pcap*") if p.is_file())
HEALTHY = sorted(p for p in CAPTURES.glob("*.pcap") if not p.name.startswith(("doctor-", "values-"))) + PUBLIC_CAPTURES
"""Captures whose only findings are what is true of them (TRUE_OF); values-* hold poison pills."""
MS = 1_000_000


def packets_of(path: Path) -> list:
    with open_capture(path) as source:
        return list(source.packets())


def diagnose(packets: list, changes: tuple[str, ...] = (), wanted: Filter = EVERYTHING, **options) -> tuple[list, dict[int, Exchange]]:
    doctor = Doctor(changes, wanted)
    exchanges = {}
    for event in make_dissector(Options(**options)).run(packets):
        doctor.add(event)
        if isinstance(event, Exchange):
            exchanges[event.id] = event
    return doctor.findings(), exchanges


def ids(findings: list) -> set[str]:
    return {f.id for f in findings}


def expectations(path: Path, kind: str = "expect") -> list[dict]:
    lines = [json.loads(line) for line in path.with_suffix(".manifest.jsonl").read_text().splitlines()]
    return [line for line in lines if line["kind"] == kind]


def named(finding: Finding, line: dict, exchanges: dict[int, Exchange]) -> bool:
    """Whether a finding is the one a manifest line describes: its id, and evidence naming what the line names."""
    evidence = finding.evidence
    return (
        finding.id == line["finding"]
        and bool(evidence.exchanges or evidence.connections)
        and ("client_id" not in line or line["client_id"] in evidence.client_ids)
        and ("group" not in line or line["group"] in evidence.groups)
        and ("topic" not in line or any(t == line["topic"] for t, _ in evidence.partitions))
        and ("partition" not in line or (line["topic"], line["partition"]) in evidence.partitions)
        and ("api" not in line or line["api"] in {exchanges[i].api_name for i in evidence.exchanges})
    )


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_each_scenario_yields_its_findings_with_their_evidence(path: Path) -> None:
    expected, unwanted = expectations(path), expectations(path, "expect-not")
    assert expected or unwanted, f"{path.name}: the manifest says which findings it must (or must not) yield"
    findings, exchanges = diagnose(packets_of(path))
    for line in expected:
        found = [f.id for f in findings]
        assert any(named(f, line, exchanges) for f in findings), f"{path.name}: no finding as {line} among {found}"
    for line in unwanted:
        assert not any(named(f, line, exchanges) for f in findings), f"{path.name}: {line['finding']}: {line['why']}"


def test_the_scenarios_cover_the_groups_and_consumers_findings() -> None:
    covered = {line["finding"] for path in SCENARIOS for line in expectations(path)}
    assert {
        "group.rebalance-storm",
        "group.member-removed",
        "group.commit-failed",
        "group.member-id-required",
        "consumer.lag",
        "producer.unknown-topic",
        "producer.tiny-batches",
        "protocol.connection-churn",
        "consumer.never-commits",
        "consumer.empty-fetch-spin",
        "latency.outliers",
        "producer.duplicate-send",
    } <= covered


def deprecated_in_39() -> dict[int, int]:
    """API key -> the highest version Kafka 3.9's specs mark deprecated (KIP-896: removed in 4.0)."""
    table = {}
    for spec in SPECS_39.glob("*Request.json"):
        text = spec.read_text()
        found = re.search(r'"deprecatedVersions":\s*"0(?:-(\d+))?"', text)
        if found:
            table[int(re.search(r'"apiKey":\s*(\d+)', text).group(1))] = int(found.group(1) or 0)
    return table


def test_tls_without_keys_is_a_finding_and_with_them_none() -> None:
    path = CAPTURES / "tls13-aes128-kafka-python.pcap"
    packets = packets_of(path)
    findings, exchanges = diagnose(packets)
    hidden = next(f for f in findings if f.id == "capture.tls-hidden")
    assert not exchanges and hidden.severity == "warning" and "--tls-keylog" in hidden.title
    assert len(hidden.evidence.connections) == 6 and hidden.title.startswith("6 TLS connections hid")
    late = [p for p in packets if p.index > 40]  # the first connections' handshakes are not in the capture
    title = next(f.title for f in diagnose(late, ports=frozenset({9093}))[0] if f.id == "capture.tls-hidden")
    assert "begun before the capture" in title, title
    findings, exchanges = diagnose(packets, tls_keylog=path.with_suffix(".keylog").read_bytes())
    assert exchanges and "capture.tls-hidden" not in ids(findings)


def test_the_kafka_4_removals_are_kafka_3_9s_deprecated_versions() -> None:
    assert REMOVED_IN_4 == deprecated_in_39()


TRUE_OF = {
    # what captures/README.md's notes column records of tansu and the clients
    "admin-kafka-python.pcap": {"protocol.broker-closed"},  # tansu closes the connection on ListOffsets v9
    "legacy-magic0-kafka-python.pcap": {"protocol.broker-closed", "errors.unexplained"},  # a short message set: a close;
    "legacy-magic1-kafka-python.pcap": {"protocol.broker-closed", "errors.unexplained"},  # the others: UNKNOWN_PRODUCER_ID
    "produce-idempotent.pcap": {"producer.init-producer-id-refused"},  # aiokafka's InitProducerId v0 fails on tansu
    # the public captures' own failures
    "deepflow__01-fetch-v12-unknown.pcap": {"errors.unexplained"},  # an error code no Kafka has (5120)
    "deepflow__11-join-group-v7.pcap": {"errors.unexplained"},  # UNKNOWN_SERVER_ERROR
    "deepflow__14-sync-group-v5.pcap": {"errors.unexplained"},  # UNKNOWN_SERVER_ERROR
}
"""The problems the captures that are not doctor-* scenarios really have, besides versions Kafka 4.0 removed."""


@pytest.mark.parametrize("path", HEALTHY, ids=lambda p: p.name)
def test_other_captures_yield_what_is_true_of_them_and_nothing_else(path: Path) -> None:
    """Their real problems (TRUE_OF) and clients pinned to versions Kafka 4.0 removed (the legacy captures, old
    public ones), checked against the requests themselves; no other warning."""
    keylog = path.with_suffix(".keylog")  # a TLS capture is healthy with its keys
    findings, exchanges = diagnose(packets_of(path), tls_keylog=keylog.read_bytes() if keylog.exists() else b"")
    removed = deprecated_in_39()
    old = {
        (e.api_key, e.api_version)
        for e in exchanges.values()
        if e.api_key in removed and e.api_version is not None and e.api_version <= removed[e.api_key]
    }
    problems = {f.id for f in findings if f.severity != "info"}
    assert problems - {"protocol.removed-in-kafka-4"} == TRUE_OF.get(path.name, set())
    for finding in findings:
        if finding.id == "protocol.removed-in-kafka-4":
            assert all((exchanges[i].api_key, exchanges[i].api_version) in old for i in finding.evidence.exchanges)
    assert bool(old) == ("protocol.removed-in-kafka-4" in problems)


@pytest.mark.parametrize("path", sorted(CAPTURES.glob("*.pcap")) + PUBLIC_CAPTURES, ids=lambda p: p.name)
def test_every_number_is_reproduced_by_its_filter_and_every_failure_is_accounted_for(path: Path) -> None:
    """The doctor's two promises, on every capture: a finding's filter selects exactly what its title counts, and
    every exchange `read` shows as not ok is in the evidence of a warning, an error or an expected finding."""
    keylog = path.with_suffix(".keylog")  # without its keys a TLS capture has no exchanges; tls-hidden tells that
    findings, exchanges = diagnose(packets_of(path), tls_keylog=keylog.read_bytes() if keylog.exists() else b"")
    accounted: set[int] = set()
    for finding in findings:
        evidence = finding.evidence
        carried = compile_filter([("-Y", evidence.filter)], BUILTIN)
        chosen = [e for e in exchanges.values() if carried.matches(e)]
        count = len({e.connection.id for e in chosen}) if evidence.unit == "connection" else len(chosen)
        assert (count, finding.title.split()[0]) == (evidence.count, str(count)), f"{finding.id}: {finding.title}"
        if finding.severity != "info" or RULES[finding.id].expected:
            accounted |= {e.id for e in chosen}
    failed = {e.id: (e.api_name, e.status) for e in exchanges.values() if e.status not in ("ok", "no-response-expected")}
    assert {i: failed[i] for i in failed.keys() - accounted} == {}


def test_settings_move_thresholds() -> None:
    storm = packets_of(CAPTURES / "doctor-rebalance-storm.pcap")
    assert "group.rebalance-storm" in ids(diagnose(storm)[0])
    assert "group.rebalance-storm" not in ids(diagnose(storm, ("group.rebalance-storm.threshold=10",))[0])
    lag = packets_of(CAPTURES / "doctor-lag.pcap")
    assert "consumer.lag" not in ids(diagnose(lag, ("consumer.lag.threshold=1000",))[0])
    # tansu holds every JoinGroup for half the rebalance timeout: not slow by default, slow at 0.4
    group = packets_of(CAPTURES / "consumer-group-kafka-python.pcap")
    assert "group.slow-join" not in ids(diagnose(group)[0])
    assert "group.slow-join" in ids(diagnose(group, ("group.slow-join.threshold=0.4",))[0])


@pytest.mark.parametrize(
    "change,message",
    [
        ("nope.threshold=1", "no finding 'nope'"),
        ("consumer.lag.bogus=1", "has no threshold 'bogus' (it has: threshold)"),
        ("consumer.lag.threshold=many", "give a number"),
        ("consumer.lag.threshold=-1", "not negative"),
    ],
)
def test_bad_settings_are_named(change: str, message: str) -> None:
    with pytest.raises(SettingError, match=re.escape(message)):
        Doctor((change,))


def rules_table() -> str:
    """The table of docs/doctor.md, as the rules themselves say it."""
    rows = ["| id | severity | what it looks for | thresholds (`--set ID.NAME=VALUE`, default) |", "|---|---|---|---|"]
    for rule in RULES.values():
        thresholds = "; ".join(f"`{t.name}` = {t.default:g} {t.unit}: {t.meaning}" for t in rule.thresholds)
        rows.append(f"| `{rule.id}` | {rule.severity} | {rule.summary} | {thresholds} |")
    return "\n".join(rows)


def test_every_rule_is_documented() -> None:
    assert len(RULES) >= 25
    for rule in RULES.values():
        assert rule.summary and rule.explanation and rule.advice
    assert rules_table() in (ROOT / "docs" / "doctor.md").read_text(), "docs/doctor.md's table: paste rules_table() there"


def test_a_filter_restricts_the_evidence_not_the_rules() -> None:
    packets = packets_of(CAPTURES / "doctor-member-removed.pcap")
    only_a = compile_filter([("-Y", 'client_id == "kdrig-frozen-a"')], BUILTIN)
    findings, _ = diagnose(packets, wanted=only_a)
    assert "group.member-removed" not in ids(findings)  # its one piece of evidence is B's
    handshake = next(f for f in findings if f.id == "group.member-id-required")
    assert handshake.evidence.client_ids == ("kdrig-frozen-a",)
    # counted over what the filter shows (1 of 3), as the filter the finding carries counts it
    assert handshake.title.startswith("1 first JoinGroup") and handshake.evidence.count == 1
    assert handshake.evidence.filter.endswith('and (client_id == "kdrig-frozen-a")')
    carried = compile_filter([("-Y", handshake.evidence.filter)], BUILTIN)
    assert [e.id for e in diagnose(packets)[1].values() if carried.matches(e)] == list(handshake.evidence.exchanges)


# -- crafted: what tansu cannot do ---------------------------------------------------------------------------------


def crafted(calls: list[tuple], start: int = 0) -> list:
    """One connection of (api key, version, request values, response values, ms before the response) calls;
    a response of None is never sent."""
    clock = Clock(step=10_000)
    conv = Conversation(clock=clock)
    packets = conv.handshake()
    for correlation, (key, version, req, resp, wait_ms) in enumerate(calls, start + 1):
        packets += conv.send(CLIENT, request(key, version, correlation, encode_body(key, version, "request", req), client_id="craft"))
        if resp is None:
            continue
        clock.ts += wait_ms * MS
        packets += conv.send(
            SERVER, response(correlation, encode_body(key, version, "response", resp), BUILTIN.response_header_version(key, version))
        )
    return packets + conv.close()


def fetch(error: int = 0, top: int = 0, high: int = 0, offset: int = 0, wait: int = 500) -> tuple:
    return (
        1,
        12,
        {
            "ReplicaId": -1,
            "MaxWaitMs": wait,
            "MinBytes": 1,
            "Topics": [{"Topic": "t", "Partitions": [{"Partition": 0, "FetchOffset": offset}]}],
        },
        {"ErrorCode": top, "Responses": [{"Topic": "t", "Partitions": [{"PartitionIndex": 0, "ErrorCode": error, "HighWatermark": high}]}]},
        1,
    )


def produce(error: int = 0, records: bytes | None = None) -> tuple:
    partition = {"Index": 0, "Records": records} if records is not None else {"Index": 0}
    return (
        0,
        9,
        {"Acks": -1, "TimeoutMs": 1000, "TopicData": [{"Name": "t", "PartitionData": [partition]}]},
        {"Responses": [{"Name": "t", "PartitionResponses": [{"Index": 0, "ErrorCode": error}]}]},
        1,
    )


def batch(sequence: int) -> bytes:
    return encode_batch([Draft(key=b"k", value=b"v")], producer_id=7, producer_epoch=0, base_sequence=sequence)


CRAFTED = {
    "client.throttled": [(3, 12, {"Topics": []}, {"ThrottleTimeMs": 250}, 1)],
    "consumer.offset-out-of-range": [fetch(error=1)],
    "consumer.fetch-session-error": [fetch(top=70)],
    "producer.not-leader": [produce(error=6)],
    "producer.too-large": [produce(error=10)],
    "producer.duplicate-send": [produce(records=batch(0)), produce(records=batch(0))],
    "protocol.unsupported-version": [(3, 12, {"Topics": []}, {"Topics": [{"Name": "t", "ErrorCode": 35}]}, 1)],
    "protocol.sasl-failed": [(17, 1, {"Mechanism": "PLAIN"}, {}, 1), (36, 2, {"AuthBytes": b"\0u\0p"}, {"ErrorCode": 58}, 1)],
    "group.member-fenced": [(68, 0, {"GroupId": "g", "MemberId": "m", "MemberEpoch": 3}, {"ErrorCode": 110}, 1)],
    "group.slow-join": [(11, 7, {"GroupId": "g", "SessionTimeoutMs": 10_000, "RebalanceTimeoutMs": 1000}, {"GenerationId": 1}, 950)],
    "protocol.above-advertised": [
        (18, 3, {}, {"ApiKeys": [{"ApiKey": 3, "MinVersion": 0, "MaxVersion": 9}]}, 1),
        (3, 12, {"Topics": []}, {}, 1),
    ],
    "consumer.empty-fetch-spin": [fetch(wait=0)] * 80,
    "errors.retriable": [(10, 3, {"Key": "g", "KeyType": 0}, {"ErrorCode": 15}, 1)],  # COORDINATOR_NOT_AVAILABLE
    "protocol.metadata-storm": [(3, 12, {"Topics": []}, {}, 1)] * 130,
    "latency.outliers": [(3, 12, {"Topics": []}, {}, 1)] * 40 + [(3, 12, {"Topics": []}, {}, 400)],
    "producer.long-transaction": [
        (24, 3, {"V3AndBelowTransactionalId": "tx", "V3AndBelowTopics": [{"Name": "t", "Partitions": [0]}]}, {}, 70_000),
        (26, 3, {"TransactionalId": "tx", "Committed": True}, {}, 1),
    ],
}


@pytest.mark.parametrize("finding", sorted(CRAFTED))
def test_crafted_problems_yield_their_finding(finding: str) -> None:
    findings, exchanges = diagnose(crafted(CRAFTED[finding]))
    assert finding in ids(findings)
    evidence = next(f for f in findings if f.id == finding).evidence
    assert evidence.exchanges and evidence.client_ids == ("craft",)


def test_crafted_healthy_traffic_yields_nothing() -> None:
    """The same shapes without the problem: no error codes, a fetch that waits, a steady broker."""
    calls = [
        call for i in range(10) for call in (fetch(high=5, offset=5), produce(records=batch(2 * i)), produce(records=batch(2 * i + 1)))
    ]
    calls += [(3, 12, {"Topics": []}, {}, 1)] * 40
    assert [f.id for f in diagnose(crafted(calls))[0] if f.severity != "info"] == []


def test_a_followers_fetch_is_no_consumer() -> None:
    """Replication from broker 0 (ReplicaId 0) far behind the leader is not consumer lag."""
    key, version, request, response, wait = fetch(high=5000, offset=0)
    consumer = [(key, version, request, response, wait), fetch(high=9000, offset=10)]
    assert "consumer.lag" in ids(diagnose(crafted(consumer))[0])
    replica = [
        (key, version, {**request, "ReplicaId": 0}, response, wait),
        (key, version, {**fetch(offset=10)[2], "ReplicaId": 0}, fetch(high=9000)[3], wait),
    ]
    assert "consumer.lag" not in ids(diagnose(crafted(replica))[0])


def test_latency_outliers_leave_long_polls_out() -> None:
    """Fetches that wait out their MaxWaitMs are long polls, not slow: no outlier, a consumer.long-poll note."""
    polls = [(*fetch(wait=500)[:4], 1)] * 40 + [(*fetch(wait=500)[:4], 500)] * 5
    findings = diagnose(crafted(polls))[0]
    assert "latency.outliers" not in ids(findings)
    assert "consumer.long-poll" in ids(findings)


# -- what a capture loses, made from real captures -----------------------------------------------------------------


def test_lost_segments_and_the_requests_they_leave_unanswered() -> None:
    packets = packets_of(CAPTURES / "client-kafka-python.pcap")
    _, exchanges = diagnose(packets)
    victim = next(e for e in exchanges.values() if e.api_key == 3 and e.response is not None and e.id > 3)
    lost = [p for p in packets if p.ts != victim.response.ts]  # on loopback a Metadata response is one packet
    findings = ids(diagnose(lost)[0])
    assert {"capture.lost-segments", "protocol.unanswered"} <= findings
    assert not {"capture.lost-segments", "protocol.unanswered"} & ids(diagnose(packets)[0])


def test_one_sided_connections() -> None:
    packets = packets_of(CAPTURES / "client-kafka-python.pcap")
    one_way = [p for p in packets if p.data[34:36] != (9092).to_bytes(2, "big")]  # Ethernet, IPv4: the TCP source port
    assert "capture.one-sided" in ids(diagnose(one_way)[0])


def test_mid_stream_connections_are_noted() -> None:
    findings = diagnose(packets_of(PUBLIC / "deepflow__00-produce-v9.pcap"))[0]
    assert "capture.mid-stream" in ids(findings)
    assert "capture.mid-stream" not in ids(diagnose(packets_of(CAPTURES / "client-kafka-python.pcap"))[0])


# -- the command ---------------------------------------------------------------------------------------------------


def kdissect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_doctor_json_fail_on_and_explain() -> None:
    removed = CAPTURES / "doctor-member-removed.pcap"
    done = kdissect("doctor", removed, "--json", "--fail-on", "warning")
    assert done.returncode == 1
    *objects, verdict = [json.loads(line) for line in done.stdout.splitlines()]
    assert {o["type"] for o in objects} == {"finding"} and verdict["type"] == "verdict"
    assert objects[0]["severity"] == "warning" and objects[0]["evidence"]["client_ids"] == ["kdrig-frozen-b"]
    problems = [o["id"] for o in objects if o["severity"] != "info"]
    assert (verdict["errors"], verdict["warnings"], verdict["exchanges"]) == (0, len(problems), 175)
    assert verdict["verdict"].startswith(f"{len(problems)} problems ({len(problems)} warnings) in 29.3 s: 10 connections")
    assert kdissect("doctor", CAPTURES / "client-confluent.pcap", "--fail-on", "warning").returncode == 0
    assert kdissect("doctor", removed, "--fail-on", "error").returncode == 0
    text = kdissect("doctor", removed).stdout
    assert "group.member-removed" in text and f"kdissect show {removed}" in text
    explained = kdissect("doctor", "--explain", "group.rebalance-storm").stdout
    assert "--set group.rebalance-storm.threshold=N (generations per minute, default 4)" in explained
    listed = kdissect("doctor", "--rules").stdout
    assert all(rule_id in listed for rule_id in RULES)
    for args, message in (
        (("--explain", "nope"), "no such finding"),
        ((removed, "--set", "x"), "say ID.NAME=VALUE"),
        ((removed, "--set", "nope.threshold=1"), "no finding 'nope'"),
        ((removed, "--fail-on", "info"), "say warning or error"),
        ((), "name the capture"),
    ):
        done = kdissect("doctor", *args)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["healthy-kafkajs.pcap", "healthy-long-poll-telemetry.pcap", "client-confluent.pcap"])
def test_a_healthy_capture_is_a_verdict_and_a_few_lines(name: str) -> None:
    done = kdissect("doctor", CAPTURES / name)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0].startswith("Doctor: nothing wrong in ") and len(lines) <= 10
    told = " ".join(line.strip() for line in lines[1:])
    assert "info findings not shown (--all shows them): " in told  # what is hidden is named
    everything = kdissect("doctor", CAPTURES / name, "--all").stdout
    hidden = [name.split(" ×")[0] for name in told.split("them): ", 1)[1].split(", ")]
    assert all(f"  {finding}  " in everything for finding in hidden)


def test_a_senders_malformed_frame_is_not_capture_damage() -> None:
    """tansu's short ListOffsets v0 and OffsetFetch v3 bodies are captured whole: exit status 0, and the doctor
    names the broker that wrote them."""
    path = CAPTURES / "doctor-truncated-responses.pcap"
    done = kdissect("read", path)
    assert done.returncode == 0 and "damaged" not in done.stderr
    verdict = " ".join(done.stdout[done.stdout.rindex("Doctor: ") :].split())  # wrapped to the width it is laid out for
    assert "body.malformed" in done.stdout and "protocol.malformed" in verdict
    told = [f.title for f in diagnose(packets_of(path))[0] if f.id == "protocol.malformed"]
    assert sorted(t.split(":")[0] for t in told) == [
        "1 OffsetFetch v3 response from broker 127.0.0.1",
        "15 ListOffsets v0 responses from broker 127.0.0.1",
    ]


def test_stats_has_a_findings_section() -> None:
    path = CAPTURES / "doctor-lag.pcap"
    assert "consumer.lag" in kdissect("stats", path).stdout
    *lines, verdict = map(json.loads, kdissect("stats", path, "--json").stdout.splitlines())
    tables = {o["table"]: o["rows"] for o in lines}
    assert verdict["type"] == "verdict" and verdict["warnings"] == 1
    assert [row["id"] for row in tables["findings"] if row["severity"] == "warning"] == ["consumer.lag"]


def test_the_report_wraps_under_each_line_at_80_columns() -> None:
    """A wrapped explanation continues under its own start, not at the left edge (a reader scans the left edge
    for finding ids)."""
    import io

    from kdissect.views.console import PipeConsole
    from kdissect.views.doctor import print_findings

    stream = io.StringIO()
    console = PipeConsole(file=stream, highlight=False, soft_wrap=True, width=80)
    findings, _ = diagnose(packets_of(CAPTURES / "doctor-rebalance-storm.pcap"))
    print_findings(findings, console, "FILE")
    lines = stream.getvalue().splitlines()
    assert len(lines) > 40 and max(map(len, lines)) <= 80
    assert all(line == line.rstrip() for line in lines)
    ids_at_edge = {line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("   ")}
    assert ids_at_edge == {f.id for f in findings}
    assert all(line.startswith("  ") or line.split(" ")[0] in {"WARNING", "INFO", "ERROR"} for line in lines if line)


# -- what is worth knowing: info findings on real captures ---------------------------------------------------------

INFO = {
    "producer.acks-zero": CAPTURES / "produce-acks.pcap",
    "producer.aborted-transactions": CAPTURES / "produce-transactions.pcap",
    "consumer.long-poll": CAPTURES / "client-kafka-python.pcap",
    "protocol.client": CAPTURES / "client-kafka-python.pcap",
    "group.rebalances": CAPTURES / "consumer-group-kafka-python.pcap",
    "protocol.client-closed": CAPTURES / "consumer-group-kafka-python.pcap",  # its last Fetch, as it left
    "admin.already-so": CAPTURES / "admin-kafka-python.pcap",  # CreateTopics of a topic that exists
    "protocol.version-negotiation": CAPTURES
    / "doctor-fetch-spin-noida.pcap",  # noida-db has ApiVersions up to v3: kafka-python asks v4 first
    "capture.ended-first": PUBLIC / "ndpi__kafka_2024.pcap",
}


@pytest.mark.parametrize("finding,capture", sorted(INFO.items()), ids=str)
def test_info_findings_on_real_captures(finding: str, capture: Path) -> None:
    assert finding in ids(diagnose(packets_of(capture))[0])


def test_info_findings_say_what_they_saw() -> None:
    findings = {f.id: f for f in diagnose(packets_of(CAPTURES / "produce-acks.pcap"))[0]}
    assert findings["producer.acks-zero"].title == "2 Produce requests with acks=0"
    assert "producer.acks-zero" not in ids(diagnose(packets_of(CAPTURES / "produce-idempotent.pcap"))[0])
    findings = {f.id: f for f in diagnose(packets_of(CAPTURES / "produce-transactions.pcap"))[0]}
    assert findings["producer.aborted-transactions"].title == "1 EndTxn request aborted its transaction, of 3 transactions ended (33 %)"
    clients = [f.title for f in diagnose(packets_of(CAPTURES / "client-kafka-python.pcap"))[0] if f.id == "protocol.client"]
    assert clients == [
        "31 exchanges of kafka-python 3.0.12 client (client ids kdrig-kp-consumer, kdrig-kp-producer, kdrig-setup): Produce v9, Fetch v12, "
        "ListOffsets v9, Metadata v12, OffsetCommit v8, OffsetFetch v8, FindCoordinator v6, JoinGroup v7, Heartbeat v4, "
        "LeaveGroup v5, SyncGroup v5, ApiVersions v4, CreateTopics v7"
    ]


def test_every_finding_is_proven_somewhere_in_this_file() -> None:
    proven = {line["finding"] for path in SCENARIOS for line in expectations(path)} | set(CRAFTED) | set(INFO)
    proven |= {finding for true in TRUE_OF.values() for finding in true}
    proven |= {"protocol.removed-in-kafka-4", "capture.lost-segments", "protocol.unanswered", "capture.one-sided", "capture.mid-stream"}
    proven |= {"capture.tls-hidden"}  # test_tls_without_keys_is_a_finding_and_with_them_none
    proven |= {"doctor.bounds"}  # tests/test_hostile_doctor.py
    proven |= {rule.id for rule in Values.RULES}  # tests/test_values.py, on the rig's value captures
    assert proven == set(RULES)
