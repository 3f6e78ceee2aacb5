"""Recorded captures played back onto a veth pair inside a private network namespace, for `kdissect live` to capture:
the tap's Prometheus test, its soak and the live capture benchmark (tests/test_metrics_live.py,
benchmarks/soak_metrics.py, benchmarks/bench_live.py).

One namespace holds both ends of the pair (`kdrp-s`, which tcpreplay sends on, and `kdrp-c`, which is captured), with
no address on either: the packets keep the addresses they were recorded with, reach no socket and get no answer, and
nothing leaves the namespace. The MTU is the veth's largest (65535) so that loopback captures, whose segments are
up to 64 KiB, go through whole; offloads are off so that the capture sees the packets as they were sent. Processes
that must see the pair (kdissect live, tcpdump, a Prometheus that scrapes kdissect on the namespace's loopback) run
inside it with `inside(ns, argv)`. The namespace is deleted at the end, even after a failure. Needs root, iproute2,
ethtool and tcpreplay (Debian: apt-get install iproute2 ethtool tcpreplay).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

SEND = "kdrp-s"
CAPTURE = "kdrp-c"
MTU = 65535


@dataclass(frozen=True)
class ReplayNs:
    name: str
    send: str
    """The interface tcpreplay writes to."""
    capture: str
    """Its peer, where the packets arrive: what kdissect captures."""


def missing() -> str | None:
    """What this machine lacks to replay (None when nothing): a test skips with it."""
    if os.geteuid() != 0:
        return "replaying onto a veth needs root"
    for tool in ("ip", "ethtool", "tcpreplay"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 ethtool tcpreplay)"
    return None


def inside(ns: str, argv: Sequence[str]) -> list[str]:
    """`argv` run inside the namespace."""
    return ["ip", "netns", "exec", ns, *argv]


def _run(argv: Sequence[str]) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, text=True)


@contextlib.contextmanager
def replay_ns(tag: str | None = None) -> Iterator[ReplayNs]:
    ns = ReplayNs(f"kdrp-{tag or os.getpid()}", SEND, CAPTURE)
    _run(["ip", "netns", "add", ns.name])
    try:
        _run(inside(ns.name, ["ip", "link", "add", ns.send, "mtu", str(MTU), "type", "veth", "peer", "name", ns.capture, "mtu", str(MTU)]))
        for iface in ("lo", ns.send, ns.capture):
            _run(inside(ns.name, ["ip", "link", "set", iface, "up"]))
        for iface in (ns.send, ns.capture):
            _run(inside(ns.name, ["ethtool", "-K", iface, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off"]))
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns.name], capture_output=True)


def tcpreplay(ns: ReplayNs, pcaps: Sequence[str], *speed: str, loops: int = 1, unique: bool = False) -> subprocess.CompletedProcess:
    """Play `pcaps` onto the pair, at their recorded pace unless `speed` says otherwise (`--topspeed`, `--pps=N`,
    `--mbps=N`, `--multiplier=N`); `loops` times, each with new addresses when `unique` (so that a loop's connections
    are new ones, not the last loop's again). Waits until it is done; tcpreplay's report is in its stdout."""
    argv = ["tcpreplay", "--intf1", ns.send, "--preload-pcap", "--no-flow-stats", *speed]
    if loops > 1:
        argv += [f"--loop={loops}"] + (["--unique-ip"] if unique else [])
    return subprocess.run(inside(ns.name, [*argv, *pcaps]), check=True, capture_output=True, text=True)
