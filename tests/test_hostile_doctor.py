"""Hostile captures against the doctor's and stats' bookkeeping (issue 36): what grows with the capture (requests
never answered, partitions, client ids) is kept up to a bound and counted past it, said once; the report tells a
bounded number of findings of each rule; the final pass stops when asked. The bounds are lowered here so that
small captures reach them: the code that counts past them is the same."""

from __future__ import annotations

import struct

import pytest

from kdissect.dissector import Options, make_dissector
from kdissect.doctor import consumers, engine, protocol
from kdissect.doctor.engine import Doctor
from kdissect.events import Exchange
from kdissect.limits import Limits
from kdissect.testing import craft
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER
from kdissect.views import stats

API_VERSIONS, FETCH = 18, 1


def diagnose(packets: list, **limits) -> tuple[Doctor, list]:
    doctor = Doctor()
    for event in make_dissector(Options(limits=Limits(**limits))).run(packets):
        doctor.add(event)
    return doctor, doctor.findings()


def bounds_said(findings: list) -> str:
    [said] = [f.title for f in findings if f.id == "doctor.bounds"]
    return said


def test_requests_never_answered_are_counted_past_the_kept_ones(monkeypatch):
    """200 requests on one connection, one answer at the end: all 199 skipped ones counted as before, 50 kept."""
    monkeypatch.setattr(protocol, "KEEP_WAITING", 50)
    conv = craft.Conversation()
    packets = conv.handshake()
    for i in range(1, 201):
        packets += conv.send(CLIENT, craft.request(API_VERSIONS, 0, i, b"", client_id="x"))
    packets += conv.send(SERVER, craft.response(200, struct.pack(">hi", 0, 0)))
    kept: list[int] = []
    doctor = Doctor()
    family = next(f for f in doctor.families if isinstance(f, protocol.Protocol))
    for event in make_dissector(Options(limits=Limits(max_outstanding_requests=10))).run(packets + conv.close()):
        doctor.add(event)
        kept.append(sum(map(len, family.waiting.values())))
    findings = doctor.findings()
    [unanswered] = [f for f in findings if f.id == "protocol.unanswered"]
    assert unanswered.title.startswith("199 requests") and unanswered.evidence.exchange_count == 199
    assert max(kept) == 50 and "149 unanswered requests counted, not kept, past 50 per connection" in bounds_said(findings)


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
    family = next(f for f in doctor.families if isinstance(f, consumers.Consumers))
    assert len(family.lags) == len(family.lag_trails) == 100
    assert "400 fetched partitions whose lag was not followed past the first 100 partitions fetched by a client" in bounds_said(findings)


def clients_capture(count: int) -> list:
    conv = craft.Conversation()
    requests = b"".join(craft.request(API_VERSIONS, 0, i, b"", client_id=f"client-{i}") for i in range(count))
    responses = b"".join(craft.response(i, struct.pack(">hi", 0, 0)) for i in range(count))
    return conv.handshake() + conv.send(CLIENT, requests, 60_000) + conv.send(SERVER, responses, 60_000) + conv.close()


def test_client_ids_past_the_bound_are_counted_and_the_report_is_capped(monkeypatch):
    """300 client ids, 100 followed: 100 protocol.client findings could be told, 20 are (the report's bound, a
    setting), and one finding counts the rest, each bound said once."""
    monkeypatch.setattr(protocol, "KEEP_CLIENTS", 100)
    doctor = Doctor(["doctor.bounds.threshold=20"])
    for event in make_dissector(Options()).run(clients_capture(300)):
        doctor.add(event)
    findings = doctor.findings()
    family = next(f for f in doctor.families if isinstance(f, protocol.Protocol))
    assert len(family.clients) == len(family.client_trails) == 100
    assert [f.id for f in findings].count("protocol.client") == 20
    said = bounds_said(findings)
    assert said.startswith("held to its bounds: 80 more protocol.client findings; 200 exchanges not followed per client past the first 100")


def test_the_final_pass_stops_when_asked():
    """A stop asked during the final pass: the findings so far are the answer (the rules' generators are not run out)."""
    doctor = Doctor()
    for event in make_dissector(Options()).run(clients_capture(50)):
        doctor.add(event)
    asked: list[int] = []
    found = doctor.findings(lambda: asked.append(1) is None and len(asked) > 3)
    assert len(asked) == 4 and len(found) == 3
    everything = doctor.findings()
    assert len(everything) == 50 and doctor.findings(lambda: True) == everything  # a run stopped while reading: every finding


@pytest.mark.parametrize("count", [120])
def test_stats_keep_a_bounded_number_of_client_rows(monkeypatch, count):
    """Past the bound, client ids share one row: no exchange is lost from the table, and it stops growing."""
    monkeypatch.setattr(stats, "MAX_CLIENTS", 100)
    totals = stats.Stats()
    exchanges = [e for e in make_dissector(Options()).run(clients_capture(count)) if isinstance(e, Exchange)]
    for exchange in exchanges:
        totals.add(exchange)
    rows = dict(totals.tables())["clients"]
    assert len(rows) == 101 and sum(row["exchanges"] for row in rows) == len(exchanges) == count
    assert next(row for row in rows if row["client_id"] == stats.OTHER_CLIENTS)["exchanges"] == count - 100


def test_the_bounds_are_quiet_on_a_capture_within_them():
    _, findings = diagnose(clients_capture(30))
    assert "doctor.bounds" not in {f.id for f in findings} and engine.BOUNDS.id in engine.RULES
