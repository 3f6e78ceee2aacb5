"""What bodies mean beyond their numbers: SASL messages read and their secrets redacted, topic ids named from
another connection, consumer-protocol payloads read only when the group speaks that protocol."""

from __future__ import annotations

import json
import uuid

from rich.console import Console

from kdissect.decode.redaction import Redacted
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.schema import BUILTIN
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response
from kdissect.views.detail import DetailView
from kdissect.views.json_lines import exchange_json

SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA, FETCH, SYNC_GROUP = 17, 36, 3, 1, 14
PASSWORD = "hunter2-very-secret"


def exchanges(conversations: list[tuple[Conversation, list[tuple[int, int, dict, dict]]]], **options) -> list[Exchange]:
    """Dissect conversations, each a list of (api key, version, request values, response values)."""
    packets = []
    for conv, calls in conversations:
        packets += conv.handshake()
        for correlation, (key, version, req, resp) in enumerate(calls, 1):
            packets += conv.send(CLIENT, request(key, version, correlation, encode_body(key, version, "request", req)))
            header = 1 if BUILTIN.is_flexible(key, version) and key != 18 else 0
            packets += conv.send(SERVER, response(correlation, encode_body(key, version, "response", resp), header))
    events = make_dissector(Options(**options)).run(packets)
    return [e for e in events if isinstance(e, Exchange)]


def sasl(mechanism: str, client_first: bytes, server_first: bytes = b"", **options) -> list[Exchange]:
    conv = Conversation(clock=Clock())
    return exchanges(
        [
            (
                conv,
                [
                    (SASL_HANDSHAKE, 1, {"Mechanism": mechanism}, {"Mechanisms": [mechanism]}),
                    (SASL_AUTHENTICATE, 2, {"AuthBytes": client_first}, {"AuthBytes": server_first}),
                ],
            )
        ],
        **options,
    )


def rendered(exchange: Exchange) -> str:
    """`kdissect show --hex` of the exchange."""
    console = Console(record=True, width=200)
    console.print(DetailView(BUILTIN, hexdump=True).render(exchange))
    return console.export_text()


def test_plain_password_is_redacted_everywhere():
    _, authenticate = sasl("PLAIN", f"\0alice\0{PASSWORD}".encode())
    fields = authenticate.request.body.fields
    assert fields["AuthBytes"] == Redacted(len(PASSWORD) + 7)
    reading = fields.annotations["AuthBytes"]
    assert reading["mechanism"] == "PLAIN" and reading["username"] == "alice"
    assert reading["password"] == Redacted(len(PASSWORD))
    assert PASSWORD not in json.dumps(exchange_json(authenticate))
    for spans in (True, False):  # show --hex records spans; without them the whole body is masked
        _, authenticate = sasl("PLAIN", f"\0alice\0{PASSWORD}".encode(), spans=spans)
        shown = rendered(authenticate)
        assert PASSWORD not in shown and "hunter" not in shown and "68 75 6e 74" not in shown
        assert "** ** **" in shown


def test_show_secrets_reveals_them():
    _, authenticate = sasl("PLAIN", f"\0alice\0{PASSWORD}".encode(), show_secrets=True)
    assert authenticate.request.body.fields.annotations["AuthBytes"]["password"] == PASSWORD
    assert PASSWORD in json.dumps(exchange_json(authenticate))


def test_scram_proofs_and_signatures_are_redacted():
    _, authenticate = sasl("SCRAM-SHA-256", b"c=biws,r=clientnonce,p=cHJvb2Y=", b"v=c2lnbmF0dXJl")
    client = authenticate.request.body.fields.annotations["AuthBytes"]
    server = authenticate.response.body.fields.annotations["AuthBytes"]
    assert client["r"] == "clientnonce" and client["p"] == Redacted(8)
    assert server["v"] == Redacted(12)
    assert "cHJvb2Y" not in json.dumps(exchange_json(authenticate))


def test_scram_client_first_names_the_user():
    _, authenticate = sasl("SCRAM-SHA-512", b"n,,n=bob,r=abc")
    reading = authenticate.request.body.fields.annotations["AuthBytes"]
    assert reading["gs2_header"] == "n," and reading["n"] == "bob" and reading["r"] == "abc"


def test_oauthbearer_token_is_redacted():
    _, authenticate = sasl("OAUTHBEARER", b"n,,\x01auth=Bearer eyJhbGciOi.secret.token\x01\x01")
    reading = authenticate.request.body.fields.annotations["AuthBytes"]
    assert reading["auth"]["scheme"] == "Bearer" and isinstance(reading["auth"]["token"], Redacted)


def test_unknown_mechanism_payload_is_redacted_whole():
    _, authenticate = sasl("GSSAPI", b"\x60\x82kerberos-token")
    assert authenticate.request.body.fields.annotations["AuthBytes"]["payload"] == Redacted(16)


def test_topic_id_named_from_a_metadata_response_on_another_connection():
    topic_id = str(uuid.UUID(int=0x1234))
    metadata = Conversation(client_port=40001, clock=Clock())
    fetch = Conversation(client_port=40002, clock=metadata.clock)
    found = exchanges(
        [
            (metadata, [(METADATA, 12, {"Topics": None}, {"Topics": [{"Name": "orders", "TopicId": topic_id}]})]),
            (
                fetch,
                [
                    (
                        FETCH,
                        13,
                        {"Topics": [{"TopicId": topic_id, "Partitions": [{"Partition": 0}]}]},
                        {"Responses": [{"TopicId": topic_id, "Partitions": [{"PartitionIndex": 0}]}]},
                    )
                ],
            ),
        ]
    )
    fetched = next(e for e in found if e.api_key == FETCH)
    for message in (fetched.request, fetched.response):
        assert message.body.topics == ("orders",)
    topic = fetched.response.body.fields["Responses"][0]
    assert topic.annotations == {"TopicId": "orders"}
    assert exchange_json(fetched)["response"]["body"]["Responses"][0]["_kdissect"] == {"TopicId": "orders"}


def test_consumer_assignment_read_only_when_the_protocol_is_consumer():
    """A protocol type kdissect has no reader for leaves the bytes as they are (Connect's and Schema Registry's have
    their own readers: tests/test_group_payloads.py)."""
    assignment = b"\x00\x01" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x01\x00\x00\x00\x00" + b"\xff\xff\xff\xff"
    for kind, expected in (("consumer", True), ("my-own-protocol", False)):
        conv = Conversation(clock=Clock())
        (sync,) = exchanges(
            [
                (
                    conv,
                    [
                        (
                            SYNC_GROUP,
                            5,
                            {"GroupId": "g", "ProtocolType": kind, "Assignments": []},
                            {"ProtocolType": kind, "Assignment": assignment},
                        )
                    ],
                )
            ]
        )
        fields = sync.response.body.fields
        assert (fields.annotations is not None) is expected
        if expected:
            read = fields.annotations["Assignment"]
            assert read["Version"] == 1 and read["AssignedPartitions"][0]["Topic"] == "t"
            assert read["AssignedPartitions"][0]["Partitions"] == [0]
