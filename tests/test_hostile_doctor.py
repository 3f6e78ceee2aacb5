"""Hostile captures against the doctor's and stats' bookkeeping (issue 36): what grows with the capture (requests
never answered, partitions, client ids) is kept up to a bound and counted past it, said once in a `doctor.bounds`
finding; the report tells a bounded number of findings of each rule; the final pass stops when asked. The bounds are
lowered here so that small captures reach them: the code that counts past them is the same."""

from __future__ import annotations

import os
import struct
import tracemalloc

from kdissect.dissector import Options, make_dissector
from kdissect.doctor import connections, consumers, engine, latency, protocol
from kdissect.doctor.engine import Doctor
from kdissect.events import Exchange
from kdissect.limits import Limits
from kdissect.records.encode import Draft, encode_batch
from kdissect.testing import craft
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER
from kdissect.views import stats

API_VERSIONS, FETCH, METADATA, PRODUCE = 18, 1, 3, 0


def diagnose(packets: list, changes: tuple[str, ...] = (), **limits) -> tuple[Doctor, list]:
    doctor = Doctor(changes)
    for event in make_dissector(Options(limits=Limits(**limits))).run(packets):
        doctor.add(event)
    return doctor, list(doctor.report().findings)


def family(doctor: Doctor, kind: type) -> object:
    return next(f for f in doctor.families if isinstance(f, kind))


def bounds_said(findings: list) -> str:
    [said] = [f for f in findings if f.id == "doctor.bounds"]
    assert said.title.startswith(f"{said.evidence.count} counted past the doctor's bounds: ")
    return said.title


def test_requests_never_answered_are_told_past_the_held_ones(monkeypatch):
    """200 requests on one connection, one answer at the end: all 199 skipped ones are told as before, 50 held
    until then, the others told at once and counted."""
    monkeypatch.setattr(connections, "KEEP_WAITING_ALL", 50)
    conv = craft.Conversation()
    packets = conv.handshake()
    for i in range(1, 201):
        packets += conv.send(CLIENT, craft.request(API_VERSIONS, 0, i, b"", client_id="x"))
    packets += conv.send(SERVER, craft.response(200, struct.pack(">hi", 0, 0)))
    held: list[int] = []
    doctor = Doctor()
    waiting = family(doctor, connections.Connections)
    for event in make_dissector(Options(limits=Limits(max_outstanding_requests=10))).run(packets + conv.close()):
        doctor.add(event)
        held.append(sum(map(len, waiting.waiting.values())))
    findings = list(doctor.report().findings)
    [unanswered] = [f for f in findings if f.id == "protocol.unanswered"]
    assert unanswered.title.startswith("199 requests") and unanswered.evidence.count == 199
    assert max(
        held
    ) == 50 and "149 unanswered requests told skipped at once, not held, past 1000 per connection or 50 in all" in bounds_said(findings)


def fetch_pair(partitions: int, correlation: int) -> tuple[bytes, bytes]:
    request = encode_body(
        FETCH, 4, "request", {"ReplicaId": -1, "Topics": [{"Topic": "t", "Partitions": [{"Partition": p} for p in range(partitions)]}]}
    )
    response = encode_body(
        FETCH,
        4,
        "response",
        {"Responses": [{"Topic": "t", "Partitions": [{"PartitionIndex": p, "HighWatermark": 9} for p in range(partitions)]}]},
    )
    return craft.request(FETCH, 4, correlation, request, client_id="c"), craft.response(correlation, response)


def test_lags_are_followed_for_a_bounded_number_of_partitions(monkeypatch):
    monkeypatch.setattr(consumers, "KEEP_MANY", 100)
    conv = craft.Conversation()
    packets = conv.handshake()
    for correlation in (1, 2):
        request, response = fetch_pair(300, correlation)
        packets += conv.send(CLIENT, request, 60_000) + conv.send(SERVER, response, 60_000)
    doctor, findings = diagnose(packets + conv.close())
    assert len(family(doctor, consumers.Consumers).lags) == 100
    assert "400 fetched partitions whose lag was not followed past the first 100 partitions fetched by a client" in bounds_said(findings)


def clients_capture(count: int) -> list:
    """One Metadata exchange per client id (Metadata names no client software, as ApiVersions v0 would)."""
    conv = craft.Conversation()
    request, response = encode_body(METADATA, 1, "request", {"Topics": []}), encode_body(METADATA, 1, "response", {"ControllerId": -1})
    requests = b"".join(craft.request(METADATA, 1, i, request, client_id=f"client-{i}") for i in range(count))
    responses = b"".join(craft.response(i, response) for i in range(count))
    return conv.handshake() + conv.send(CLIENT, requests, 60_000) + conv.send(SERVER, responses, 60_000) + conv.close()


def test_client_ids_past_the_bound_are_counted_and_the_report_is_capped(monkeypatch):
    """300 client ids, 100 followed: 100 protocol.client findings could be told, 20 are (the report's bound, a
    setting), and one finding counts the rest, each bound said once."""
    monkeypatch.setattr(protocol, "KEEP_CLIENTS", 100)
    doctor, findings = diagnose(clients_capture(300), ("doctor.bounds.threshold=20",))
    clients = family(doctor, protocol.Protocol)
    assert len(clients.inventory) == len(clients.inventory_trails) == 100
    assert [f.id for f in findings].count("protocol.client") == 20
    said = bounds_said(findings)
    assert said.endswith(": 80 more protocol.client findings not told; 200 exchanges not followed per client past the first 100 client ids")
    assert said.startswith("280 ")


def test_latency_is_timed_for_a_bounded_number_of_api_and_broker_pairs(monkeypatch):
    """A broker address per connection: the first 10 (API, broker) pairs are timed, the others counted."""
    monkeypatch.setattr(latency, "KEEP_GROUPS", 10)
    clock, packets = craft.Clock(), []
    request, response = encode_body(METADATA, 1, "request", {"Topics": []}), encode_body(METADATA, 1, "response", {"ControllerId": -1})
    for i in range(30):
        conv = craft.Conversation(client_port=40000 + i, server=f"10.0.1.{i}", clock=clock)
        packets += conv.handshake() + conv.send(CLIENT, craft.request(METADATA, 1, 1, request, client_id="c"))
        packets += conv.send(SERVER, craft.response(1, response)) + conv.close()
    doctor, findings = diagnose(packets)
    assert len(family(doctor, latency.Latency).histograms) == 10
    assert "20 exchanges not timed past the first 10 API and broker pairs" in bounds_said(findings)


def test_the_final_pass_stops_when_asked():
    """A stop asked during the final pass: the findings so far are the answer (the rules' generators are not run out)."""
    doctor, everything = diagnose(clients_capture(50))
    asked: list[int] = []
    found = doctor.report(lambda: asked.append(1) is None and len(asked) > 3).findings
    assert len(asked) == 4 and len(found) == 3
    assert len(everything) >= 50 and list(doctor.report(lambda: True).findings) == everything  # stopped while reading: all


def test_stats_keep_a_bounded_number_of_client_rows(monkeypatch):
    """Past the bound, client ids share one row: no exchange is lost from the table, and it stops growing."""
    monkeypatch.setattr(stats, "MAX_CLIENTS", 100)
    totals = stats.Stats()
    exchanges = [e for e in make_dissector(Options()).run(clients_capture(120)) if isinstance(e, Exchange)]
    for exchange in exchanges:
        totals.add(exchange)
    rows = dict(totals.tables())["clients"]
    assert len(rows) == 101 and sum(row["exchanges"] for row in rows) == len(exchanges) == 120
    assert next(row for row in rows if row["client_id"] == stats.OTHER_CLIENTS)["exchanges"] == 20


def test_the_bounds_are_quiet_on_a_capture_within_them():
    _, findings = diagnose(clients_capture(30))
    assert "doctor.bounds" not in {f.id for f in findings} and engine.BOUNDS.id in engine.RULES


def test_the_slowest_exchanges_are_kept_without_their_records():
    """Latency keeps the slowest exchanges of each API and broker as evidence: what a trail takes of them, not their
    bodies. Held whole, ten Produce requests of 1 MiB each stayed in memory to the end (on a capture of large values
    the doctor peaked at twice the size of `read --json`)."""
    conv = craft.Conversation()
    packets = conv.handshake()
    for correlation in range(1, 31):
        records = encode_batch([Draft(b"k", os.urandom(1 << 20))])
        packets += conv.send(CLIENT, craft.request(PRODUCE, 3, correlation, produce_body(records), client_id="big"))
        conv.clock.ts += correlation * 1_000_000  # each answered later than the one before: each is among the slowest
        packets += conv.send(SERVER, craft.response(correlation, encode_body(PRODUCE, 3, "response", {})))
    packets += conv.close()
    doctor = Doctor()
    tracemalloc.start()
    try:
        for event in make_dissector(Options()).run(packets):
            doctor.add(event)
        event = None
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert family(doctor, latency.Latency).slowest  # type: ignore[attr-defined]
    assert held < 2 << 20, held


def produce_body(records: bytes) -> bytes:
    return encode_body(
        PRODUCE,
        3,
        "request",
        {"Acks": 1, "TimeoutMs": 1000, "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": records}]}]},
    )
