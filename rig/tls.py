"""TLS in front of the broker: stunnel4 terminating TLS and forwarding plaintext to tansu, and the clients' side.

tansu listens in plaintext, so a TLS scenario puts stunnel on the TLS port with a throw-away self-signed
certificate, forwarding each connection to tansu, which advertises the TLS port so that every later
connection (Metadata, FindCoordinator) comes back through TLS. stunnel's `sslVersionMin/Max`, `ciphers` (TLS
1.2) and `ciphersuites` (TLS 1.3) pick what is negotiated. Clients write NSS key logs through
`ssl.SSLContext.keylog_filename`.

Only the stunnel process started here is ever signalled (by PID).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from rig.broker import BrokerError, wait_for_port


@dataclass(frozen=True)
class TlsSpec:
    """What the terminator offers: the versions and one cipher (suite) to force."""

    version_min: str = "TLSv1.2"
    version_max: str = "TLSv1.3"
    ciphers: Optional[str] = None
    """OpenSSL cipher list for TLS 1.2, e.g. ECDHE-RSA-CHACHA20-POLY1305."""
    ciphersuites: Optional[str] = None
    """TLS 1.3 suites, e.g. TLS_AES_256_GCM_SHA384."""
    inject_secrets: bool = False
    """Also write NAME.pcapng with the key log embedded (editcap --inject-secrets), and keep that instead."""
    key_updates: bool = False
    """Clients reach TLS through `KeyUpdateRelay` (openssl s_client updating its keys between exchanges)."""


def stunnel_version() -> str:
    binary = shutil.which("stunnel4") or shutil.which("stunnel")
    if binary is None:
        return "stunnel (not installed)"
    out = subprocess.run([binary, "-version"], capture_output=True, text=True).stderr
    line = next((ln for ln in out.splitlines() if ln.startswith("stunnel ")), "stunnel ?")
    return " ".join(line.split()[:2])


def _certificate(folder: Path) -> Path:
    """A throw-away self-signed RSA certificate and key in one PEM file."""
    pem = folder / "broker.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=kdrig-broker",
            "-keyout",
            str(pem),
            "-out",
            str(folder / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )
    with open(pem, "a") as out:
        out.write((folder / "cert.pem").read_text())
    return pem


@contextlib.contextmanager
def stunnel(accept_port: int, connect_port: int, spec: TlsSpec, host: str = "127.0.0.1") -> Iterator[int]:
    """Run stunnel on `accept_port` forwarding to `connect_port` for the duration of a ``with``; yields its PID."""
    binary = shutil.which("stunnel4") or shutil.which("stunnel")
    if binary is None:
        raise BrokerError("stunnel is not installed (apt-get install stunnel4)")
    with tempfile.TemporaryDirectory(prefix="kdrig-stunnel-") as folder:
        work = Path(folder)
        lines = [
            "foreground = yes",
            f"pid = {work / 'stunnel.pid'}",
            "debug = 4",
            f"output = {work / 'stunnel.log'}",
            "[kafka]",
            f"accept = {host}:{accept_port}",
            f"connect = {host}:{connect_port}",
            f"cert = {_certificate(work)}",
            f"sslVersionMin = {spec.version_min}",
            f"sslVersionMax = {spec.version_max}",
        ]
        if spec.ciphers:
            lines.append(f"ciphers = {spec.ciphers}")
        if spec.ciphersuites:
            lines.append(f"ciphersuites = {spec.ciphersuites}")
        config = work / "stunnel.conf"
        config.write_text("\n".join(lines) + "\n")
        proc = subprocess.Popen([binary, str(config)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            try:
                wait_for_port(host, accept_port, timeout=10, proc=proc)
            except BrokerError as exc:
                log = work / "stunnel.log"
                raise BrokerError(f"stunnel: {exc}: {log.read_text()[-2000:] if log.exists() else ''}") from None
            yield proc.pid
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)


def client_context(keylog: str) -> ssl.SSLContext:
    """A client context that trusts the throw-away certificate and writes every session's secrets to `keylog`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.keylog_filename = keylog
    return context


def inject_secrets(pcap: Path, keylog: Path, out: Path) -> None:
    """Write `out`, a pcapng of `pcap` with the key log in a Decryption Secrets Block (Wireshark's editcap)."""
    binary = shutil.which("editcap")
    if binary is None:
        raise BrokerError("editcap is not installed (apt-get install wireshark-common, or tshark)")
    subprocess.run([binary, "--inject-secrets", f"tls,{keylog}", str(pcap), str(out)], check=True, capture_output=True)


class KeyUpdateRelay:
    """A TLS 1.3 client that updates its keys between exchanges: kafka-python connects in plaintext to this
    relay, which carries each connection through its own `openssl s_client` to the TLS port and, whenever every
    request so far is answered, types s_client's `K` command (KeyUpdate, asking the peer to update too) or `k`
    (this side only), alternately. s_client writes the key log (-keylogfile).

    A command letter only counts at the start of what s_client reads from its input, so it is sent when the
    connection is idle and nothing else is written for a moment after it.
    """

    PAUSE = 0.05

    def __init__(self, listen_port: int, tls_port: int, keylog: str, ciphersuites: str) -> None:
        self.listen_port, self.tls_port, self.keylog, self.ciphersuites = listen_port, tls_port, keylog, ciphersuites
        self.server = socket.create_server(("127.0.0.1", listen_port))
        self.threads: list[threading.Thread] = []
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> KeyUpdateRelay:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()
        for thread in list(self.threads):
            thread.join(10)
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(5)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            proc = subprocess.Popen(
                [
                    "openssl",
                    "s_client",
                    "-connect",
                    f"127.0.0.1:{self.tls_port}",
                    "-tls1_3",
                    "-ciphersuites",
                    self.ciphersuites,
                    "-quiet",
                    "-no_ign_eof",
                    "-keylogfile",
                    self.keylog,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,
            )
            self.procs.append(proc)
            state = {"outstanding": 0, "updates": 0, "lock": threading.Lock()}
            for target in (self._requests, self._responses):
                thread = threading.Thread(target=target, args=(conn, proc, state), daemon=True)
                self.threads.append(thread)
                thread.start()

    def _requests(self, conn: socket.socket, proc: subprocess.Popen, state: dict) -> None:
        assert proc.stdin is not None
        buffer = b""
        while True:
            data = conn.recv(65536)
            if not data:
                break
            buffer += data
            while len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
                size = 4 + int.from_bytes(buffer[:4], "big")
                with state["lock"]:
                    proc.stdin.write(buffer[:size])
                    state["outstanding"] += 1
                buffer = buffer[size:]
        with contextlib.suppress(OSError):
            proc.stdin.close()

    def _responses(self, conn: socket.socket, proc: subprocess.Popen, state: dict) -> None:
        assert proc.stdout is not None and proc.stdin is not None
        buffer = b""
        while True:
            data = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(65536)
            if not data:
                break
            buffer += data
            while len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
                size = 4 + int.from_bytes(buffer[:4], "big")
                with contextlib.suppress(OSError):
                    conn.sendall(buffer[:size])
                buffer = buffer[size:]
                with state["lock"]:
                    state["outstanding"] -= 1
                    if state["outstanding"] == 0:
                        with contextlib.suppress(OSError, ValueError):  # the client may have closed meanwhile
                            proc.stdin.write(b"K\n" if state["updates"] % 2 == 0 else b"k\n")
                        state["updates"] += 1
                        time.sleep(self.PAUSE)
        with contextlib.suppress(OSError):
            conn.close()
