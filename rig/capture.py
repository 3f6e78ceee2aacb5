"""Record traffic with tcpdump while a ``with`` block runs.

Three details matter for small, complete captures:

* ``--immediate-mode``: without it libpcap buffers packets and a short capture
  can end before the buffer is handed over, losing the packets; with it, a
  large ring (``-B``) so that bursts do not overflow it;
* wait until tcpdump says it is listening before any traffic starts;
* stop it with SIGINT (by PID) so that it flushes the file, then check its own
  count of packets dropped by the kernel.
"""

from __future__ import annotations

import contextlib
import getpass
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator, Optional

__all__ = ["CaptureError", "CaptureStats", "tcpdump", "tcpdump_version"]


class CaptureError(RuntimeError):
    """tcpdump is missing, did not start, or lost packets."""


@dataclass
class CaptureStats:
    """tcpdump's closing counts, filled in when the ``with`` block ends."""

    captured: int = -1
    dropped_by_kernel: int = -1
    stderr: list = field(default_factory=list)


def tcpdump_version() -> str:
    """E.g. ``"tcpdump 4.99.3 (libpcap 1.10.3)"``, for the manifest."""
    binary = shutil.which("tcpdump")
    if binary is None:
        return "tcpdump (not installed)"
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    tool = re.search(r"tcpdump version (\S+)", out)
    lib = re.search(r"libpcap version (\S+)", out)
    return f"tcpdump {tool.group(1) if tool else '?'} (libpcap {lib.group(1) if lib else '?'})"


@contextlib.contextmanager
def tcpdump(
    path: str,
    interface: str,
    bpf: str,
    *,
    netns: Optional[str] = None,
    nano: bool = False,
    timeout: float = 10.0,
) -> Iterator[CaptureStats]:
    """Capture *interface* filtered by *bpf* into the pcap file *path*.

    *netns* runs tcpdump inside that network namespace. *nano* asks for
    nanosecond timestamps (a different pcap magic number, useful to readers).
    """
    binary = shutil.which("tcpdump")
    if binary is None:
        raise CaptureError("tcpdump is not installed (apt-get install tcpdump)")
    command = [
        binary,
        "-i",
        interface,
        "-s",
        "0",
        "--immediate-mode",
        # In immediate mode libpcap's ring has one slot per packet, each as large as the
        # snaplen (256 KiB with -s 0 on "any"), so the default 2 MiB ring holds ~8 packets
        # and a burst overflows it. 64 MiB holds hundreds.
        "-B",
        "65536",
        "-U",  # write each packet out as it arrives
        "-n",
        "-Z",
        getpass.getuser(),  # keep the file owned by whoever runs the rig
        "-w",
        path,
    ]
    if nano:
        command += ["--time-stamp-precision", "nano"]
    command.append(bpf)
    if netns is not None:
        command = ["ip", "netns", "exec", netns, *command]

    stats = CaptureStats()
    listening = threading.Event()
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    def read_stderr() -> None:
        # tcpdump prints "listening on IFACE, link-type ..." once the capture
        # handle is active and the filter installed.
        for line in proc.stderr:
            stats.stderr.append(line.rstrip("\n"))
            if "listening on" in line:
                listening.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while not listening.wait(0.05):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            reader.join(2)
            raise CaptureError("tcpdump did not start: " + " | ".join(stats.stderr))
    # The handle is live; a short pause lets the kernel socket settle.
    time.sleep(0.2)

    try:
        yield stats
    finally:
        time.sleep(0.3)  # let the last packets (FIN/ACK) reach the socket
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(2)
        text = "\n".join(stats.stderr)
        found = re.search(r"(\d+) packets? captured", text)
        if found:
            stats.captured = int(found.group(1))
        found = re.search(r"(\d+) packets? dropped by kernel", text)
        if found:
            stats.dropped_by_kernel = int(found.group(1))
    if stats.dropped_by_kernel > 0:
        raise CaptureError(f"tcpdump: {stats.dropped_by_kernel} packets dropped by kernel ({path})")
