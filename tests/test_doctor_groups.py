"""The doctor's families of the groups that are not plain consumer groups: Kafka Connect (doctor/connect.py), Kafka
Streams (doctor/streams.py), and the KIP-848, KIP-1071 and KIP-932 groups (doctor/next_groups.py).

Connect and Streams are Java and tansu has none of the newer groups, so their troubled captures are made with the
project's encoders (rig/crafted.py, `doctor-*-crafted`), whose manifests name the findings they must yield:
tests/test_doctor.py checks every `expect` line of every doctor-* capture, and every healthy capture (the crafted
Connect and Streams groups, Schema Registry's real election among them) for no warning. This file holds what is
particular to these families: each rule has its capture, thresholds move them, and what must not fire does not.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_doctor import diagnose, ids, packets_of

from kdissect.doctor.connect import Connect
from kdissect.doctor.next_groups import NextGroups
from kdissect.doctor.streams import Streams

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
FAMILIES = ("connect", "streams", "heartbeat", "share")
"""The first part of these families' finding ids."""


def expected(name: str) -> set[str]:
    lines = [json.loads(line) for line in (CAPTURES / f"{name}.manifest.jsonl").read_text().splitlines()]
    return {line["finding"] for line in lines if line["kind"] == "expect"}


def test_every_rule_of_these_families_is_proven_on_a_capture():
    covered = expected("doctor-connect-crafted") | expected("doctor-streams-crafted") | expected("doctor-next-groups-crafted")
    assert {rule.id for family in (Connect, Streams, NextGroups) for rule in family.RULES} <= covered


def titles(name: str, changes: tuple[str, ...] = ()) -> dict[str, str]:
    findings, _ = diagnose(packets_of(CAPTURES / f"{name}.pcap"), changes)
    return {f.id: f.title for f in findings}


def test_connect_titles_tell_the_numbers():
    found = titles("doctor-connect-crafted")
    assert (
        found["connect.task-churn"]
        == "3 SyncGroups of group connect-storm revoked work in 3 generations (5 connectors and tasks revoked; jdbc-source-1 2 times)"
    )
    assert (
        found["connect.stale-config-offset"]
        == "1 JoinGroup from workers behind the config topic (a worker at 10, the group's assignment at 12)"
    )
    # told by the leader and by the worker: once
    assert found["connect.config-mismatch"] == "1 SyncGroup told CONFIG_MISMATCH (1 assignment)"
    assert found["connect.duplicate-task"] == "1 JoinGroup showed 1 connector or task run by two workers at once: jdbc-source-1"
    assert found["connect.scheduled-rebalance"] == "1 SyncGroup told a scheduled rebalance (2 assignments, up to 30.0 s held back)"


def test_streams_and_next_groups_titles():
    found = titles("doctor-streams-crafted")
    probing = "4 generations of orders-app scheduled a probing rebalance, 4 in a row (warm-ups not caught up)"
    assert found["streams.probing-rebalance"] == probing
    told = "2 exchanges with an assignor error in Kafka Streams' user data: INCOMPLETE_SOURCE_TOPIC_METADATA×2"
    assert found["streams.assignor-error"] == told
    assert "task 1_0" in found["streams.task-lag"] and "250,000 records behind" in found["streams.task-lag"]
    found = titles("doctor-next-groups-crafted")
    assert found["heartbeat.fenced-loop"] == "3 heartbeats fenced 1 member in a loop (member clicks-1-3f2e1d0c of clicks-app 3 times)"
    assert "payments-1-a1b2 of payments: epoch 4, 3 in a row, the coordinator's 5" in found["heartbeat.epoch-not-adopted"]  # not payments-2


def test_every_title_counts_its_evidence():
    """A title starts with the number of exchanges its evidence holds: the heartbeats of a member fenced three
    times, all four generations of a probing run, not only those after the threshold was met."""
    for name in ("doctor-connect-crafted", "doctor-streams-crafted", "doctor-next-groups-crafted"):
        findings, _ = diagnose(packets_of(CAPTURES / f"{name}.pcap"))
        for f in findings:
            if f.id.split(".")[0] in FAMILIES:
                assert f.title.split()[0] == str(f.evidence.count) == str(len(set(f.evidence.exchanges))), f.title


def test_thresholds_move_the_rules():
    assert "connect.task-churn" not in titles("doctor-connect-crafted", ("connect.task-churn.threshold=4",))
    assert "streams.probing-rebalance" not in titles("doctor-streams-crafted", ("streams.probing-rebalance.threshold=5",))
    assert "streams.task-lag" not in titles("doctor-streams-crafted", ("streams.task-lag.threshold=300000",))
    quiet = titles("doctor-next-groups-crafted", ("heartbeat.fenced-loop.threshold=4", "heartbeat.epoch-not-adopted.threshold=4"))
    assert not {"heartbeat.fenced-loop", "heartbeat.epoch-not-adopted"} & set(quiet) and "share.ack-during-fetch" in quiet


def test_a_cooperative_rebalance_and_a_caught_up_streams_app_are_healthy():
    """One revocation as a worker joins, a standby a few hundred records behind, a steady election: no finding of
    these families at all."""
    for name in ("connect-group-crafted", "streams-group-crafted", "schema-registry-kafka-python"):
        assert not {i for i in ids(diagnose(packets_of(CAPTURES / f"{name}.pcap"))[0]) if i.split(".")[0] in FAMILIES}
