"""A connection's phases (kdissect/kafka/phase.py): the moves crafted conversations make through them, each counted
the way its end says, and the table refusing a move it does not list."""

from __future__ import annotations

import struct

import pytest

from kdissect.dissector import Dissector
from kdissect.kafka import connection as connection_module
from kdissect.kafka.phase import MOVES, Phase, PhaseError, moved
from kdissect.net.tcp import SYN
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER


def string(text: bytes) -> bytes:
    return struct.pack(">h", len(text)) + text


def sasl_plain(conv: craft.Conversation) -> list:
    """SaslHandshake v0 for PLAIN, the raw token and its empty reply, then a Metadata exchange: Kafka's legacy path."""
    packets = conv.handshake()
    for side, data in (
        (CLIENT, craft.request(17, 0, 1, string(b"PLAIN"))),
        (SERVER, craft.response(1, struct.pack(">hi", 0, 1) + string(b"PLAIN"))),
        (CLIENT, struct.pack(">i", 16) + b"\0alice\0s3cret-pw"),
        (SERVER, struct.pack(">i", 0)),
        (CLIENT, craft.request(3, 1, 2, b"\0\0\0\0")),
        (SERVER, craft.response(2, b"\0" * 12)),
    ):
        packets += conv.send(side, data)
    return packets + conv.close()


def moves(packets: list, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, str]], Dissector]:
    """Every move the connections made, in order, and the dissector (for its counters)."""
    made = []

    def recorded(phase: Phase, to: Phase) -> Phase:
        made.append((phase.name, to.name))
        return moved(phase, to)

    monkeypatch.setattr(connection_module, "moved", recorded)
    dissector = Dissector()
    list(dissector.run(packets))
    return made, dissector


def test_a_kafka_connection_through_its_sasl_tokens(monkeypatch) -> None:
    made, dissector = moves(sasl_plain(craft.Conversation()), monkeypatch)
    assert made == [("PROBING", "KAFKA"), ("KAFKA", "SASL"), ("SASL", "KAFKA"), ("KAFKA", "CLOSED")]
    assert dissector.counters.kafka_connections == 1 and dissector.counters.exchanges == 3


def test_on_another_port_the_first_request_orients_it(monkeypatch) -> None:
    made, _ = moves(sasl_plain(craft.Conversation(client_port=55555, server_port=19092)), monkeypatch)
    assert made == [("PROBING", "KAFKA"), ("KAFKA", "SASL"), ("SASL", "KAFKA"), ("KAFKA", "CLOSED")]


def test_bytes_first_judged_at_the_close_may_already_be_in_the_sasl_tokens(monkeypatch) -> None:
    """On another port the client's first segment is lost and the rest waits behind the hole until the capture
    ends: only then is it judged, Kafka, and what it replays (SaslHandshake v0, a token) moves it on before it closes."""
    conv = craft.Conversation(client_port=55555, server_port=19092)
    packets = conv.handshake()
    conv.send(CLIENT, b"\0" * 10)  # lost
    packets += conv.send(CLIENT, craft.request(17, 0, 1, string(b"PLAIN")) + struct.pack(">i", 7) + b"\0alice\0")
    made, dissector = moves(packets, monkeypatch)
    assert made == [("PROBING", "KAFKA"), ("KAFKA", "SASL"), ("SASL", "CLOSED")]
    assert dissector.counters.kafka_connections == 1 and dissector.counters.exchanges == 2  # both unanswered


def test_a_syn_alone_ends_empty(monkeypatch) -> None:
    made, dissector = moves([craft.Conversation().segment(CLIENT, flags=SYN)], monkeypatch)
    assert made == [("PROBING", "EMPTY")] and dissector.counters.empty_connections == 1


def test_a_refused_connection_is_oriented_by_its_reset_and_ends_empty(monkeypatch) -> None:
    conv = craft.Conversation()
    made, dissector = moves([conv.segment(CLIENT, flags=SYN), conv.rst(SERVER)], monkeypatch)
    assert made == [("PROBING", "KAFKA"), ("KAFKA", "EMPTY")] and dissector.counters.empty_connections == 1


def test_what_is_not_kafka_is_ignored_at_once(monkeypatch) -> None:
    conv = craft.Conversation(client_port=55555, server_port=8080)
    packets = conv.handshake() + conv.send(CLIENT, b"GET / HTTP/1.1\r\nHost: example\r\n\r\n") + conv.close()
    made, dissector = moves(packets, monkeypatch)
    assert made == [("PROBING", "IGNORED")] and dissector.counters.ignored_connections == 1


def test_an_ended_connection_moves_no_more() -> None:
    assert all(not MOVES[phase] for phase in Phase if phase.over)
    assert moved(Phase.PROBING, Phase.KAFKA) is Phase.KAFKA
    with pytest.raises(PhaseError, match="CLOSED cannot become KAFKA"):
        moved(Phase.CLOSED, Phase.KAFKA)
    with pytest.raises(PhaseError):
        moved(Phase.PROBING, Phase.SASL)  # a connection is Kafka before it can be in its SASL tokens
