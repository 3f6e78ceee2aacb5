"""SASL after SaslHandshake v0 (issue 14, S1): raw tokens with no Kafka header are the connection's authentication
phase, read like SaslAuthenticate's AuthBytes, and their secrets stay out of `show --hex` unless asked for.

The frames are written by hand from Kafka's wire format: SaslHandshake v0 (request header v1, then the
mechanism), its response, then each token as a 4-byte size and the token's bytes, as Kafka's
SaslServerAuthenticator and the clients' legacy path exchange them (an empty reply to PLAIN).
"""

from __future__ import annotations

import io
import struct

from rich.console import Console

from kdissect.decode.redaction import Redacted
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER
from kdissect.views.detail import DetailView
from kdissect.views.json_lines import exchange_json
from kdissect.views.summary import api_label

PASSWORD = b"s3cret-pw"


def string(text: bytes) -> bytes:
    return struct.pack(">h", len(text)) + text


def token(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def conversation(mechanism: bytes, tokens: list[tuple[bytes, bytes]]) -> list:
    conv = craft.Conversation()
    packets = conv.handshake()
    packets += conv.send(CLIENT, craft.request(17, 0, 1, string(mechanism)))
    packets += conv.send(SERVER, craft.response(1, struct.pack(">hi", 0, 1) + string(mechanism)))
    for sent, reply in tokens:
        packets += conv.send(CLIENT, token(sent)) + conv.send(SERVER, token(reply))
    packets += conv.send(CLIENT, craft.request(3, 1, 2, b"\0\0\0\0")) + conv.send(SERVER, craft.response(2, b"\0" * 12))
    return packets + conv.close()


def exchanges(packets, **options) -> list[Exchange]:
    return [e for e in make_dissector(Options(**options)).run(packets) if isinstance(e, Exchange)]


def test_plain_token_is_the_authentication_phase_not_an_unreadable_frame() -> None:
    handshake, plain, metadata = exchanges(conversation(b"PLAIN", [(b"\0alice\0" + PASSWORD, b"")]))
    assert [(e.status, api_label(e)) for e in (handshake, plain, metadata)] == [
        ("ok", "SaslHandshake v0"),
        ("ok", "SASL token"),
        ("ok", "Metadata v1"),
    ]
    assert plain.sasl_token and plain.diagnostics == ()
    fields = plain.request.body.fields
    assert fields["AuthBytes"] == Redacted(7 + len(PASSWORD))
    assert fields.annotations["AuthBytes"] == {"mechanism": "PLAIN", "authzid": "", "username": "alice", "password": Redacted(9)}
    assert plain.response.frame.size == 0 and plain.response.body.fields["AuthBytes"] == b""
    shown = exchange_json(plain)
    assert (shown["api_key"], shown["api_name"], shown["request"]["header"]) == (None, "SASL token", {"sasl_token": True})
    assert "alice" not in str(shown["request"]["body"]["AuthBytes"])


def test_scram_tokens_are_read_round_by_round() -> None:
    rounds = [
        (b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL", b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"),
        (b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=", b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ="),
    ]
    found = exchanges(conversation(b"SCRAM-SHA-256", rounds))
    assert [(e.status, api_label(e)) for e in found] == [("ok", "SaslHandshake v0")] + [("ok", "SASL token")] * 2 + [("ok", "Metadata v1")]
    first, final = found[1], found[2]
    assert first.request.body.fields.annotations["AuthBytes"]["n"] == "alice"
    assert first.response.body.fields.annotations["AuthBytes"]["i"] == "4096"
    assert final.request.body.fields.annotations["AuthBytes"]["p"] == Redacted(28)
    assert final.response.body.fields.annotations["AuthBytes"]["v"] == Redacted(28)


def test_a_token_without_its_reply_is_unanswered_and_later_requests_pair() -> None:
    conv = craft.Conversation()
    packets = conv.handshake() + conv.send(CLIENT, craft.request(17, 0, 1, string(b"PLAIN")))
    packets += conv.send(SERVER, craft.response(1, struct.pack(">hi", 0, 1) + string(b"PLAIN")))
    packets += conv.send(CLIENT, token(b"\0bob\0" + PASSWORD))
    found = exchanges(packets + conv.close())
    assert [(e.status, api_label(e)) for e in found] == [("ok", "SaslHandshake v0"), ("unanswered", "SASL token")]


def hex_view(exchange: Exchange) -> str:
    out = io.StringIO()
    Console(file=out, width=140, color_system=None).print(DetailView(hexdump=True).render(exchange))
    return out.getvalue()


def test_show_hex_masks_the_password_of_a_raw_token_unless_secrets_are_shown() -> None:
    packets = conversation(b"PLAIN", [(b"\0alice\0" + PASSWORD, b"")])
    hidden = hex_view(exchanges(packets, spans=True)[1])
    assert "s3cret" not in hidden and PASSWORD.hex(" ")[:8] not in hidden and "<redacted, 16 bytes>" in hidden
    shown = hex_view(exchanges(packets, spans=True, show_secrets=True)[1])
    assert "s3cret-pw" in shown
