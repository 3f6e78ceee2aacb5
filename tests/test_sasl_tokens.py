"""SASL after SaslHandshake v0 (issue 14, S1): raw tokens with no Kafka header are the connection's authentication
phase, read like SaslAuthenticate's AuthBytes, and their secrets stay out of `show --hex` unless asked for.

The frames are written by hand from Kafka's wire format: SaslHandshake v0 (request header v1, then the
mechanism), its response, then each token as a 4-byte size and the token's bytes, as Kafka's
SaslServerAuthenticator and the clients' legacy path exchange them (an empty reply to PLAIN).
"""

from __future__ import annotations

import datetime
import io
import ssl
import struct
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from rich.console import Console

from kdissect.decode.redaction import Redacted
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.schema import BUILTIN
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


def turns(mechanism: bytes, tokens: list[tuple[bytes, bytes]]) -> list[tuple[int, bytes]]:
    """What each side sends, in order: SaslHandshake v0, the raw tokens and their replies, then a Metadata request."""
    out = [(CLIENT, craft.request(17, 0, 1, string(mechanism))), (SERVER, craft.response(1, struct.pack(">hi", 0, 1) + string(mechanism)))]
    for sent, reply in tokens:
        out += [(CLIENT, token(sent)), (SERVER, token(reply))]
    return out + [(CLIENT, craft.request(3, 1, 2, b"\0\0\0\0")), (SERVER, craft.response(2, b"\0" * 12))]


def conversation(mechanism: bytes, tokens: list[tuple[bytes, bytes]]) -> list:
    conv = craft.Conversation()
    packets = conv.handshake()
    for side, data in turns(mechanism, tokens):
        packets += conv.send(side, data)
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
    Console(file=out, width=140, color_system=None).print(DetailView(BUILTIN, hexdump=True).render(exchange))
    return out.getvalue()


def test_show_hex_masks_the_password_of_a_raw_token_unless_secrets_are_shown() -> None:
    packets = conversation(b"PLAIN", [(b"\0alice\0" + PASSWORD, b"")])
    hidden = hex_view(exchanges(packets, spans=True)[1])
    assert "s3cret" not in hidden and PASSWORD.hex(" ")[:8] not in hidden and "<redacted, 16 bytes>" in hidden
    shown = hex_view(exchanges(packets, spans=True, show_secrets=True)[1])
    assert "s3cret-pw" in shown


def tls_conversation(plaintext: list[tuple[int, bytes]], folder: Path) -> tuple[list, bytes]:
    """The same turns inside a real TLS session (OpenSSL through Python's ssl, over memory buffers, with a
    self-signed certificate): the packets, and the key log OpenSSL wrote for it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafka")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    (folder / "key.pem").write_bytes(pem)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_context.check_hostname, client_context.verify_mode = False, ssl.CERT_NONE
    client_context.keylog_filename = str(folder / "keys.log")
    bios = [(ssl.MemoryBIO(), ssl.MemoryBIO()), (ssl.MemoryBIO(), ssl.MemoryBIO())]  # (incoming, outgoing) per side
    ends = (
        client_context.wrap_bio(*bios[CLIENT], server_hostname="kafka"),
        server_context.wrap_bio(*bios[SERVER], server_side=True),
    )
    conv = craft.Conversation()
    packets = conv.handshake()

    def flush(side: int) -> None:
        data = bios[side][1].read()
        if data:
            packets.extend(conv.send(side, data))
            bios[side ^ 1][0].write(data)

    for _ in range(4):  # the TLS handshake, a flight at a time
        for side in (CLIENT, SERVER):
            try:
                ends[side].do_handshake()
            except ssl.SSLWantReadError:
                pass
            flush(side)
    for side, data in plaintext:
        ends[side].write(data)
        flush(side)
        received = b""
        while len(received) < len(data):
            received += ends[side ^ 1].read()
        flush(side ^ 1)  # a TLS 1.3 server sends its session tickets with its first reply
        assert received == data
    return packets + conv.close(), (folder / "keys.log").read_bytes()


def test_raw_tokens_after_a_v0_handshake_inside_tls(tmp_path) -> None:
    """Inside TLS the framers sit behind the TLS gate: the SASL phase makes those framers take the broker's empty
    reply to PLAIN (a frame of size 0) and the client's token, so they pair as in plaintext, the password redacted."""
    packets, keylog = tls_conversation(turns(b"PLAIN", [(b"\0alice\0" + PASSWORD, b"")]), tmp_path)
    assert keylog and PASSWORD not in b"".join(p.data for p in packets)
    found = exchanges(packets, tls_keylog=keylog, spans=True)
    assert [(e.status, api_label(e)) for e in found] == [("ok", "SaslHandshake v0"), ("ok", "SASL token"), ("ok", "Metadata v1")]
    plain = found[1]
    assert plain.connection.tls is not None and plain.sasl_token and plain.diagnostics == ()
    assert plain.request.body.fields["AuthBytes"] == Redacted(7 + len(PASSWORD)) and plain.response.frame.size == 0
    hidden = hex_view(plain)
    assert "s3cret" not in hidden and PASSWORD.hex(" ")[:8] not in hidden and "<redacted, 16 bytes>" in hidden
    assert "s3cret-pw" in hex_view(exchanges(packets, tls_keylog=keylog, spans=True, show_secrets=True)[1])
