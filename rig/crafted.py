"""Captures built with kdissect's own encoders, for what the rig cannot record for real.

    python -m rig.crafted [NAME ...]      # writes captures/NAME.pcap and NAME.manifest.jsonl (every one without a name)

Kafka Connect and Kafka Streams are Java and cannot be installed here; tansu 0.6 serves none of Kafka's own topics
(__consumer_offsets exists there as an empty topic of no partitions) and no KIP-848, KIP-1071 or KIP-932 group. So
these conversations are made packet by packet (kdissect.testing.craft: Ethernet, IPv4, TCP with its handshake and
close), their Kafka bodies by kdissect.testing.body_encoder, the payloads inside them by payload_encoder and the
record batches by record_encoder, from the formats kdissect reads (schema/connect_protocol.py,
schema/streams_assignment.py, the specs' SubscriptionInfoData and the coordinators' record schemas). Where Kafka's
own serializers wrote bytes for the same values (tests/kafka_written/payloads.tsv, from Kafka's tests), those bytes
are used as they are. Each manifest says all this in its capture line (`crafted`) and lists what the capture holds
(`op` lines), the records read from Kafka's own topics with what they hold (`consumed` lines, with `reading`), and
for the doctor-* ones the findings it must yield (`expect` lines). Times and ids are fixed: the output is the same
at every run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kdissect.capture.writer import PcapWriter
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import BUILTIN, CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, ApiKey, ErrorCode
from kdissect.schema.connect_protocol import CONNECT_ASSIGNMENT, CONNECT_METADATA
from kdissect.schema.generated_extras import INTERNAL_TOPICS, STREAMS_SUBSCRIPTION_INFO
from kdissect.schema.streams_assignment import ASSIGNMENT_INFO
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response
from kdissect.testing.payload_encoder import encode_internal, encode_payload
from rig.manifest import enc

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
WRITTEN = ROOT / "tests" / "kafka_written" / "payloads.tsv"
LINKTYPE_ETHERNET = 1
START = 1_795_800_000_000_000_000
"""2026-11-27 17:20 UTC, near the rig's own captures, in ns."""
MS = 1_000_000
BROKER = "10.0.0.1"
NEVER = 2**63 - 1
BUILT_WITH = (
    "kdissect.testing: craft.Conversation (Ethernet, IPv4, TCP), body_encoder (Kafka bodies), payload_encoder (group "
    "payloads, records of Kafka's own topics), record_encoder (v2 batches)"
)


def kafka_written() -> dict[str, bytes]:
    lines = WRITTEN.read_text().splitlines()
    return {name: bytes.fromhex(data) for name, data in (line.split("\t") for line in lines if not line.startswith("#"))}


class Crafted:
    """One capture being made: its connections share a clock; the manifest's lines follow the capture line."""

    def __init__(self, name: str, title: str, why: str, byte_examples: str) -> None:
        self.name, self.title = name, title
        self.clock = Clock(ts=START, step=20_000)
        self.packets: list = []
        self.lines: list[dict] = []
        self.head = {"why": why, "built_with": BUILT_WITH, "byte_examples": byte_examples}
        self.next_port = 40000

    def link(self, client: str, client_id: str) -> Link:
        self.next_port += 1
        return Link(self, Conversation(client=client, server=BROKER, client_port=self.next_port, clock=self.clock), client_id)

    def wait(self, ms: float) -> None:
        self.clock.ts += int(ms * MS)

    def write(self, kind: str, **fields: Any) -> None:
        self.lines.append({"kind": kind, **fields})

    def save(self, out: Path) -> Path:
        path = out / f"{self.name}.pcap"
        with open(path, "wb") as f:
            writer = PcapWriter(f, LINKTYPE_ETHERNET)
            for packet in self.packets:
                writer.write(packet)
        head = {
            "kind": "capture",
            "scenario": self.name,
            "title": self.title,
            "file": path.name,
            "crafted": self.head,
            "broker": None,
            "clients": {},
            "interface": None,
            "link_type": "EN10MB",
            "mtu": None,
            "netns": False,
            "timestamp_precision": "us",
            "snaplen": 0,
            "capture_tool": None,
            "date": None,
            "command": f"python -m rig.crafted {self.name}",
        }
        lines = [head, *self.lines]
        path.with_suffix(".manifest.jsonl").write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
        return path


class Link:
    """One client's connection to the broker: requests numbered in order, each answered after `wait_ms`."""

    def __init__(self, capture: Crafted, conversation: Conversation, client_id: str) -> None:
        self.capture, self.conversation, self.client_id = capture, conversation, client_id
        self.correlation = 0
        capture.packets += conversation.handshake()

    def send(self, key: int, version: int, values: dict) -> int:
        self.correlation += 1
        body = encode_body(key, version, "request", values)
        self.capture.packets += self.conversation.send(CLIENT, request(key, version, self.correlation, body, client_id=self.client_id))
        return self.correlation

    def answer(self, correlation: int, key: int, version: int, values: dict) -> None:
        body = encode_body(key, version, "response", values)
        frame = response(correlation, body, BUILTIN.response_header_version(key, version))
        self.capture.packets += self.conversation.send(SERVER, frame)

    def call(self, key: int, version: int, request_values: dict, response_values: dict, wait_ms: float = 1) -> None:
        correlation = self.send(key, version, request_values)
        self.capture.wait(wait_ms)
        self.answer(correlation, key, version, response_values)

    def close(self) -> None:
        self.capture.packets += self.conversation.close()


class ClassicGroup:
    """Members of one group of the classic protocol (JoinGroup, SyncGroup, Heartbeat), each on its own connection to
    the coordinator; the first member to join a generation leads it. Fields a request or response version lacks are
    left out by the encoder, so every call names them all."""

    def __init__(
        self, capture: Crafted, group: str, kind: str, protocol: str, versions: tuple[int, int, int], members: dict[str, str]
    ) -> None:
        self.capture, self.group, self.kind, self.protocol = capture, group, kind, protocol
        self.join_version, self.sync_version, self.heartbeat_version = versions
        self.links = {name: capture.link(address, f"{group}-{name}") for name, address in members.items()}
        self.member = {name: f"{group}-{name}-{i:08x}-4c1e-8a55-0123456789ab" for i, name in enumerate(members, 1)}
        self.generation = 0
        self.joined: set[str] = set()
        """Members that joined before and have not left since: they rejoin with their member id."""

    def rebalance(self, joining: dict[str, list[dict]], assignments: dict[str, bytes], hold_ms: float = 3000) -> None:
        """One generation: each joining member's JoinGroup (its protocols), held until all joined; the leader's answer
        with every member's metadata in the chosen protocol; then every member's SyncGroup with its assignment."""
        self.generation += 1
        leader = next(iter(joining))
        calls = {}
        for name, protocols in joining.items():
            values = {
                "GroupId": self.group,
                "SessionTimeoutMs": 45_000,
                "RebalanceTimeoutMs": 300_000,
                "MemberId": self.member[name] if name in self.joined else "",
                "ProtocolType": self.kind,
                "Protocols": protocols,
                "Reason": "rebalance",
            }
            calls[name] = self.links[name].send(ApiKey.JOIN_GROUP, self.join_version, values)
            self.capture.wait(30)
        self.capture.wait(hold_ms)
        chosen = {name: next(p["Metadata"] for p in protocols if p["Name"] == self.protocol) for name, protocols in joining.items()}
        members = [{"MemberId": self.member[name], "Metadata": metadata} for name, metadata in chosen.items()]
        for name, correlation in calls.items():
            answer = {"GenerationId": self.generation, "ProtocolType": self.kind, "ProtocolName": self.protocol}
            answer |= {"Leader": self.member[leader], "MemberId": self.member[name], "Members": members if name == leader else []}
            self.links[name].answer(correlation, ApiKey.JOIN_GROUP, self.join_version, answer)
            self.capture.wait(2)
        named = {"ProtocolType": self.kind, "ProtocolName": self.protocol}
        for name in joining:
            sync = {"GroupId": self.group, "GenerationId": self.generation, "MemberId": self.member[name], **named}
            if name == leader:
                sync["Assignments"] = [{"MemberId": self.member[n], "Assignment": a} for n, a in assignments.items()]
            self.links[name].call(ApiKey.SYNC_GROUP, self.sync_version, sync, {**named, "Assignment": assignments[name]}, 5)
            self.capture.wait(25)
        self.joined = set(joining)

    def heartbeats(self, rounds: int, every_ms: float) -> None:
        for _ in range(rounds):
            self.capture.wait(every_ms)
            for name in sorted(self.joined):
                values = {"GroupId": self.group, "GenerationId": self.generation, "MemberId": self.member[name]}
                self.links[name].call(ApiKey.HEARTBEAT, self.heartbeat_version, values, {}, 1)

    def leave(self, name: str) -> None:
        self.joined.discard(name)
        who = [{"MemberId": self.member[name]}]
        self.links[name].call(ApiKey.LEAVE_GROUP, 3, {"GroupId": self.group, "Members": who}, {"Members": who})

    def close(self) -> None:
        for link in self.links.values():
            link.close()


# -- Kafka Connect ------------------------------------------------------------------------------------------------

CONNECT_NAMES = (("sessioned", 2), ("compatible", 1), ("default", 0))


def connect_work(work: dict[str, list[int]]) -> list[dict]:
    return [{"Connector": connector, "Tasks": tasks} for connector, tasks in work.items()]


def connect_assignment(
    group: ClassicGroup, offset: int, assigned: dict, revoked: dict | None = None, error: int = 0, delay: int = 0
) -> bytes:
    """An assignment by the group's leader, worker w1, V2."""
    values = {"Error": error, "Leader": group.member["w1"], "LeaderUrl": "http://w1:8083/", "ConfigOffset": offset}
    work = {"Assignment": connect_work(assigned), "Revoked": connect_work(revoked or {}), "ScheduledDelay": delay}
    return encode_payload(CONNECT_ASSIGNMENT, 2, values | work)


def connect_metadata(worker: str, offset: int, running: bytes | None) -> list[dict]:
    """A worker's JoinGroup protocols: V2, V1 and V0, the work it runs (an assignment) in the first two."""
    url = f"http://{worker}:8083/"
    return [
        {"Name": name, "Metadata": encode_payload(CONNECT_METADATA, version, {"Url": url, "ConfigOffset": offset, "Allocation": running})}
        for name, version in CONNECT_NAMES
    ]


def connect_group() -> Crafted:
    capture = Crafted(
        "connect-group-crafted",
        "A healthy Kafka Connect group (protocol type connect, V2 sessioned): one worker runs jdbc-source and its three "
        "tasks, a second joins, the leader revokes task 2 from the first and gives it to the second a generation later "
        "(incremental cooperative rebalancing)",
        "Kafka Connect is Java: its workers cannot run here",
        "tests/kafka_written/payloads.tsv: ConnectProtocol and IncrementalCooperativeConnectProtocol bytes for "
        "ConnectProtocolCompatibilityTest's values decode field by field (tests/test_group_payloads.py); these payloads "
        "are written by payload_encoder from the same tables",
    )
    group = ClassicGroup(capture, "connect-cluster", "connect", "sessioned", (5, 3, 3), {"w1": "10.0.0.11", "w2": "10.0.0.12"})
    everything = {"jdbc-source": [-1, 0, 1, 2]}
    first = connect_assignment(group, 5, everything)
    group.rebalance({"w1": connect_metadata("w1", 5, None)}, {"w1": first})
    capture.write("op", client="connect-cluster-w1", op="join", group="connect-cluster", generation=1, runs=everything)
    group.heartbeats(2, 3000)
    group.rebalance(
        {"w1": connect_metadata("w1", 5, first), "w2": connect_metadata("w2", 5, None)},
        {"w1": connect_assignment(group, 5, {}, {"jdbc-source": [2]}), "w2": connect_assignment(group, 5, {})},
    )
    capture.write("op", client="connect-cluster-w1", op="revoked", group="connect-cluster", generation=2, revoked={"jdbc-source": [2]})
    running = connect_assignment(group, 5, {"jdbc-source": [-1, 0, 1]})
    group.rebalance(
        {"w1": connect_metadata("w1", 5, running), "w2": connect_metadata("w2", 5, None)},
        {"w1": connect_assignment(group, 5, {}), "w2": connect_assignment(group, 5, {"jdbc-source": [2]})},
    )
    capture.write("op", client="connect-cluster-w2", op="assigned", group="connect-cluster", generation=3, runs={"jdbc-source": [2]})
    group.heartbeats(3, 3000)
    group.close()
    return capture


def doctor_connect() -> Crafted:
    capture = Crafted(
        "doctor-connect-crafted",
        "A troubled Kafka Connect group: a third worker joins behind the config topic and is answered CONFIG_MISMATCH, "
        "work is revoked generation after generation, a departed worker's work is held back 30 s, and a zombie worker "
        "still runs a task given to another",
        "Kafka Connect is Java: its workers cannot run here, nor be made to misbehave",
        "as connect-group-crafted",
    )
    group = ClassicGroup(
        capture, "connect-storm", "connect", "sessioned", (5, 3, 3), {"w1": "10.0.0.41", "w2": "10.0.0.42", "w3": "10.0.0.43"}
    )
    start = {"w1": {"jdbc-source": [-1, 0, 1]}, "w2": {"jdbc-source": [2, 3], "s3-sink": [-1, 0, 1]}}
    running = {w: connect_assignment(group, 12, work) for w, work in start.items()}
    group.rebalance({w: connect_metadata(w, 12, None) for w in start}, running)
    group.heartbeats(2, 8000)
    # generation 2: w3 joins having read the config topic to 10 only: CONFIG_MISMATCH for it, jdbc-source-1 revoked from w1
    group.rebalance(
        {
            "w1": connect_metadata("w1", 12, running["w1"]),
            "w2": connect_metadata("w2", 12, running["w2"]),
            "w3": connect_metadata("w3", 10, None),
        },
        {
            "w1": connect_assignment(group, 12, {}, {"jdbc-source": [1]}),
            "w2": connect_assignment(group, 12, {}),
            "w3": connect_assignment(group, 12, {}, error=1),
        },
    )
    capture.write(
        "op", client="connect-storm-w3", op="join", group="connect-storm", generation=2, config_offset=10, result="error CONFIG_MISMATCH"
    )
    group.heartbeats(2, 8000)
    # generation 3: w3 caught up; it gets jdbc-source-1, s3-sink-1 is revoked from w2
    running["w1"] = connect_assignment(group, 12, {"jdbc-source": [-1, 0]})
    group.rebalance(
        {
            "w1": connect_metadata("w1", 12, running["w1"]),
            "w2": connect_metadata("w2", 12, running["w2"]),
            "w3": connect_metadata("w3", 12, None),
        },
        {
            "w1": connect_assignment(group, 12, {}),
            "w2": connect_assignment(group, 12, {}, {"s3-sink": [1]}),
            "w3": connect_assignment(group, 12, {"jdbc-source": [1]}),
        },
    )
    group.heartbeats(2, 8000)
    # generation 4: w3 leaves; the leader holds its work back 30 s (scheduled.rebalance.max.delay.ms)
    group.leave("w3")
    running["w2"] = connect_assignment(group, 12, {"jdbc-source": [2, 3], "s3-sink": [-1, 0]})
    group.rebalance(
        {"w1": connect_metadata("w1", 12, running["w1"]), "w2": connect_metadata("w2", 12, running["w2"])},
        {"w1": connect_assignment(group, 12, {}, delay=30_000), "w2": connect_assignment(group, 12, {}, delay=30_000)},
    )
    capture.write("op", client="connect-storm-w3", op="leave", group="connect-storm", generation=4)
    group.heartbeats(2, 8000)
    # generation 5: w3 back, still running jdbc-source-1 (its old assignment); w1 (a zombie after a pause) claims it too
    zombie = connect_assignment(group, 12, {"jdbc-source": [-1, 0, 1]})
    group.rebalance(
        {
            "w1": connect_metadata("w1", 12, zombie),
            "w2": connect_metadata("w2", 12, running["w2"]),
            "w3": connect_metadata("w3", 12, connect_assignment(group, 12, {"jdbc-source": [1]})),
        },
        {
            "w1": connect_assignment(group, 12, {}, {"jdbc-source": [1, 0]}),
            "w2": connect_assignment(group, 12, {}, {"jdbc-source": [3]}),
            "w3": connect_assignment(group, 12, {}),
        },
    )
    capture.write(
        "op", client="connect-storm-w1", op="zombie", group="connect-storm", generation=5, claims="jdbc-source-1", also_run_by="w3"
    )
    group.heartbeats(1, 8000)
    group.close()
    for finding in (
        "connect.task-churn",
        "connect.stale-config-offset",
        "connect.config-mismatch",
        "connect.duplicate-task",
        "connect.scheduled-rebalance",
    ):
        capture.write("expect", finding=finding, group="connect-storm")
    return capture


# -- Kafka Streams -------------------------------------------------------------------------------------------------


def task_sums(sums: dict[tuple[int, int], int]) -> list[dict]:
    return [{"topicGroupId": g, "partition": p, "offsetSum": s, "namedTopology": None} for (g, p), s in sums.items()]


def streams_subscription(process: int, endpoint: str, sums: dict[tuple[int, int], int], topics: list[str], error: int = 0) -> bytes:
    info = encode_payload(
        STREAMS_SUBSCRIPTION_INFO,
        11,
        {
            "latestSupportedVersion": 11,
            "processId": f"00000000-0000-4000-8000-{process:012x}",
            "userEndPoint": endpoint.encode(),
            "taskOffsetSums": task_sums(sums),
            "errorCode": error,
        },
    )
    return encode_payload(CONSUMER_PROTOCOL_SUBSCRIPTION, 3, {"Topics": topics, "UserData": info, "GenerationId": -1, "RackId": None})


def streams_assignment(
    partitions: dict[str, list[int]], active: list, standby: list, hosts: dict, next_ms: int = NEVER, error: int = 0
) -> bytes:
    topics = sorted({t for parts in hosts.values() for t, _ in parts})
    index = {t: i for i, t in enumerate(topics)}
    info = encode_payload(
        ASSIGNMENT_INFO,
        11,
        {
            "commonlySupportedVersion": 11,
            "activeTasks": [{"topicGroupId": g, "partition": p, "namedTopology": []} for g, p in active],
            "standbyTasks": [{"topicGroupId": g, "partition": p, "namedTopology": [], "partitions": []} for g, p in standby],
            "topicDictionary": [{"index": i, "topic": t} for t, i in index.items()],
            "partitionsByHost": [
                {
                    "host": h.split(":")[0],
                    "port": int(h.split(":")[1]),
                    "partitions": [{"topicIndex": index[t], "partition": p} for t, p in parts],
                }
                for h, parts in hosts.items()
            ],
            "standbyPartitionsByHost": [],
            "errCode": error,
            "nextRebalanceMs": next_ms,
        },
    )
    assigned = [{"Topic": t, "Partitions": ps} for t, ps in partitions.items()]
    return encode_payload(CONSUMER_PROTOCOL_ASSIGNMENT, 3, {"AssignedPartitions": assigned, "UserData": info})


def streams_protocols(subscriptions: dict[str, bytes]) -> dict[str, list[dict]]:
    """Each instance's one protocol: the "stream" assignor's, with its subscription."""
    return {name: [{"Name": "stream", "Metadata": metadata}] for name, metadata in subscriptions.items()}


def streams_group() -> Crafted:
    capture = Crafted(
        "streams-group-crafted",
        "A healthy Kafka Streams application (consumer group, assignor stream, SubscriptionInfo and AssignmentInfo "
        "v11): two instances, each active for two tasks and standby for one of the other's, caught up",
        "Kafka Streams is Java: its instances cannot run here",
        "tests/kafka_written/payloads.tsv: SubscriptionInfo and AssignmentInfo bytes for SubscriptionInfoTest's and "
        "AssignmentInfoTest's values, v1-11, decode field by field (tests/test_group_payloads.py); these payloads are "
        "written by payload_encoder from the same tables",
    )
    app = ClassicGroup(capture, "wordcount", "consumer", "stream", (9, 5, 4), {"i1": "10.0.0.21", "i2": "10.0.0.22"})
    topics = ["words", "wordcount-counts-repartition"]
    subscriptions = {
        "i1": streams_subscription(1, "i1:8080", {(0, 0): -2, (0, 1): -2, (1, 0): 1_200}, topics),
        "i2": streams_subscription(2, "i2:8080", {(1, 0): -2, (1, 1): -2, (0, 0): 800}, topics),
    }
    hosts = {
        "i1:8080": [("words", 0), ("words", 1)],
        "i2:8080": [("wordcount-counts-repartition", 0), ("wordcount-counts-repartition", 1)],
    }
    assignments = {
        "i1": streams_assignment({"words": [0, 1]}, [(0, 0), (0, 1)], [(1, 0)], hosts),
        "i2": streams_assignment({"wordcount-counts-repartition": [0, 1]}, [(1, 0), (1, 1)], [(0, 0)], hosts),
    }
    app.rebalance(streams_protocols(subscriptions), assignments, 2500)
    capture.write("op", client="wordcount-i1", op="assigned", group="wordcount", active=["0_0", "0_1"], standby=["1_0"])
    capture.write("op", client="wordcount-i2", op="assigned", group="wordcount", active=["1_0", "1_1"], standby=["0_0"])
    app.heartbeats(3, 3000)
    app.close()
    return capture


def doctor_streams() -> Crafted:
    capture = Crafted(
        "doctor-streams-crafted",
        "A troubled Kafka Streams application: started before its source topic existed (INCOMPLETE_SOURCE_TOPIC_METADATA), "
        "then a third instance with its state lost joins 250 000 records behind on task 1_0, and four probing rebalances "
        "a minute apart follow while its warm-up replica catches up",
        "Kafka Streams is Java: its instances cannot run here, nor be made to misbehave",
        "as streams-group-crafted",
    )
    app = ClassicGroup(capture, "orders-app", "consumer", "stream", (9, 5, 4), {"s1": "10.0.0.51", "s2": "10.0.0.52", "s3": "10.0.0.53"})
    topics = ["orders"]
    caught_up = {
        "s1": streams_subscription(1, "s1:8080", {(0, 0): -2, (1, 0): -2}, topics),
        "s2": streams_subscription(2, "s2:8080", {(0, 1): -2, (1, 0): 250_000}, topics),
    }
    missing = {n: streams_assignment({}, [], [], {}, error=1) for n in caught_up}
    app.rebalance(streams_protocols(caught_up), missing, 2500)
    capture.write("op", client="orders-app-s1", op="assigned", group="orders-app", result="error INCOMPLETE_SOURCE_TOPIC_METADATA")
    app.heartbeats(1, 3000)
    hosts = {"s1:8080": [("orders", 0)], "s2:8080": [("orders", 1)], "s3:8080": []}
    late = streams_subscription(3, "s3:8080", {(1, 0): 0}, topics)
    for probe in range(5):
        wants = capture.clock.ts // MS + 60_000 if probe < 4 else NEVER  # warm-up caught up at the fifth generation
        assignments = {
            "s1": streams_assignment({"orders": [0]}, [(0, 0), (1, 0)], [], hosts, wants),
            "s2": streams_assignment({"orders": [1]}, [(0, 1)], [(1, 0)], hosts, wants),
            "s3": streams_assignment({}, [], [(1, 0)], hosts, wants),
        }
        sums = 250_000 - 60_000 * probe
        s3 = late if probe == 0 else streams_subscription(3, "s3:8080", {(1, 0): 250_000 - sums}, topics)
        app.rebalance(streams_protocols(caught_up | {"s3": s3}), assignments, 2500)
        app.heartbeats(5, 10_000)
        capture.wait(9_000)
    capture.write("op", client="orders-app-s3", op="warm-up", group="orders-app", task="1_0", behind=250_000, probing_rebalances=4)
    app.close()
    capture.write("expect", finding="streams.assignor-error", group="orders-app", api="SyncGroup")
    capture.write("expect", finding="streams.task-lag", group="orders-app", api="JoinGroup")
    capture.write("expect", finding="streams.probing-rebalance", group="orders-app", api="SyncGroup")
    return capture


# -- Kafka's own topics --------------------------------------------------------------------------------------------


def partition(index: int, high_watermark: int, records: bytes) -> dict:
    """A Fetch response's partition holding `records`, the whole log from offset 0."""
    return {
        "PartitionIndex": index,
        "HighWatermark": high_watermark,
        "LastStableOffset": high_watermark,
        "PreferredReadReplica": -1,
        "Records": records,
    }


def internal_topics() -> Crafted:
    capture = Crafted(
        "internal-topics-crafted",
        "Kafka's own topics on the wire: a follower broker replicating __consumer_offsets, __transaction_state and "
        "__share_group_state from the leader (Fetch with a replica id), and a tool reading __consumer_offsets by topic "
        "id (Metadata, then Fetch v13)",
        "tansu 0.6 keeps its group and transaction state elsewhere: its __consumer_offsets is an empty topic of no partitions",
        "tests/kafka_written/payloads.tsv: the OffsetCommit, ConsumerGroupMetadata and TransactionLog keys and values "
        "CoordinatorRecordSerde writes for GroupCoordinatorRecordSerdeTest's, GroupCoordinatorRecordHelpersTest's and "
        "TransactionLogTest's values are records here as they are; the others are written by payload_encoder from the "
        "generated record schemas",
    )
    written = kafka_written()
    offsets, transactions, shares = (INTERNAL_TOPICS[t] for t in ("__consumer_offsets", "__transaction_state", "__share_group_state"))
    subscription = encode_payload(CONSUMER_PROTOCOL_SUBSCRIPTION, 1, {"Topics": ["orders"], "UserData": None})
    assignment = encode_payload(
        CONSUMER_PROTOCOL_ASSIGNMENT, 1, {"AssignedPartitions": [{"Topic": "orders", "Partitions": [0, 1]}], "UserData": None}
    )
    member = {
        "memberId": "orders-consumer-1-5b9c",
        "groupInstanceId": None,
        "clientId": "orders-consumer-1",
        "clientHost": "/10.0.0.61",
        "rebalanceTimeout": 300_000,
        "sessionTimeout": 45_000,
        "subscription": subscription,
        "assignment": assignment,
    }
    group_value = {
        "protocolType": "consumer",
        "generation": 5,
        "protocol": "range",
        "leader": member["memberId"],
        "currentStateTimestamp": 1_795_799_990_000,
        "members": [member],
    }
    records = [
        ("GroupMetadata", *encode_internal(offsets, 2, {"group": "orders-consumers"}, 3, group_value)),
        ("OffsetCommit", written["offsets.offset-commit.key"], written["offsets.offset-commit.value"]),
        (
            "OffsetCommit",
            *encode_internal(
                offsets,
                1,
                {"group": "orders-consumers", "topic": "orders", "partition": 0},
                4,
                {
                    "offset": 4_211,
                    "leaderEpoch": 3,
                    "metadata": "",
                    "commitTimestamp": 1_795_799_995_000,
                    "topicId": "4f6b0a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b",
                },
            ),
        ),
        ("ConsumerGroupMetadata", written["offsets.consumer-group-metadata.key"], written["offsets.consumer-group-metadata.value"]),
        (
            "ConsumerGroupMemberMetadata",
            *encode_internal(
                offsets,
                5,
                {"GroupId": "group", "MemberId": "m-848"},
                0,
                {
                    "InstanceId": None,
                    "RackId": None,
                    "ClientId": "payments-1",
                    "ClientHost": "/10.0.0.62",
                    "SubscribedTopicNames": ["payments"],
                    "SubscribedTopicRegex": None,
                    "RebalanceTimeoutMs": 300_000,
                    "ServerAssignor": "uniform",
                },
            ),
        ),
        ("OffsetCommit", *encode_internal(offsets, 1, {"group": "old-group", "topic": "orders", "partition": 1}, 0, None)),
    ]
    txn = [
        ("TransactionLog", written["transactions.key"], written["transactions.value"]),
        (
            "TransactionLog",
            *encode_internal(
                transactions,
                0,
                {"TransactionalId": "payments-txn-7"},
                1,
                {
                    "ProducerId": 9_001,
                    "ProducerEpoch": 4,
                    "TransactionTimeoutMs": 60_000,
                    "TransactionStatus": 3,
                    "TransactionPartitions": [],
                    "TransactionLastUpdateTimestampMs": 1_795_799_996_000,
                    "TransactionStartTimestampMs": 1_795_799_995_500,
                },
            ),
        ),
    ]
    share_key = {"GroupId": "tasks", "TopicId": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", "Partition": 0}
    batch = [{"FirstOffset": 10, "LastOffset": 14, "DeliveryState": 2, "DeliveryCount": 1}]
    share = [
        (
            "ShareSnapshot",
            *encode_internal(
                shares,
                0,
                share_key,
                0,
                {
                    "SnapshotEpoch": 1,
                    "StateEpoch": 0,
                    "LeaderEpoch": 2,
                    "StartOffset": 10,
                    "CreateTimestamp": 1_795_799_990_000,
                    "WriteTimestamp": 1_795_799_990_000,
                    "StateBatches": batch,
                },
            ),
        ),
        (
            "ShareUpdate",
            *encode_internal(shares, 1, share_key, 0, {"SnapshotEpoch": 1, "LeaderEpoch": 2, "StartOffset": 15, "StateBatches": []}),
        ),
    ]
    ts = START // MS - 5_000
    fetched = {
        ("__consumer_offsets", 12): records,
        ("__transaction_state", 3): txn,
        ("__share_group_state", 0): share,
    }
    batches = {
        where: encode_batch([Draft(key, value, (), ts + i) for i, (_, key, value) in enumerate(items)]) for where, items in fetched.items()
    }
    follower = capture.link("10.0.0.2", "broker-2-fetcher-0")
    fetch_request = {
        "ReplicaId": 2,
        "MaxWaitMs": 500,
        "MinBytes": 1,
        "MaxBytes": 10_485_760,
        "Topics": [
            {
                "Topic": t,
                "Partitions": [
                    {"Partition": p, "CurrentLeaderEpoch": 7, "FetchOffset": 0, "LastFetchedEpoch": -1, "PartitionMaxBytes": 1_048_576}
                ],
            }
            for t, p in fetched
        ],
    }
    fetch_response = {
        "Responses": [
            {
                "Topic": t,
                "Partitions": [
                    {
                        "PartitionIndex": p,
                        "HighWatermark": len(fetched[(t, p)]),
                        "LastStableOffset": len(fetched[(t, p)]),
                        "Records": batches[(t, p)],
                    }
                ],
            }
            for t, p in fetched
        ]
    }
    follower.call(ApiKey.FETCH, 12, fetch_request, fetch_response, 3)
    for (topic, partition), items in fetched.items():
        for offset, (kind, key, value) in enumerate(items):
            capture.write(
                "consumed",
                client="broker 2 (replica fetcher)",
                group=None,
                topic=topic,
                partition=partition,
                offset=offset,
                timestamp=ts + offset,
                key=enc(key),
                value=enc(value),
                headers=[],
                record=kind,
            )
    follower.close()
    capture.wait(200)
    reader = capture.link("10.0.0.31", "offsets-reader")
    topic_id = "0c0f5e7a-1d2b-4c3e-9f4a-5b6c7d8e9f01"
    reader.call(
        ApiKey.METADATA,
        12,
        {"Topics": [{"Name": "__consumer_offsets"}]},
        {
            "Brokers": [{"NodeId": 1, "Host": BROKER, "Port": 9092}],
            "Topics": [
                {
                    "Name": "__consumer_offsets",
                    "TopicId": topic_id,
                    "IsInternal": True,
                    "Partitions": [{"PartitionIndex": 12, "LeaderId": 1, "ReplicaNodes": [1, 2], "IsrNodes": [1, 2]}],
                }
            ],
        },
        2,
    )
    reader.call(
        ApiKey.FETCH,
        13,
        {
            "ReplicaId": -1,
            "MaxWaitMs": 500,
            "MinBytes": 1,
            "Topics": [{"TopicId": topic_id, "Partitions": [{"Partition": 12, "FetchOffset": 0}]}],
        },
        {
            "Responses": [
                {
                    "TopicId": topic_id,
                    "Partitions": [{"PartitionIndex": 12, "HighWatermark": len(records), "Records": batches[("__consumer_offsets", 12)]}],
                }
            ]
        },
        2,
    )
    for offset, (kind, key, value) in enumerate(records):
        capture.write(
            "consumed",
            client="offsets-reader",
            group=None,
            topic="__consumer_offsets",
            partition=12,
            offset=offset,
            timestamp=ts + offset,
            key=enc(key),
            value=enc(value),
            headers=[],
            record=kind,
        )
    reader.close()
    return capture


# -- KIP-848, KIP-1071 and KIP-932 groups --------------------------------------------------------------------------


def doctor_next_groups() -> Crafted:
    capture = Crafted(
        "doctor-next-groups-crafted",
        "Groups of the next rebalance protocols in trouble: a KIP-1071 streams-group member fenced three times, a "
        "KIP-848 consumer heartbeating with an epoch the coordinator never answered, and a KIP-932 share consumer "
        "acknowledging while its ShareFetch waits",
        "tansu 0.6 has no KIP-848, KIP-1071 or KIP-932 groups",
        "none: these bodies are Kafka's own message specs, written by body_encoder",
    )
    streams = capture.link("10.0.0.71", "clicks-app-1")
    member = "clicks-1-3f2e1d0c"

    def streams_heartbeat(epoch: int, answer_epoch: int, error: int = 0) -> None:
        req = {"GroupId": "clicks-app", "MemberId": member, "MemberEpoch": epoch, "RebalanceTimeoutMs": 300_000}
        resp = {"ErrorCode": error, "MemberId": member, "MemberEpoch": answer_epoch, "HeartbeatIntervalMs": 5000}
        streams.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, req, resp, 3)
        capture.wait(5000)

    for fenced in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH):
        streams_heartbeat(0, 2)
        streams_heartbeat(2, 2)
        streams_heartbeat(2, -1, fenced)
    capture.write("op", client="clicks-app-1", op="fenced", group="clicks-app", member=member, times=3)
    streams.close()

    consumer = capture.link("10.0.0.72", "payments-1")
    deaf, steady = "payments-1-a1b2", "payments-2-c3d4"
    for sent, answered, who in (
        (0, 4, deaf),
        (0, 4, steady),
        (4, 5, deaf),
        (4, 5, steady),
        (5, 5, steady),
        (4, 5, deaf),
        (4, 5, deaf),
        (4, 5, deaf),
        (5, 5, steady),
    ):
        req = {
            "GroupId": "payments",
            "MemberId": who,
            "MemberEpoch": sent,
            "RebalanceTimeoutMs": 300_000,
            "SubscribedTopicNames": ["payments"] if sent == 0 else None,
        }
        consumer.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req, {"MemberId": who, "MemberEpoch": answered, "HeartbeatIntervalMs": 5000}, 2)
        capture.wait(2500)
    capture.write("op", client="payments-1", op="epoch kept", group="payments", member=deaf, sent=4, answered=5)
    consumer.close()

    sharer = capture.link("10.0.0.73", "tasks-1")
    share_member = "tasks-1-e5f6"
    topic = "7d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a"
    sharer.call(
        ApiKey.SHARE_GROUP_HEARTBEAT,
        1,
        {"GroupId": "tasks", "MemberId": share_member, "MemberEpoch": 0, "SubscribedTopicNames": ["tasks"]},
        {"MemberId": share_member, "MemberEpoch": 1, "HeartbeatIntervalMs": 5000},
        2,
    )
    fetch = {
        "GroupId": "tasks",
        "MemberId": share_member,
        "ShareSessionEpoch": 0,
        "MaxWaitMs": 500,
        "MinBytes": 1,
        "MaxBytes": 1_048_576,
        "Topics": [{"TopicId": topic, "Partitions": [{"PartitionIndex": 0}]}],
    }
    sharer.call(ApiKey.SHARE_FETCH, 1, fetch, {"Responses": [{"TopicId": topic, "Partitions": [{"PartitionIndex": 0}]}]}, 3)
    pending = sharer.send(ApiKey.SHARE_FETCH, 1, fetch | {"ShareSessionEpoch": 1})
    capture.wait(100)
    acknowledged = {
        "GroupId": "tasks",
        "MemberId": share_member,
        "ShareSessionEpoch": 2,
        "Topics": [
            {
                "TopicId": topic,
                "Partitions": [
                    {"PartitionIndex": 0, "AcknowledgementBatches": [{"FirstOffset": 10, "LastOffset": 14, "AcknowledgeTypes": [1]}]}
                ],
            }
        ],
    }
    early = sharer.send(ApiKey.SHARE_ACKNOWLEDGE, 1, acknowledged)
    capture.wait(400)
    sharer.answer(pending, ApiKey.SHARE_FETCH, 1, {"Responses": [{"TopicId": topic, "Partitions": [{"PartitionIndex": 0}]}]})
    sharer.answer(early, ApiKey.SHARE_ACKNOWLEDGE, 1, {"ErrorCode": ErrorCode.INVALID_SHARE_SESSION_EPOCH})
    capture.write(
        "op",
        client="tasks-1",
        op="acknowledge during fetch",
        group="tasks",
        member=share_member,
        result="error INVALID_SHARE_SESSION_EPOCH",
    )
    sharer.close()
    capture.write("expect", finding="heartbeat.fenced-loop", group="clicks-app", api="StreamsGroupHeartbeat")
    capture.write("expect", finding="heartbeat.epoch-not-adopted", group="payments", api="ConsumerGroupHeartbeat")
    capture.write("expect", finding="share.ack-during-fetch", group="tasks", client_id="tasks-1")
    return capture


CRAFTED: dict[str, Callable[[], Crafted]] = {
    "connect-group-crafted": connect_group,
    "streams-group-crafted": streams_group,
    "internal-topics-crafted": internal_topics,
    "doctor-connect-crafted": doctor_connect,
    "doctor-streams-crafted": doctor_streams,
    "doctor-next-groups-crafted": doctor_next_groups,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rig.crafted", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="the captures to write (all without a name): " + ", ".join(CRAFTED))
    parser.add_argument("--out", type=Path, default=CAPTURES, help="output folder (default: captures/ of the repository)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in CRAFTED]
    if unknown:
        parser.error("unknown capture(s): " + ", ".join(unknown))
    for name in args.names or CRAFTED:
        path = CRAFTED[name]().save(args.out)
        print(f"{path.name}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
