"""What Kafka carries inside its group protocol, read: Kafka Connect's workers (protocol type "connect"), Kafka
Streams' user data (consumer groups whose assignor is "stream") and Schema Registry's leader election ("sr").

The bytes are Kafka's own: tests/kafka_written/payloads.tsv holds what Kafka's serializers (ConnectProtocol,
IncrementalCooperativeConnectProtocol, SubscriptionInfo, AssignmentInfo) write for the values of Kafka's tests,
compiled from Apache Kafka's sources by tests/kafka_written/build.sh; each test names the Kafka test it takes its
values from. Round trips through the project's encoder cover every version (tests/test_decode_roundtrip.py), and
bad bytes are told with their place, in the payload and in the frame.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kdissect.decode import connect, registry, streams
from kdissect.decode.misread import Misread
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.filter import compile_filter
from kdissect.limits import DEFAULT_LIMITS
from kdissect.schema import BUILTIN, CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from kdissect.schema.connect_protocol import CONNECT_ASSIGNMENT
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response
from kdissect.testing.payload_encoder import encode_json, encode_payload
from kdissect.views.json_lines import exchange_json, value_json

WRITTEN = Path(__file__).resolve().parent / "kafka_written" / "payloads.tsv"
KAFKA = dict(line.split("\t") for line in WRITTEN.read_text().splitlines() if not line.startswith("#"))
KAFKA = {name: bytes.fromhex(data) for name, data in KAFKA.items()}
URL = "leaderUrl:8083"
JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS = 11, 14, 15


def read(reader, data: bytes) -> dict:
    """A reading as the JSON layout writes it, after checking that it read whole."""
    found, wrong = reader(data)
    assert wrong == []
    return value_json(found)


def connectors(assignment: list[dict]) -> dict[str, list[int]]:
    return {a["Connector"]: a["Tasks"] for a in assignment}


# -- Kafka Connect: ConnectProtocolCompatibilityTest, WorkerCoordinatorIncrementalTest, DistributedHerderTest ----------


def test_connect_v0_metadata():
    """testEagerToEagerMetadata: WorkerState("leaderUrl:8083", 1) by ConnectProtocol.serializeMetadata."""
    assert read(connect.metadata, KAFKA["connect.v0.metadata"]) == {"Version": 0, "Url": URL, "ConfigOffset": 1}


@pytest.mark.parametrize("version", [1, 2])
def test_connect_v1_v2_metadata_carries_the_workers_assignment(version):
    """testCoopToCoopMetadata (V1, "compatible") and testSessionedToCoopMetadata (V2, "sessioned"): the worker's
    current assignment, empty here, rides in Allocation in the same version."""
    got = read(connect.metadata, KAFKA[f"connect.v{version}.metadata"])
    assert (got["Version"], got["Url"], got["ConfigOffset"]) == (version, URL, 1)
    assert got["_kdissect"]["Allocation"] == {
        "Version": version,
        "Error": 0,
        "Leader": "leader",
        "LeaderUrl": URL,
        "ConfigOffset": 1,
        "Assignment": [],
        "Revoked": [],
        "ScheduledDelay": 0,
    }


def test_connect_v0_assignments():
    """testEagerToEagerAssignment: the leader runs connector1 and connector3 (task -1: the connector itself) and
    connector2's task 0; the member connector2 and tasks connector1-0 and connector3-0 (Java's HashSet orders the
    connectors)."""
    leader = read(connect.assignment, KAFKA["connect.v0.assignment.leader"])
    assert (leader["Version"], leader["Error"], leader["Leader"], leader["LeaderUrl"], leader["ConfigOffset"]) == (0, 0, "leader", URL, 1)
    assert connectors(leader["Assignment"]) == {"connector1": [-1], "connector3": [-1], "connector2": [0]}
    assert "Revoked" not in leader and "ScheduledDelay" not in leader
    member = read(connect.assignment, KAFKA["connect.v0.assignment.member"])
    assert member["Leader"] == "member"
    assert connectors(member["Assignment"]) == {"connector2": [-1], "connector1": [0], "connector3": [0]}


def test_connect_v1_assignment_and_a_scheduled_rebalance():
    """testCoopToCoopAssignment's leader (V1 adds Revoked and ScheduledDelay), and an assignment that holds back a
    departed worker's work for 5 s."""
    leader = read(connect.assignment, KAFKA["connect.v1.assignment.leader"])
    assert connectors(leader["Assignment"]) == {"connector1": [-1], "connector3": [-1], "connector2": [0]}
    assert (leader["Revoked"], leader["ScheduledDelay"]) == ([], 0)
    delayed = read(connect.assignment, KAFKA["connect.v1.assignment.delay"])
    assert (delayed["ConfigOffset"], delayed["ScheduledDelay"], connectors(delayed["Assignment"])) == (3, 5000, {"connector1": [-1, 0]})


def test_connect_v2_revocation_and_config_mismatch():
    """DistributedHerderTest: the connector sourceA destroyed, its connector and task 1 revoked (V2, config offset 2);
    and the CONFIG_MISMATCH answer, named beside its code."""
    revoked = read(connect.assignment, KAFKA["connect.v2.assignment.revoked"])
    assert (revoked["Version"], revoked["ConfigOffset"], revoked["Assignment"]) == (2, 2, [])
    assert connectors(revoked["Revoked"]) == {"sourceA": [-1, 1]}
    mismatch = read(connect.assignment, KAFKA["connect.v2.assignment.config-mismatch"])
    assert (mismatch["Error"], mismatch["_kdissect"]) == (1, {"Error": "CONFIG_MISMATCH"})


def test_connect_metadata_of_a_worker_running_tasks():
    """WorkerCoordinatorIncrementalTest.testMetadataWithExistingAssignment: a worker joins with what it runs."""
    got = read(connect.metadata, KAFKA["connect.v1.metadata.running"])
    assert (got["Url"], got["ConfigOffset"]) == ("worker1:8083", 3)
    assert connectors(got["_kdissect"]["Allocation"]["Assignment"]) == {"connector1": [-1, 0], "connector2": [0]}


# -- Kafka Streams: SubscriptionInfoTest and AssignmentInfoTest --------------------------------------------------------

PROCESS = "00000000-0000-0000-0000-000000000001"  # AssignmentTestUtils.PID_1: new UUID(0, 1)
PREVIOUS = {(0, 0), (0, 1), (1, 0)}  # SubscriptionInfoTest.ACTIVE_TASKS
STANDBY = {(1, 1), (2, 0)}  # SubscriptionInfoTest.STANDBY_TASKS
OFFSET_SUMS = {(0, 0): -2, (0, 1): -2, (1, 0): -2, (1, 1): 0, (2, 0): 10}  # TASK_OFFSET_SUMS; -2 is Task.LATEST_OFFSET


def tasks(items: list[dict]) -> set[tuple[int, int]]:
    return {(t["topicGroupId"], t["partition"]) for t in items}


def offset_sums(info: dict) -> dict[tuple[int, int], int]:
    """SubscriptionInfo's task offset sums, nested by subtopology in v7-v9 and flat from v10."""
    out = {}
    for entry in info["taskOffsetSums"]:
        for p in entry.get("partitionToOffsetSum", [entry]):
            out[(entry["topicGroupId"], p["partition"])] = p["offsetSum"]
    return out


@pytest.mark.parametrize("version", range(1, 12))
def test_streams_subscription_every_version(version):
    """shouldEncodeAndDecodeVersion1..11: versions 1-2 carry no latest supported version, 2+ the user endpoint, 1-6 the
    previous and standby tasks, 7+ the task offset sums instead, 8+ the unique field, 9+ the error code, 11 client tags."""
    info = read(streams.subscription, KAFKA[f"streams.subscription.v{version}"])
    assert (info["version"], info["processId"]) == (version, PROCESS)
    assert info.get("latestSupportedVersion") == (None if version < 3 else 11)
    assert info.get("userEndPoint") == (None if version < 2 else "localhost:80")
    if version < 7:
        assert (tasks(info["prevTasks"]), tasks(info["standbyTasks"])) == (PREVIOUS, STANDBY)
    else:
        assert offset_sums(info) == OFFSET_SUMS and "prevTasks" not in info
    assert ("uniqueField" in info, "errorCode" in info) == (version >= 8, version >= 9)
    assert info.get("clientTags") == ([{"key": "t1", "value": "v1"}, {"key": "t2", "value": "v2"}] if version == 11 else None)


def test_streams_subscription_with_named_topologies():
    """shouldEncodeAndDecodeVersion10WithNamedTopologies: NAMED_TASK_OFFSET_SUMS."""
    info = read(streams.subscription, KAFKA["streams.subscription.v10.named"])
    sums = {(t["namedTopology"], t["topicGroupId"], t["partition"]): t["offsetSum"] for t in info["taskOffsetSums"]}
    assert sums == {
        ("topology0", 0, 0): -2,
        ("topology0", 0, 1): -2,
        ("topology0", 1, 0): 5,
        ("topology0", 1, 1): 10_000,
        ("topology1", 0, 0): -2,
        ("topology1", 0, 1): 0,
        ("topology2", 0, 0): 10,
        ("topology2", 2, 0): 5,
    }


def test_a_streams_subscription_of_a_newer_version_tells_its_versions():
    """shouldAllowToDecodeFutureSupportedVersion's bytes: version and latest supported version 12, nothing more, as
    Kafka's own reader takes them; a note says so, at the first byte not read."""
    info, wrong = streams.subscription(struct.pack(">ii", 12, 12) + b"whatever v12 adds")
    assert value_json(info) == {"version": 12, "latestSupportedVersion": 12}
    assert wrong == [Misread("embedded.newer-version", wrong[0].message, 8, "note")] and "v12 is newer" in wrong[0].message


HOSTS = {("localhost", 8088): {("t0", 0), ("t1", 0), ("t2", 0)}, ("localhost", 8089): {("t0", 1), ("t1", 1), ("t2", 1)}}
STANDBY_HOSTS = {("localhost", 8088): {("t1", 0), ("t2", 0)}, ("localhost", 8089): {("t1", 1), ("t2", 1)}}


def by_host(hosts: list[dict]) -> dict[tuple[str, int], set[tuple[str, int]]]:
    """Partitions by host, each topic by name: stated (v2-v4) or by its dictionary index, named by kdissect (v5+)."""
    return {
        (h["host"], h["port"]): {(p.get("topic") or p["_kdissect"]["topicIndex"], p["partition"]) for p in h["partitions"]} for h in hosts
    }


@pytest.mark.parametrize("version", range(1, 12))
def test_streams_assignment_every_version(version):
    """AssignmentInfoTest.shouldEncodeAndDecodeVersion1..11: active tasks (TASK_1_0 twice), standby tasks with their
    partitions, partitions by host from v2 (by a topic dictionary from v5, standbys' from v6), the error code from v4
    (2, VERSION_PROBING), the next rebalance time from v7 (1000 ms in shouldEncodeAndDecodeNextRebalanceTime, v7)."""
    info = read(streams.assignment, KAFKA[f"streams.assignment.v{version}"])
    assert info["version"] == version and info.get("commonlySupportedVersion") == (None if version < 3 else 11)
    assert [(t["topicGroupId"], t["partition"]) for t in info["activeTasks"]] == [(0, 0), (0, 1), (1, 0), (1, 0)]
    standby = {(t["topicGroupId"], t["partition"]): {(p["topic"], p["partition"]) for p in t["partitions"]} for t in info["standbyTasks"]}
    assert standby == {(1, 0): {("t1", 0), ("t2", 0)}, (1, 1): {("t1", 1), ("t2", 1)}}
    assert (by_host(info["partitionsByHost"]) if version >= 2 else None) == (HOSTS if version >= 2 else None)
    assert (by_host(info["standbyPartitionsByHost"]) if version >= 6 else None) == (STANDBY_HOSTS if version >= 6 else None)
    assert ("topicDictionary" in info) == (version >= 5)
    assert info.get("errCode") == (None if version < 4 else 2)
    if version >= 4:
        assert info["_kdissect"]["errCode"] == "VERSION_PROBING"
    assert info.get("nextRebalanceMs") == (None if version < 7 else 1000 if version == 7 else 2**63 - 1)


def test_streams_assignment_with_named_topologies():
    """shouldEncodeAndDecodeVersion10WithNamedTopologies: each task's topology, written as UTF-16 code units, named."""
    info = read(streams.assignment, KAFKA["streams.assignment.v10.named"])
    active = [(t["_kdissect"]["namedTopology"], t["topicGroupId"], t["partition"]) for t in info["activeTasks"]]
    assert active == [
        ("topology0", 0, 1),
        ("topology0", 1, 0),
        ("topology0", 1, 0),
        ("topology1", 0, 1),
        ("topology1", 0, 1),
        ("topology2", 0, 0),
        ("topology2", 2, 0),
    ]
    assert [t["_kdissect"]["namedTopology"] for t in info["standbyTasks"]] == ["topology0", "topology0", "topology1"]


# -- bad bytes -----------------------------------------------------------------------------------------------------


READERS = {
    "connect.v0.assignment.leader": connect.assignment,
    "connect.v2.assignment.revoked": connect.assignment,
    "connect.v1.metadata.running": connect.metadata,
    "streams.subscription.v7": streams.subscription,
    "streams.subscription.v11": streams.subscription,
    "streams.assignment.v6": streams.assignment,
    "streams.assignment.v10.named": streams.assignment,
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_cut_is_told_with_its_place(name):
    """A payload cut anywhere: what was read, and one named misread at or before the cut; never an exception. A cut
    inside a worker's Allocation is told at its place in the metadata."""
    data = KAFKA[name]
    for cut in range(len(data)):
        found, wrong = READERS[name](data[:cut])
        assert len(wrong) == 1 and wrong[0].code == "embedded.malformed", (cut, wrong)
        assert 0 <= wrong[0].at <= cut, (cut, wrong[0])
    found, wrong = READERS[name](data + b"\x00")
    assert [(m.code, m.at) for m in wrong] == [("embedded.malformed", len(data))]


def test_a_cut_allocation_is_placed_in_the_metadata():
    """The metadata whole, the assignment inside its Allocation cut: told at its place in the metadata."""
    whole = KAFKA["connect.v1.metadata.running"]
    allocation = connect.metadata(whole)[0]["Allocation"]
    head = whole[: len(whole) - len(allocation) - 4]
    data = head + struct.pack(">i", len(allocation) - 5) + allocation[:-5]
    found, (misread,) = connect.metadata(data)
    inner, (cut,) = connect.assignment(allocation[:-5])
    assert misread.at == len(head) + 4 + cut.at and misread.message == cut.message
    assert found.annotations["Allocation"]["Assignment"] == inner["Assignment"]


def test_a_lying_count_never_allocates_what_it_claims():
    """Connect's Assignment array claiming 2^31-1 connectors in a few bytes."""
    head = KAFKA["connect.v0.assignment.leader"][:36]
    found, wrong = connect.assignment(head[:32] + struct.pack(">i", 2**31 - 1))
    assert wrong and wrong[0].code == "embedded.malformed" and found is not None


def test_a_huge_payload_costs_its_bytes_and_no_more():
    """A million tasks in one connector (4 MB) keep as many elements as a body's array keeps (max_array_elements);
    JSON past 1 MiB is not parsed."""
    tasks = [{"Connector": "c", "Tasks": list(range(1_000_000))}]
    data = encode_payload(CONNECT_ASSIGNMENT, 1, {"Leader": "l", "LeaderUrl": "u", "Assignment": tasks, "Revoked": []})
    found, wrong = connect.assignment(data)
    assert wrong == [] and len(found["Assignment"][0]["Tasks"]) == DEFAULT_LIMITS.max_array_elements
    assert found["ScheduledDelay"] == 0  # read past the elements not kept
    found, (misread,) = registry.identity(b'{"host": "' + b"x" * (2 << 20) + b'"}')
    assert found is None and "more than kdissect reads" in misread.message


def test_schema_registry_json():
    """Schema Registry's identity and assignment as its SchemaRegistryProtocol writes them (Jackson)."""
    identity = {"version": 1, "host": "sr-1", "port": 8081, "master_eligibility": True, "scheme": "http"}
    assert read(registry.identity, encode_json(identity)) == identity
    answer = {"version": 1, "error": 1, "master": "sr-1-member", "master_identity": identity}
    got = read(registry.assignment, encode_json(answer))
    assert got == {**answer, "_kdissect": {"error": "DUPLICATE_URLS"}}
    for bad, at in ((b'{"version": 1,', 14), (b"[1, 2]", 0), (b"\xff{}", 0)):
        found, wrong = registry.identity(bad)
        assert found is None and [(m.code, m.at) for m in wrong] == [("embedded.malformed", at)], bad
    deep = b"[" * 100_000 + b"]" * 100_000
    assert registry.identity(deep)[1][0].code == "embedded.malformed"


# -- in a capture: what the frame says, and where ------------------------------------------------------------------


def dissect(calls: list[tuple[int, int, dict, dict]], keep=None) -> list[Exchange]:
    conv = Conversation(clock=Clock())
    packets = conv.handshake()
    for correlation, (key, version, req, resp) in enumerate(calls, 1):
        packets += conv.send(CLIENT, request(key, version, correlation, encode_body(key, version, "request", req)))
        packets += conv.send(
            SERVER, response(correlation, encode_body(key, version, "response", resp), BUILTIN.response_header_version(key, version))
        )
    return [e for e in make_dissector(Options(keep=keep)).run(packets) if isinstance(e, Exchange)]


def test_a_connect_group_in_a_capture():
    """JoinGroup offers V2, V1 and V0 under their names; the leader's SyncGroup carries an assignment per worker, one
    cut short: read as far as it goes, and a diagnostic at the frame offset of the first byte it could not read."""
    metadata = {name: KAFKA[f"connect.v{v}.metadata"] for name, v in (("sessioned", 2), ("compatible", 1), ("default", 0))}
    protocols = [{"Name": name, "Metadata": data} for name, data in metadata.items()]
    join = (JOIN_GROUP, 5, {"GroupId": "connect-cluster", "ProtocolType": "connect", "Protocols": protocols}, {"ProtocolName": "sessioned"})
    cut = KAFKA["connect.v2.assignment.revoked"][:-6]
    assignments = [{"MemberId": "w1", "Assignment": KAFKA["connect.v2.assignment.config-mismatch"]}, {"MemberId": "w2", "Assignment": cut}]
    sync = (
        SYNC_GROUP,
        3,
        {"GroupId": "connect-cluster", "Assignments": assignments},
        {"Assignment": KAFKA["connect.v2.assignment.revoked"]},
    )
    joined, synced = dissect([join, sync])
    offered = exchange_json(joined)["request"]["body"]["Protocols"]
    assert [p["_kdissect"]["Metadata"]["Version"] for p in offered] == [2, 1, 0]
    body = exchange_json(synced)["request"]["body"]
    assert body["Assignments"][0]["_kdissect"]["Assignment"]["_kdissect"] == {"Error": "CONFIG_MISMATCH"}
    assert body["Assignments"][1]["_kdissect"]["Assignment"]["Revoked"] == [{"Connector": "sourceA"}]  # read up to the cut tasks
    (diagnostic,) = synced.request.diagnostics
    assert (diagnostic.code, diagnostic.severity, diagnostic.path) == ("embedded.malformed", "warning", "Assignments[1].Assignment")
    start = synced.request.frame.data.index(cut)
    found, (misread,) = connect.assignment(cut)
    assert diagnostic.offset == start + misread.at
    assert exchange_json(synced)["response"]["body"]["_kdissect"]["Assignment"]["ConfigOffset"] == 2


def subscription(user_data: bytes) -> bytes:
    return encode_payload(CONSUMER_PROTOCOL_SUBSCRIPTION, 1, {"Topics": ["input"], "UserData": user_data})


def assignment(user_data: bytes) -> bytes:
    return encode_payload(
        CONSUMER_PROTOCOL_ASSIGNMENT, 1, {"AssignedPartitions": [{"Topic": "input", "Partitions": [0]}], "UserData": user_data}
    )


def test_a_streams_group_in_a_capture():
    """A consumer group whose protocol is "stream": its user data read in JoinGroup's protocols and members, and in a
    SyncGroup v3 (which names no protocol) because the JoinGroup on the connection offered "stream" alone, whether
    or not a filter leaves the JoinGroup's answer undecoded; the same bytes in a group of another assignor stay
    bytes."""
    sub, info = subscription(KAFKA["streams.subscription.v11"]), KAFKA["streams.assignment.v7"]
    join = (
        JOIN_GROUP,
        5,
        {"GroupId": "app", "ProtocolType": "consumer", "Protocols": [{"Name": "stream", "Metadata": sub}]},
        {"ProtocolName": "stream", "Members": [{"MemberId": "m1", "Metadata": sub}]},
    )
    sync = (
        SYNC_GROUP,
        3,
        {"GroupId": "app", "Assignments": [{"MemberId": "m1", "Assignment": assignment(info)}]},
        {"Assignment": assignment(info)},
    )
    joined, synced = dissect([join, sync])
    member = exchange_json(joined)["response"]["body"]["Members"][0]["_kdissect"]["Metadata"]
    assert member["_kdissect"]["UserData"]["processId"] == PROCESS
    answer = exchange_json(synced)["response"]["body"]["_kdissect"]["Assignment"]
    assert answer["_kdissect"]["UserData"]["nextRebalanceMs"] == 1000
    assert not synced.request.diagnostics and not synced.response.diagnostics
    only_syncs = compile_filter([("-Y", "api == SyncGroup")], BUILTIN)  # the JoinGroup answer is not decoded then
    (filtered,) = dissect([join, sync], keep=only_syncs.keep)[1:]
    assert exchange_json(filtered) == exchange_json(synced)  # the request, always decoded, offered "stream" alone
    other = (JOIN_GROUP, 5, join[2] | {"Protocols": [{"Name": "range", "Metadata": sub}]}, join[3] | {"ProtocolName": "range"})
    (joined,) = dissect([other])
    assert "_kdissect" not in exchange_json(joined)["response"]["body"]["Members"][0]["_kdissect"]["Metadata"]


def test_a_cut_user_data_is_placed_in_the_frame():
    cut = KAFKA["streams.assignment.v7"][:40]
    (synced,) = dissect(
        [
            (
                SYNC_GROUP,
                5,
                {"GroupId": "app", "ProtocolType": "consumer", "ProtocolName": "stream"},
                {"ProtocolType": "consumer", "ProtocolName": "stream", "Assignment": assignment(cut)},
            )
        ]
    )
    (diagnostic,) = synced.response.diagnostics
    assert diagnostic.code == "embedded.malformed" and diagnostic.path == "Assignment"
    assert diagnostic.offset == synced.response.frame.data.index(cut) + streams.assignment(cut)[1][0].at


def test_a_schema_registry_election_in_a_capture():
    identity = {"version": 1, "host": "sr-1", "port": 8081, "master_eligibility": True, "scheme": "http"}
    join = (
        JOIN_GROUP,
        5,
        {"GroupId": "schema-registry", "ProtocolType": "sr", "Protocols": [{"Name": "v0", "Metadata": encode_json(identity)}]},
        {"ProtocolName": "v0"},
    )
    answer = {"version": 1, "error": 0, "master": "m1", "master_identity": identity}
    sync = (
        SYNC_GROUP,
        5,
        {"GroupId": "schema-registry", "ProtocolType": "sr", "ProtocolName": "v0"},
        {"ProtocolType": "sr", "ProtocolName": "v0", "Assignment": encode_json(answer)},
    )
    joined, synced = dissect([join, sync])
    assert exchange_json(joined)["request"]["body"]["Protocols"][0]["_kdissect"]["Metadata"] == identity
    assert exchange_json(synced)["response"]["body"]["_kdissect"]["Assignment"] == answer


def test_describe_groups_reads_every_member_in_its_groups_protocol():
    member = {
        "MemberId": "w1",
        "MemberMetadata": KAFKA["connect.v1.metadata.running"],
        "MemberAssignment": KAFKA["connect.v1.assignment.delay"],
    }
    group = {"GroupId": "connect-cluster", "ProtocolType": "connect", "ProtocolData": "compatible", "Members": [member]}
    (described,) = dissect([(DESCRIBE_GROUPS, 5, {"Groups": ["connect-cluster"]}, {"Groups": [group]})])
    read_member = exchange_json(described)["response"]["body"]["Groups"][0]["Members"][0]["_kdissect"]
    assert read_member["MemberMetadata"]["Url"] == "worker1:8083" and read_member["MemberAssignment"]["ScheduledDelay"] == 5000


def test_connect_assignment_table_is_connects():
    """Names and order of Kafka's ASSIGNMENT_V1 schema (error, leader, leader-url, config-offset, assignment, revoked, delay)."""
    assert [f.name for f in CONNECT_ASSIGNMENT[0].fields] == [
        "Error",
        "Leader",
        "LeaderUrl",
        "ConfigOffset",
        "Assignment",
        "Revoked",
        "ScheduledDelay",
    ]
