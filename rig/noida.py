"""Start and stop a throw-away noida-db, a second Kafka-compatible broker (PyPI `noida-db`, a static binary speaking
Kafka 3.8-like versions among other protocols).

It behaves unlike tansu where the doctor needs it: it answers a Fetch at once whatever MaxWaitMs says
(../shared/rig-notes.md). Only its Kafka service is started, with its data in a temporary folder removed afterwards.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

from rig.broker import Broker, BrokerError, _stop, wait_for_port


def find_noida() -> str:
    """The binary inside the installed noida_db package (its `noida-db` script only starts it)."""
    spec = importlib.util.find_spec("noida_db")
    for location in spec.submodule_search_locations if spec and spec.submodule_search_locations else ():
        candidate = Path(location) / "noida-db"
        if candidate.is_file():
            candidate.chmod(candidate.stat().st_mode | 0o111)
            return str(candidate)
    raise BrokerError("no noida-db binary: pip install noida-db (rig/requirements.txt)")


def noida_version(binary: str) -> str:
    """E.g. ``"noida-db 0.2.3"``."""
    return subprocess.run([binary, "version"], capture_output=True, text=True, timeout=10).stdout.strip()


@contextlib.contextmanager
def running_noida(host: str, port: int) -> Iterator[Broker]:
    """noida-db's Kafka service on host:port for the duration of a ``with``; stopped by PID."""
    binary = find_noida()
    data = tempfile.mkdtemp(prefix="kdrig-noida-")
    log_path = str(Path(data) / "noida.log")
    command = [binary, "start", "--data-dir", data, "--host", host, "--only", "kafka", "--kafka-port", str(port)]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(host, port, proc=proc)
        yield Broker(host=host, port=port, pid=proc.pid, binary=binary, version=noida_version(binary), netns=None, log_path=log_path)
    finally:
        _stop(proc)
        shutil.rmtree(data, ignore_errors=True)
