"""Several captures read as one (issue 30): merged by time, a connection two taps saw is one connection.

The rig's two-host capture (rig/taps.py, captures/taps-group-*.pcap) holds one consumer group whose members ran on
two client hosts, each connection captured by its client's host and by the broker's: read together the three are
the broker's capture's connections and exchanges, each connection naming the two taps that saw it and each exchange
timed on both sides; the two hosts' captures hold one group between them. The taps' clocks need not agree.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kdissect.capture import open_capture
from kdissect.capture.merge import MergedCaptures, open_captures
from kdissect.capture.writer import pcap_bytes
from kdissect.commands.reading import dissector_for
from kdissect.dissector import Options
from kdissect.events import ConnectionEnd, Exchange
from kdissect.schema import ApiKey
from kdissect.testing import craft
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER
from tests.test_cli import kdissect

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
HOST1, HOST2, BROKER = (CAPTURES / f"taps-group-{tap}.pcap" for tap in ("host1", "host2", "broker"))
SKEW = 2_500_000_000
"""The broker host's clock, 2.5 s ahead of the client hosts' in the skewed copy."""


def events(*paths: Path) -> list:
    with open_captures([str(p) for p in paths]) as source:
        return list(dissector_for(source, Options()).run(source.packets()))


def facts(exchange: Exchange) -> tuple:
    info = exchange.connection
    return str(info.client), str(info.broker), exchange.correlation_id, exchange.api_key, exchange.api_version, exchange.status


def exchanges(found: list) -> list[Exchange]:
    return [e for e in found if isinstance(e, Exchange)]


def test_one_capture_read_twice_is_one_capture(tmp_path):
    original = CAPTURES / "consumer-group-kafka-python.pcap"
    copy = tmp_path / "copy.pcap"
    copy.write_bytes(original.read_bytes())
    alone, twice = exchanges(events(original)), exchanges(events(original, copy))
    assert [facts(e) for e in twice] == [facts(e) for e in alone]
    assert [e.latency for e in twice] == [e.latency for e in alone]
    assert all(e.connection.taps == (str(original), str(copy)) for e in twice)
    timed = [e for e in twice if e.vantage is not None]
    assert timed and all(e.vantage.network == 0 and e.vantage.broker == e.latency for e in timed), "one clock, one place"
    ends = [e for e in events(original, copy) if isinstance(e, ConnectionEnd)]
    assert all(e.retransmitted == 0 for e in ends), "a tap's copy is no retransmission"


def test_the_hosts_and_the_broker_read_as_the_broker_alone():
    broker = events(BROKER)
    together = events(HOST1, HOST2, BROKER)
    assert Counter(map(facts, exchanges(together))) == Counter(map(facts, exchanges(broker)))
    connections = {str(e.connection.client): e for e in together if isinstance(e, ConnectionEnd)}
    alone = {str(e.connection.client): e for e in broker if isinstance(e, ConnectionEnd)}
    assert connections.keys() == alone.keys()
    names = {str(HOST1), str(HOST2)}
    for client, end in connections.items():
        host = set(end.connection.taps) - {str(BROKER)}
        assert str(BROKER) in end.connection.taps and len(host) == 1 and host <= names
        assert (end.retransmitted, end.bytes) == (alone[client].retransmitted, alone[client].bytes), "each byte once"


def test_an_exchange_seen_from_both_ends_is_split_into_broker_and_network_time():
    broker = {facts(e): e for e in exchanges(events(BROKER))}
    hosts = {facts(e): e for e in exchanges(events(HOST1, HOST2))}
    paired = [e for e in exchanges(events(HOST1, HOST2, BROKER)) if e.request is not None and e.response is not None]
    assert paired and all(e.vantage is not None for e in paired)
    for exchange in paired:
        assert exchange.vantage.broker == broker[facts(exchange)].latency, "the broker's side, on the broker's clock"
        assert exchange.latency == hosts[facts(exchange)].latency, "what the client waited for, on its host's clock"
        assert exchange.vantage.network == exchange.latency - exchange.vantage.broker >= 0


def skewed(path: Path, out: Path, by: int) -> Path:
    with open_capture(path) as capture:
        packets = [p._replace(ts=p.ts + by) for p in capture.packets()]
    out.write_bytes(pcap_bytes(packets, packets[0].linktype, nanosecond=True))
    return out


def test_clocks_that_disagree_change_nothing_but_the_times(tmp_path):
    """The broker host's clock 2.5 s ahead: the same connections and exchanges, each side timed on its own clock."""
    agreeing = exchanges(events(HOST1, HOST2, BROKER))
    disagreeing = exchanges(events(HOST1, HOST2, skewed(BROKER, tmp_path / "broker-ahead.pcap", SKEW)))
    assert Counter(map(facts, disagreeing)) == Counter(map(facts, agreeing))
    vantages = {facts(e): e.vantage for e in agreeing}
    assert all(e.vantage == vantages[facts(e)] for e in disagreeing if e.vantage is not None)
    assert sum(e.vantage is not None for e in disagreeing) == sum(v is not None for v in vantages.values())


def test_a_group_whose_members_ran_on_two_hosts_is_one_group(tmp_path):
    def groups(*paths: Path) -> dict:
        done = kdissect("stats", *paths, "--json")
        assert done.returncode == 0, done.stderr
        lines = map(json.loads, done.stdout.decode().splitlines())
        tables = {t["table"]: t["rows"] for t in lines if t["type"] == "stats"}  # the verdict ends them
        return {row["group"]: row for row in tables["groups"]}

    assert groups(HOST1)["kdrig-taps"]["members"] == groups(HOST2)["kdrig-taps"]["members"] == 1
    together = groups(HOST1, HOST2)
    assert list(together) == ["kdrig-taps"] and together["kdrig-taps"]["members"] == 2
    assert (
        together["kdrig-taps"]["offset_commits"]
        == groups(HOST1)["kdrig-taps"]["offset_commits"] + groups(HOST2)["kdrig-taps"]["offset_commits"]
    )
    doctor = kdissect("doctor", HOST1, HOST2, "--json", "--finding", "group.member-id-required")
    finding = json.loads(doctor.stdout.decode().splitlines()[0])
    assert finding["evidence"]["groups"] == ["kdrig-taps"] and finding["evidence"]["count"] == 2


def conversation(client_isn: int, start: int) -> list:
    """One ApiVersions exchange on 10.0.0.1:40000 -> 10.0.0.2:9092, with its own sequence numbers."""
    talk = craft.Conversation(client_isn=client_isn, server_isn=client_isn * 3, clock=craft.Clock(start, 2_000_000))
    body = encode_body(ApiKey.API_VERSIONS, 0, "response", {"ErrorCode": 0, "ApiKeys": []})
    return [
        *talk.handshake(),
        *talk.send(CLIENT, craft.request(ApiKey.API_VERSIONS, 0, 7)),
        *talk.send(SERVER, craft.response(7, body)),
        *talk.close(),
    ]


def test_unrelated_connections_of_two_captures_stay_apart_though_their_addresses_collide(tmp_path):
    one, other = tmp_path / "one.pcap", tmp_path / "other.pcap"
    one.write_bytes(pcap_bytes(conversation(1000, 1_700_000_000_000_000_000), 1))
    other.write_bytes(pcap_bytes(conversation(900_000, 1_700_000_000_001_000_000), 1))
    found = events(one, other)
    ends = [e for e in found if isinstance(e, ConnectionEnd)]
    assert len(ends) == 2 and {e.connection.taps for e in ends} == {(str(one),), (str(other),)}
    assert [(e.correlation_id, e.status) for e in exchanges(found)] == [(7, "ok"), (7, "ok")]


def test_globs_are_expanded_and_the_packets_merged_by_time():
    with open_captures([str(CAPTURES / "taps-group-host*.pcap")]) as source:
        assert isinstance(source, MergedCaptures) and source.taps == (str(HOST1), str(HOST2))
        packets = list(source.packets())
    assert [p.index for p in packets] == list(range(1, len(packets) + 1))
    assert [p.ts for p in packets] == sorted(p.ts for p in packets)
    assert {p.tap for p in packets} == {0, 1}


@pytest.mark.parametrize(
    "args,says",
    [
        (["read", "no-such-*.pcap"], "no file matches"),
        (["read", "-", str(HOST1)], "standard input (-) is read alone"),
        (["browse", str(HOST1), str(HOST2)], "browse reads one capture"),
    ],
)
def test_mistakes_are_one_line(args, says):
    done = kdissect(*args, stdin=HOST1.read_bytes())
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr


def test_a_cut_and_an_anonymized_copy_of_several_captures_read_back_as_they_should(tmp_path):
    cut = tmp_path / "joins.pcapng"
    done = kdissect("read", HOST1, HOST2, BROKER, "-Y", "api == JoinGroup", "-w", cut, "-q")
    assert done.returncode == 0, done.stderr
    joins = [facts(e) for e in exchanges(events(BROKER)) if e.api_key == ApiKey.JOIN_GROUP]
    assert sorted(facts(e) for e in exchanges(events(cut))) == sorted(joins)
    anonymized = tmp_path / "anonymized.pcap"
    done = kdissect("anonymize", HOST1, HOST2, BROKER, "-o", anonymized)
    assert done.returncode == 0, done.stderr
    assert sorted(e.api_key for e in exchanges(events(anonymized))) == sorted(e.api_key for e in exchanges(events(BROKER)))
