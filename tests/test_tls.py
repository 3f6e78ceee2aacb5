"""Kafka inside TLS: the key schedules against published vectors, the decryptor against RFC 8448's trace, every
TLS capture of the rig against its plaintext twin (the same connections captured between stunnel and the broker
at the same time, rig/run.py) and against tshark's own decryption, and each kind of broken input.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from kdissect.capture import Packet, open_capture
from kdissect.cli import main
from kdissect.dissector import Options, make_dissector
from kdissect.events import ConnectionEnd, Exchange, Notice, TlsInfo
from kdissect.testing import rfc8448 as rfc
from kdissect.tls import tls12, tls13
from kdissect.tls.decryptor import TlsSession
from kdissect.tls.detect import kafka_client_hello, starts_tls
from kdissect.tls.keylog import KeyLog
from kdissect.views.terminal import tls_hidden

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
TLS = sorted(p for p in CAPTURES.glob("tls*") if p.suffix in (".pcap", ".pcapng") and not p.stem.endswith("-plain"))
TSHARK = shutil.which("tshark")


def keylog_of(path: Path) -> bytes:
    keylog = path.with_suffix(".keylog")
    return keylog.read_bytes() if keylog.exists() else b""


@cache
def packets_of(path: Path) -> tuple[Packet, ...]:
    with open_capture(path) as capture:
        return tuple(capture.packets())


def dissect(path: Path, keylog: bytes | None = None, packets=None, embedded: bool = True, ports=frozenset({9092})):
    """(exchanges, notices, connection ends) of a capture, with its key log (or the given one) and, unless
    told not to, the secrets a pcapng embeds; `packets` replaces the capture's packets."""
    dissector = make_dissector(Options(ports=ports, tls_keylog=keylog_of(path) if keylog is None else keylog))
    with open_capture(path) as capture:
        if embedded:
            capture.secrets_to(dissector.add_tls_keylog)
        events = list(dissector.run(capture.packets() if packets is None else packets))
    return (
        [e for e in events if isinstance(e, Exchange)],
        [e for e in events if isinstance(e, Notice)],
        [e for e in events if isinstance(e, ConnectionEnd)],
    )


def twin(path: Path) -> Path:
    return CAPTURES / f"{path.name.split('.')[0]}-plain.pcap"


def fingerprint(exchange: Exchange) -> tuple:
    """What must be equal on both sides of stunnel: who asked what, and every byte of both frames."""
    return (
        exchange.connection.id,
        exchange.client_id,
        exchange.correlation_id,
        exchange.api_key,
        exchange.api_version,
        exchange.status,
        exchange.request.frame.data if exchange.request else None,
        exchange.response.frame.data if exchange.response else None,
    )


def fingerprints(exchanges: list[Exchange], connections: bool = True) -> list[tuple]:
    """Sorted fingerprints; without the connection ids when comparing captures whose connections differ."""
    return sorted((fingerprint(e)[0 if connections else 1 :] for e in exchanges), key=repr)


def codes(notices: list[Notice]) -> set[str]:
    return {n.diagnostic.code for n in notices}


IANA_NAMES = {
    "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}
"""OpenSSL's names of the TLS 1.2 suites stunnel was told to use, and the IANA names kdissect reports."""


def test_tls13_traffic_keys_are_those_of_rfc_8448():
    for label, secret in rfc.SECRETS.items():
        key, iv = tls13.traffic_keys("sha256", bytes.fromhex(secret), 16)
        assert (key.hex(), iv.hex()) == rfc.KEYS[label], label


class Sink:
    """Where a direction's plaintext goes: kept as data and gaps."""

    held = 0

    def __init__(self) -> None:
        self.got: list = []

    def start(self, mid_stream: bool) -> None:
        self.got.append(("start", mid_stream))

    def data(self, chunk: bytes, ts: int, index: int) -> None:
        self.got.append(chunk)

    def gap(self, length: int, ts: int) -> None:
        self.got.append(("gap", length))

    @staticmethod
    def fill(offset: int, data: bytes) -> int:
        return 0

    def finish(self) -> None:
        pass

    def plaintext(self) -> bytes:
        return b"".join(x for x in self.got if isinstance(x, bytes))


def rfc_8448_session(keylog: bytes, chunk: int | None = None):
    """RFC 8448's records through a session, `chunk` bytes at a time; (client sink, server sink, diagnostics, session)."""
    keys = KeyLog()
    keys.add(keylog)
    sinks, diagnostics = (Sink(), Sink()), []
    session = TlsSession(keys, lambda d, ts, i: diagnostics.append(d), sinks, lambda info: None, set())
    client, server = session.directions
    client.start(False)
    server.start(False)
    for direction, data in (
        (client, rfc.CLIENT_HELLO),
        (server, rfc.SERVER_HELLO + rfc.SERVER_FLIGHT),
        (client, rfc.CLIENT_FINISHED + rfc.CLIENT_DATA),
        (server, rfc.TICKET + rfc.SERVER_DATA),
    ):
        step = chunk or len(data)
        for at in range(0, len(data), step):
            direction.data(data[at : at + step], 0, 0)
    client.finish()
    server.finish()
    return sinks[0], sinks[1], diagnostics, session


@pytest.mark.parametrize("chunk", [None, 1, 7, 100])
def test_rfc_8448_trace_decrypts_however_its_records_are_cut(chunk):
    client, server, diagnostics, session = rfc_8448_session(rfc.KEYLOG, chunk)
    assert client.plaintext() == rfc.PAYLOAD and server.plaintext() == rfc.PAYLOAD
    assert not diagnostics
    info = session.info()
    assert (info.version, info.cipher_suite, info.sni, info.secret) == (
        "TLS 1.3",
        "TLS_AES_128_GCM_SHA256",
        "server",
        "CLIENT_TRAFFIC_SECRET_0",
    )
    assert session.totals().records == (2, 3)  # client: Finished, data; server: the flight, the ticket, data


def test_rfc_8448_without_handshake_secrets_still_opens_the_data():
    """Only the application secrets: the handshake records stay shut and the data decrypts all the same."""
    keylog = "".join(
        f"{label} {rfc.RANDOM} {rfc.SECRETS[label]}\n" for label in ("CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0")
    ).encode()
    client, server, diagnostics, _ = rfc_8448_session(keylog)
    assert client.plaintext() == rfc.PAYLOAD and server.plaintext() == rfc.PAYLOAD
    assert not diagnostics


def test_rfc_8448_with_a_wrong_secret_says_so():
    wrong = rfc.KEYLOG.replace(rfc.SECRETS["SERVER_TRAFFIC_SECRET_0"].encode(), b"00" * 32)
    client, server, diagnostics, _ = rfc_8448_session(wrong)
    assert client.plaintext() == rfc.PAYLOAD and server.plaintext() == b""
    assert [d.code for d in diagnostics] == ["tls.wrong-key"]


def test_tls12_prf_gives_the_published_vector():
    """The SHA-256 TLS 1.2 PRF test vector posted to the IETF TLS list (also what `openssl kdf TLS1-PRF` gives)."""
    out = tls12.prf(
        "sha256", bytes.fromhex("9bbe436ba940f017b17652849a71db35"), b"test label", bytes.fromhex("a0ba9f936cda311827a6f796ffd5198c"), 100
    )
    assert out.hex() == (
        "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564b"
        "ab4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff70187347b66"
    )


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl to compare with")
@pytest.mark.parametrize("hash_name,digest", [("sha256", "SHA256"), ("sha384", "SHA384")])
def test_tls12_key_block_agrees_with_openssl(hash_name, digest):
    """The key expansion of an extended-master-secret session, against OpenSSL's own TLS1-PRF."""
    master = bytes(range(48))
    client_random, server_random = bytes(range(32, 64)), bytes(range(100, 132))
    seed = b"key expansion" + server_random + client_random
    run = subprocess.run(
        ["openssl", "kdf", "-keylen", "72", "-kdfopt", f"digest:{digest}", "-kdfopt", f"hexsecret:{master.hex()}"]
        + ["-kdfopt", f"hexseed:{seed.hex()}", "TLS1-PRF"],
        capture_output=True,
        text=True,
    )
    if run.returncode:
        pytest.skip(f"this openssl has no TLS1-PRF: {run.stderr.strip()}")
    expected = bytes.fromhex(run.stdout.strip().replace(":", ""))
    keys = tls12.key_block(hash_name, master, (client_random, server_random), 32, 4)
    assert b"".join(keys) == expected


def test_key_log_lines():
    """Comments, blank lines and labels kdissect has no use for are skipped; OpenSSL's *_TRAFFIC_SECRET_N lines
    after KeyUpdates are ignored; malformed lines are counted, never fatal."""
    keys = KeyLog()
    count = keys.add(
        (
            "# TLS secrets log file\n\n"
            f"CLIENT_RANDOM {'aa' * 32} {'bb' * 48}\n"
            f"CLIENT_TRAFFIC_SECRET_0 {'aa' * 32} {'cc' * 32}\n"
            f"CLIENT_TRAFFIC_SECRET_1 {'aa' * 32} {'dd' * 32}\n"
            f"SERVER_TRAFFIC_SECRET_12 {'aa' * 32} {'dd' * 32}\n"
            f"EXPORTER_SECRET {'aa' * 32} {'ee' * 32}\n"
            f"CLIENT_RANDOM {'aa' * 31} {'bb' * 48}\n"
            f"CLIENT_RANDOM {'zz' * 32} {'bb' * 48}\n"
            f"SERVER_HANDSHAKE_TRAFFIC_SECRET {'aa' * 32}\n"
            "GARBAGE\n"
        ).encode()
    )
    assert (count.secrets, count.ignored, count.malformed) == (2, 3, 4)
    assert keys.get("CLIENT_TRAFFIC_SECRET_0", bytes.fromhex("aa" * 32)) == bytes.fromhex("cc" * 32)


def test_a_key_log_without_secrets_is_refused_in_one_line(tmp_path, capsys):
    secret = "ab" * 48
    bad = tmp_path / "keys.log"
    bad.write_text(f"CLIENT_RANDOM nothex {secret}\n")
    code = cli("read", str(TLS[0]), "--tls-keylog", str(bad), "-q")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no TLS secret" in err and secret not in err


# the rig's TLS captures


def test_the_tls_captures_are_present():
    names = {p.name for p in TLS}
    assert len(TLS) >= 8 and any(name.endswith(".pcapng") for name in names)


@pytest.mark.parametrize("path", TLS, ids=lambda p: p.stem)
def test_tls_capture_decodes_to_its_plaintext_twin(path):
    """Every exchange of the plaintext twin, byte for byte, and nothing else; every connection decrypted."""
    exchanges, notices, ends = dissect(path)
    plain = dissect(twin(path))[0]
    assert exchanges and fingerprints(exchanges, False) == fingerprints(plain, False)
    assert codes(notices) <= {"tls.alert"}  # stunnel's decode_error alert after kafka-python's bare FIN
    terminator = manifest_head(path)["tls"]
    for end in ends:
        tls = end.connection.tls
        assert tls is not None and end.tls is not None
        assert tls.version == terminator["versions"][1].replace("TLSv", "TLS ")
        assert tls.secret == ("CLIENT_TRAFFIC_SECRET_0" if tls.version == "TLS 1.3" else "CLIENT_RANDOM")
        if terminator["ciphersuites"]:
            assert tls.cipher_suite == terminator["ciphersuites"]
        else:
            assert tls.cipher_suite == IANA_NAMES[terminator["ciphers"]]
        assert end.tls.decrypted == end.tls.records and end.tls.exchanges_hidden == 0
    assert all(e.connection.tls is not None and e.connection.tls.secret for e in exchanges)


@pytest.mark.parametrize("path", TLS, ids=lambda p: p.stem)
def test_without_keys_every_tls_connection_is_named(path):
    """No key log: nothing decrypts, nothing crashes, and each connection says what it is and what it hides."""
    exchanges, notices, ends = dissect(path, keylog=b"", embedded=False)
    plain = dissect(twin(path))[0]
    assert not exchanges and ends
    assert codes(notices) <= {"tls.no-keys", "tls.alert"} and len([n for n in notices if n.diagnostic.code == "tls.no-keys"]) == len(ends)
    for end in ends:
        assert end.connection.tls.version in ("TLS 1.2", "TLS 1.3") and end.connection.tls.cipher_suite.startswith("TLS_")
        assert end.connection.tls.secret is None and end.tls.decrypted == (0, 0)
    # one request per client write: the estimate is exact for these clients
    assert sum(end.tls.exchanges_hidden for end in ends) == len(plain)


def cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exit:
        main(list(args))
    return exit.value.code


def test_the_commands_name_hidden_tls_connections(capsys):
    path = CAPTURES / "tls13-aes128-kafka-python.pcap"
    assert cli("read", str(path), "-q") == 0
    out = capsys.readouterr().out
    assert "TLS 1.3" in out and "exchanges hidden" in out and "give --tls-keylog" in out and "tls.no-keys" in out
    assert cli("stats", str(path), "-q", "--json") == 0
    assert '"table":"tls"' in capsys.readouterr().out
    assert cli("read", str(path), "-q", "--json", "--all-events", "--tls-keylog", str(path.with_suffix(".keylog"))) == 0
    out = capsys.readouterr().out
    assert '"secret":"CLIENT_TRAFFIC_SECRET_0"' in out and '"exchanges_hidden":0' in out
    secrets = [line.split()[-1] for line in path.with_suffix(".keylog").read_text().splitlines() if not line.startswith("#")]
    assert not any(secret in out for secret in secrets)


def follow(path: Path) -> list[set[bytes]]:
    """Per TCP stream, the two decrypted byte streams tshark's `follow,tls,raw` gives (its own decryption)."""
    count = (
        int(
            subprocess.run([TSHARK, "-r", str(path), "-T", "fields", "-e", "tcp.stream"], capture_output=True, text=True).stdout.split()[-1]
        )
        + 1
    )
    command = [TSHARK, "-r", str(path), "-q"]
    if path.suffix == ".pcap":
        command += ["-o", f"tls.keylog_file:{path.with_suffix('.keylog')}"]
    for stream in range(count):
        command += ["-z", f"follow,tls,raw,{stream}"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    streams = {}
    for block in out.split("Follow: tls,raw")[1:]:
        number = int(re.search(r"tcp.stream eq (\d+)", block).group(1))
        sides = [bytearray(), bytearray()]
        for line in block.splitlines():
            if re.fullmatch(r"\t?[0-9a-f]+", line):
                sides[line.startswith("\t")] += bytes.fromhex(line.strip())
        streams[number] = {bytes(sides[0]), bytes(sides[1])}
    return [streams[i] for i in range(count)]


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed: no independent decryption to compare with")
@pytest.mark.parametrize("path", TLS, ids=lambda p: p.stem)
def test_tshark_decrypts_the_same_bytes(path):
    """tshark, given the same key log (or the pcapng's own secrets), decrypts each connection to the bytes of
    the frames kdissect found there, in order."""
    exchanges, _, ends = dissect(path)
    ours: dict[int, list[bytes]] = {end.connection.id: [b"", b""] for end in ends}
    for side in ("request", "response"):
        frames = sorted(
            ((e.connection.id, getattr(e, side).frame) for e in exchanges if getattr(e, side) is not None),
            key=lambda f: (f[0], f[1].offset),
        )
        for connection, frame in frames:
            ours[connection][side == "response"] += struct.pack(">i", frame.size) + frame.data
    theirs = follow(path)
    assert len(theirs) == len(ours)
    for number, pair in enumerate(theirs):
        assert pair == set(ours[number + 1]), f"TCP stream {number}"


# broken input, made from the real captures


def manifest_head(path: Path) -> dict:
    return json.loads(path.with_name(f"{path.name.split('.')[0]}.manifest.jsonl").read_text().splitlines()[0])


def tls_port(path: Path) -> int:
    return manifest_head(path)["tls"]["port"]


def tcp_of(packet: Packet) -> tuple[int, int, int, int]:
    """(source port, destination port, payload start, sequence number) of an Ethernet/IPv4/TCP packet."""
    ip = 14
    tcp = ip + (packet.data[ip] & 0x0F) * 4
    sport, dport, seq = struct.unpack_from(">HHI", packet.data, tcp)
    return sport, dport, tcp + (packet.data[tcp + 12] >> 4) * 4, seq


def payload_of(packet: Packet) -> bytes:
    return packet.data[tcp_of(packet)[2] :]


def with_payload(packet: Packet, payload: bytes, seq_delta: int = 0) -> Packet:
    """The packet carrying `payload` instead, at its sequence number plus `seq_delta`."""
    start, ip = tcp_of(packet)[2], 14
    data = bytearray(packet.data[:start] + payload)
    struct.pack_into(">H", data, ip + 2, len(data) - ip)
    tcp = ip + (data[ip] & 0x0F) * 4
    struct.pack_into(">I", data, tcp + 4, (tcp_of(packet)[3] + seq_delta) & 0xFFFFFFFF)
    return Packet(packet.ts, packet.linktype, bytes(data), len(data), packet.index, packet.offset)


def after(exchanges: list[Exchange], port: int, correlation_id: int) -> list[tuple]:
    """The exchanges of one connection from a correlation id on, as fingerprints."""
    return fingerprints([e for e in exchanges if e.connection.client.port == port and (e.correlation_id or 0) >= correlation_id])


@pytest.mark.parametrize("name", ["tls13-aes128-kafka-python.pcap", "tls12-aes256gcm-kafka-python.pcap", "tls12-chacha20-aiokafka.pcap"])
def test_a_damaged_record_costs_its_exchange_only(name):
    """One byte changed in the record of a Metadata request: that record fails authentication, the others open."""
    path = CAPTURES / name
    good = dissect(path)[0]
    victim = next(e for e in good if e.api_key == 3)
    index = victim.request.frame.last_packet
    packets = [
        with_payload(p, payload_of(p)[:-3] + bytes([payload_of(p)[-3] ^ 1]) + payload_of(p)[-2:]) if p.index == index else p
        for p in packets_of(path)
    ]
    exchanges, notices, _ = dissect(path, packets=packets)
    assert "tls.bad-record" in codes(notices)
    assert fingerprint(victim) not in fingerprints(exchanges)
    assert set(fingerprints(good)) - set(fingerprints(exchanges)) == {fingerprint(victim)}


@pytest.mark.parametrize("name", ["tls13-aes128-kafka-python.pcap", "tls12-aes128gcm-aiokafka.pcap", "tls12-chacha20-aiokafka.pcap"])
def test_a_segment_lost_mid_record_costs_that_record(name):
    """The largest client segment (the first record of a 20 KB Produce request, the second record follows) is
    cut in three and its middle dropped: that record is lost (its header told its length), the next opens at
    the next sequence number, and the exchanges after it decode as before."""
    path = CAPTURES / name
    good = dissect(path)[0]
    big = max((p for p in packets_of(path) if tcp_of(p)[1] == tls_port(path) and payload_of(p)), key=lambda p: len(payload_of(p)))
    payload = payload_of(big)
    assert len(payload) > 16384 and payload[0] == 23
    cut = [with_payload(big, payload[:1000]), with_payload(big, payload[5000:], 5000)]
    packets = [q for p in packets_of(path) for q in (cut if p.index == big.index else [p])]
    exchanges, notices, _ = dissect(path, packets=packets)
    lost = [n.diagnostic for n in notices if n.diagnostic.code == "tls.record-lost"]
    assert lost and lost[0].message.endswith("(1 record)")
    produce = next(e for e in good if e.request and e.request.frame.first_packet <= big.index <= e.request.frame.last_packet)
    port = produce.connection.client.port
    assert after(exchanges, port, produce.correlation_id + 1) == after(good, port, produce.correlation_id + 1)
    assert set(fingerprints(good)) - set(fingerprints(exchanges)) == {fingerprint(produce)}


@pytest.mark.parametrize("name", ["tls13-aes128-kafka-python.pcap", "tls13-chacha20-kafka-python.pcap", "tls12-chacha20-aiokafka.pcap"])
def test_records_after_a_lost_segment_still_decrypt(name):
    """A whole client segment lost at a record boundary: how many records it held is unknown, yet the records
    after it open at the right sequence number (the reader finds the next record, the sequence is searched)."""
    path = CAPTURES / name
    good = dissect(path)[0]
    victim = next(
        e for e in good if e.api_key == 3 and any(o.connection.id == e.connection.id and o.correlation_id > e.correlation_id for o in good)
    )
    packets = [p for p in packets_of(path) if p.index != victim.request.frame.last_packet]
    exchanges, notices, _ = dissect(path, packets=packets)
    port = victim.connection.client.port
    assert "tls.record-lost" in codes(notices)
    assert after(exchanges, port, victim.correlation_id + 1) == after(good, port, victim.correlation_id + 1)


def test_a_lost_key_update_is_recovered():
    """The client segment carrying a KeyUpdate before a request is lost: the next key is among the candidates
    after a loss, so that request and all after it still open."""
    path = CAPTURES / "tls13-keyupdate-kafka-python.pcap"
    good = dissect(path)[0]
    client = [p for p in packets_of(path) if tcp_of(p)[1] == tls_port(path) and payload_of(p)]
    update = 5 + 5 + 1 + 16  # header, KeyUpdate message, content type, tag
    victim = next(
        p for p, q in zip(client, client[1:]) if len(payload_of(p)) == update and tcp_of(q)[0] == tcp_of(p)[0] and len(payload_of(q)) > 40
    )
    exchanges, notices, _ = dissect(path, packets=[p for p in packets_of(path) if p.index != victim.index])
    assert "tls.record-lost" in codes(notices)
    assert fingerprints(exchanges) == fingerprints(good)  # the KeyUpdate held no Kafka byte: nothing else is lost


@pytest.mark.parametrize("name", ["tls12-aes128gcm-aiokafka.pcap", "tls12-aes256gcm-kafka-python.pcap", "tls12-chacha20-aiokafka.pcap"])
def test_a_tls12_record_shorter_than_its_nonce_and_tag_is_a_damaged_record(name):
    """The record after the client's ChangeCipherSpec (its encrypted Finished) claims 10 bytes, fewer than the
    cipher's explicit nonce and tag: a named damaged record, not an exception; the reader finds the records after
    it, which open at their sequence numbers, so every exchange decodes as before."""
    path = CAPTURES / name
    good = dissect(path)[0]
    change_cipher_spec = b"\x14\x03\x03\x00\x01\x01\x16\x03\x03"
    victim = next(p for p in packets_of(path) if change_cipher_spec in payload_of(p))
    at = payload_of(victim).index(change_cipher_spec) + len(change_cipher_spec)
    payload = payload_of(victim)[:at] + b"\x00\x0a" + payload_of(victim)[at + 2 :]
    exchanges, notices, _ = dissect(path, packets=[with_payload(p, payload) if p.index == victim.index else p for p in packets_of(path)])
    shortest = 16 if "chacha20" in name else 24
    assert [n.diagnostic.message for n in notices if n.diagnostic.code == "tls.bad-record"] == [
        f"a record of 10 bytes is shorter than its cipher's nonce and tag ({shortest} bytes)"
    ]
    assert fingerprints(exchanges) == fingerprints(good)


def test_bytes_made_to_look_like_records_cost_a_bounded_search():
    """After a loss, thousands of plausible record headers that never chain (each claims one byte more than its
    unit holds), then RFC 8448's last server record: the search asks the keys about a few candidates only, so the
    AEAD openings are the same for 1x, 2x and 4x as many, and the headers judged grow with the bytes, not faster;
    the real record after them still opens. Work is counted (calls), not timed."""
    from kdissect.tls.aead import RecordCipher
    from kdissect.tls.records import plausible_header

    unit = b"\x17\x03\x03\x00\x11" + b"\0" * 16
    counted = {RecordCipher.open.__code__: "openings", plausible_header.__code__: "judged"}

    def work(units: int) -> tuple[int, int, int]:
        keys = KeyLog()
        keys.add(rfc.KEYLOG)
        sinks = (Sink(), Sink())
        session = TlsSession(keys, lambda d, ts, i: None, sinks, lambda info: None, set())
        client, server = session.directions
        client.start(False)
        server.start(False)
        client.data(rfc.CLIENT_HELLO, 0, 0)
        server.data(rfc.SERVER_HELLO + rfc.SERVER_FLIGHT + rfc.TICKET, 0, 0)
        server.gap(100, 0)
        stream = unit * units + rfc.SERVER_DATA
        calls = Counter()

        def count(frame, event, arg):
            if event == "call" and frame.f_code in counted:
                calls[counted[frame.f_code]] += 1

        sys.setprofile(count)
        try:
            for at in range(0, len(stream), 100):
                server.data(stream[at : at + 100], 0, 0)
            server.finish()
        finally:
            sys.setprofile(None)
        assert sinks[1].plaintext() == rfc.PAYLOAD
        return calls["openings"], calls["judged"], len(stream)

    figures = [work(units) for units in (1000, 2000, 4000)]
    assert len({openings for openings, _, _ in figures}) == 1, figures
    assert all(judged < 3 * length for _, judged, length in figures), figures


def test_a_capture_that_starts_after_the_handshake():
    """The first connection's packets up to its first request are cut: without its ClientHello no key applies;
    the other connections decrypt as before. (On a port not known to be Kafka's, a TLS connection is only
    recognised by its ClientHello: the port is given.)"""
    path = CAPTURES / "tls13-aes128-kafka-python.pcap"
    good = dissect(path)[0]
    first = good[0]
    cut = {p.index for p in packets_of(path) if p.index < first.request.frame.last_packet}
    packets = [p for p in packets_of(path) if p.index not in cut]
    exchanges, notices, ends = dissect(path, packets=packets, ports=frozenset({tls_port(path)}))
    assert "tls.no-handshake" in codes(notices)
    assert fingerprints(exchanges) == fingerprints([e for e in good if e.connection.id != first.connection.id])
    cut_short = next(end for end in ends if end.mid_stream)
    assert cut_short.tls is not None and cut_short.tls.decrypted == (0, 0) and cut_short.tls.exchanges_hidden
    assert cut_short.connection.tls == TlsInfo(None, None, None, ())  # TLS, though its hellos were not captured
    assert tls_hidden(cut_short.connection.tls, cut_short).endswith("exchanges hidden: its handshake is not in the capture")


def test_keys_that_arrive_after_their_packets():
    """A key log read mid-capture (a pcapng secrets block after the packets it serves), while the connection is
    open: the records held for it open. A key log is in use (another session's secret), so records are held."""
    path = CAPTURES / "tls13-aes128-kafka-python.pcap"
    good = dissect(path)[0]
    dissector = make_dissector(Options(tls_keylog=f"CLIENT_RANDOM {'00' * 32} {'00' * 48}\n".encode()))
    events = []
    late = good[0].response.frame.last_packet
    for packet in packets_of(path):
        if packet.index == late:
            dissector.add_tls_keylog(keylog_of(path))
        events += dissector.feed(packet)
    events += dissector.finish()
    assert fingerprints([e for e in events if isinstance(e, Exchange)]) == fingerprints(good)


def test_a_wrong_key_log_is_named_and_nothing_breaks():
    path = CAPTURES / "tls12-aes128gcm-aiokafka.pcap"
    lines = keylog_of(path).decode().splitlines()
    wrong = "\n".join(line[:-2] + ("00" if line[-2:] != "00" else "11") for line in lines).encode()
    exchanges, notices, ends = dissect(path, keylog=wrong)
    assert not exchanges and codes(notices) <= {"tls.wrong-key", "tls.gave-up"} and "tls.wrong-key" in codes(notices)
    assert all(end.tls.decrypted == (0, 0) for end in ends)


def test_tls_is_told_from_kafka_by_its_first_bytes():
    assert starts_tls(rfc.CLIENT_HELLO, False) and starts_tls(rfc.CLIENT_DATA + rfc.SERVER_DATA, True)
    assert not starts_tls(rfc.CLIENT_DATA, False)  # a stream's first record is a handshake one
    frame = struct.pack(">i", 30) + bytes(30)
    assert not starts_tls(frame, False) and not starts_tls(frame * 3, True)


def test_on_other_ports_a_client_hello_offering_alpn_is_not_kafka():
    """Kafka clients offer no ALPN; browsers and HTTP clients do. RFC 8448's hello offers none."""
    assert kafka_client_hello(rfc.CLIENT_HELLO) is True
    assert kafka_client_hello(rfc.CLIENT_HELLO[:100]) is None
    alpn = b"\x00\x10\x00\x05\x00\x03\x02h2"
    body = rfc.CLIENT_HELLO[9:]
    extensions_at = 2 + 32 + 1 + body[34] + 2
    extensions_at += int.from_bytes(body[extensions_at - 2 : extensions_at], "big")
    extensions_at += 1 + body[extensions_at]
    length = int.from_bytes(body[extensions_at : extensions_at + 2], "big")
    body = body[:extensions_at] + (length + len(alpn)).to_bytes(2, "big") + body[extensions_at + 2 :] + alpn
    hello = b"\x01" + len(body).to_bytes(3, "big") + body
    assert kafka_client_hello(b"\x16\x03\x01" + len(hello).to_bytes(2, "big") + hello) is False


def test_a_live_session_follows_the_key_log_as_clients_write_it(tmp_path):
    """`live --tls-keylog`: whole lines appended after the start go to the dissector; a line still being
    written waits; a file truncated and written anew is read from its start."""
    from kdissect.tls.follow import KeyLogFollower

    log = tmp_path / "keys.log"
    log.write_bytes(b"# start\n")
    added: list[bytes] = []
    follower = KeyLogFollower(log, len(log.read_bytes()), added.append)
    assert added == [b""]  # a key log is in use from the start
    follower.poll()
    with open(log, "ab") as out:
        out.write(b"CLIENT_RANDOM " + b"aa" * 32 + b" " + b"bb" * 48 + b"\nCLIENT_RAN")
    follower.poll()
    assert added[1:] == [b"CLIENT_RANDOM " + b"aa" * 32 + b" " + b"bb" * 48 + b"\n"]
    with open(log, "ab") as out:
        out.write(b"DOM x y\n")
    follower.poll()
    assert added[2] == b"CLIENT_RANDOM x y\n"
    log.write_bytes(b"EXPORTER_SECRET 1 2\n")
    follower.poll()
    assert added[3] == b"EXPORTER_SECRET 1 2\n"


def test_a_lost_server_hello_is_named():
    """The first connection's ServerHello is lost: its suite (and TLS 1.2 random) are unknown, so its records
    stay shut, within the hold bound, and say why; the other connections decrypt as before."""
    path = CAPTURES / "tls12-aes128gcm-aiokafka.pcap"
    good = dissect(path)[0]
    first = good[0].connection
    hello = next(p for p in packets_of(path) if tcp_of(p)[0] == tls_port(path) and tcp_of(p)[1] == first.client.port and payload_of(p))
    assert payload_of(hello)[5] == 2  # a ServerHello
    exchanges, notices, ends = dissect(path, packets=[p for p in packets_of(path) if p.index != hello.index])
    assert "tls.no-server-hello" in codes(notices)
    assert fingerprints(exchanges) == fingerprints([e for e in good if e.connection.id != first.id])
    assert next(end for end in ends if end.connection.id == first.id).tls.decrypted == (0, 0)


@pytest.mark.parametrize("name", ["tls13-aes128-kafka-python.pcap", "tls13-keyupdate-kafka-python.pcap"])
def test_application_secrets_that_come_after_the_handshake_ones(name):
    """A live session's key log: the client writes its handshake secrets, then its application ones a moment
    later, while the first records go by. Those records wait for them: the application secrets added at any
    packet cost nothing more than all the secrets added there, and no record is called damaged or miskeyed."""
    path = CAPTURES / name
    packets = packets_of(path)
    lines = keylog_of(path).splitlines(keepends=True)
    handshake = b"".join(line for line in lines if b"HANDSHAKE" in line)
    application = b"".join(line for line in lines if b"HANDSHAKE" not in line)

    def run(first: bytes, then: bytes, at: int) -> tuple[list[tuple], set[str]]:
        dissector = make_dissector(Options(tls_keylog=first))
        dissector.add_tls_keylog(b"")  # a key log is in use, as `live --tls-keylog` says of one still empty
        events = []
        for i, packet in enumerate(packets):
            if i == at:
                dissector.add_tls_keylog(then)
            events += dissector.feed(packet)
        events += dissector.finish()
        exchanges = [e for e in events if isinstance(e, Exchange)]
        return fingerprints(exchanges), codes([e for e in events if isinstance(e, Notice)])

    everything = fingerprints(dissect(path)[0])
    for at in range(0, len(packets), 3):
        split, found = run(handshake, application, at)
        late = run(b"", handshake + application, at)[0]
        assert set(late) <= set(split) <= set(everything) and not found & {"tls.wrong-key", "tls.bad-record"}, at
    assert run(handshake, application, 12)[0] == everything  # before the first connection's data
