"""Two private network namespaces joined by a veth pair with a real MTU.

Loopback has an MTU of 64 KiB, so a Kafka frame rarely spans more than a couple
of TCP segments there. Between two namespaces joined by a veth pair with MTU
1500, and with segmentation offloads turned off, the capture shows what a wire
shows: 1448-byte segments, so a large produce or fetch spans hundreds of them.

All addresses live only inside the two namespaces made here; the host's own
network is not touched. Needs root (``ip netns``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Iterator

__all__ = ["NetnsPair", "netns_pair"]

SUBNET_PREFIX = "10.213.7"  # a /24 that exists only inside the namespaces below


@dataclass(frozen=True)
class NetnsPair:
    """Names and addresses of the two ends."""

    broker_ns: str
    client_ns: str
    broker_if: str
    client_if: str
    broker_ip: str
    client_ip: str
    mtu: int


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _in_ns(ns: str, *args: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, *args], check=True, capture_output=True, text=True)


@contextlib.contextmanager
def netns_pair(mtu: int = 1500, tag: str | None = None) -> Iterator[NetnsPair]:
    """Create the namespaces and veth pair; delete both namespaces afterwards.

    Deleting a namespace deletes the veth end inside it, and with it the peer.
    """
    if shutil.which("ip") is None:
        raise RuntimeError("iproute2 is not installed (apt-get install iproute2)")
    tag = tag or str(os.getpid())
    pair = NetnsPair(
        broker_ns=f"kdrig-b-{tag}",
        client_ns=f"kdrig-c-{tag}",
        broker_if="kdrig-b",
        client_if="kdrig-c",
        broker_ip=f"{SUBNET_PREFIX}.1",
        client_ip=f"{SUBNET_PREFIX}.2",
        mtu=mtu,
    )
    created: list[str] = []
    try:
        for ns in (pair.broker_ns, pair.client_ns):
            _ip("netns", "add", ns)
            created.append(ns)
        _ip(
            "link",
            "add",
            "name",
            pair.broker_if,
            "netns",
            pair.broker_ns,
            "mtu",
            str(mtu),
            "type",
            "veth",
            "peer",
            "name",
            pair.client_if,
            "netns",
            pair.client_ns,
            "mtu",
            str(mtu),
        )
        for ns, iface, addr in (
            (pair.broker_ns, pair.broker_if, pair.broker_ip),
            (pair.client_ns, pair.client_if, pair.client_ip),
        ):
            _in_ns(ns, "ip", "link", "set", "lo", "up")
            _in_ns(ns, "ip", "addr", "add", f"{addr}/24", "dev", iface)
            _in_ns(ns, "ip", "link", "set", iface, "up")
            if shutil.which("ethtool"):
                # Without this the kernel hands tcpdump 64 KiB "segments" (TSO/GSO)
                # and the capture no longer shows MTU-sized frames. Checksum offload
                # off too, so the captured checksums are the real ones.
                _in_ns(ns, "ethtool", "-K", iface, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off")
            else:
                raise RuntimeError("ethtool is not installed (apt-get install ethtool)")
        yield pair
    finally:
        for ns in reversed(created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
