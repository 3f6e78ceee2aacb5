"""A broker host and two client hosts, each a private network namespace, joined by veth pairs to a bridge on the
broker host: the smallest network where one connection can be captured on both of its ends.

    kdrig-h1-PID (10.213.8.2) --veth-- \\
                                       kdrig-br (10.213.8.1), in kdrig-hb-PID: the broker
    kdrig-h2-PID (10.213.8.3) --veth-- /

Each client host captures on its own veth end, the broker host on its bridge: every connection is seen twice, by
its client's host and by the broker's, each with its own tcpdump stamping the packets. MTU 1500, offloads off (as in
rig/netns.py). All addresses exist only inside the namespaces; the host's network is not touched. Needs root.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Iterator

SUBNET = "10.213.8"


@dataclass(frozen=True)
class Hosts:
    broker_ns: str
    bridge: str
    broker_ip: str
    client_ns: tuple[str, ...]
    client_if: tuple[str, ...]
    client_ip: tuple[str, ...]


def _run(*args: str, ns: str | None = None) -> None:
    command = ["ip", "netns", "exec", ns, *args] if ns else list(args)
    subprocess.run(command, check=True, capture_output=True, text=True)


@contextlib.contextmanager
def two_client_hosts(mtu: int = 1500, tag: str | None = None) -> Iterator[Hosts]:
    """Make the three namespaces and their links; delete the namespaces afterwards (their links go with them)."""
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed (apt-get install iproute2 ethtool)")
    tag = tag or str(os.getpid())
    hosts = Hosts(
        broker_ns=f"kdrig-hb-{tag}",
        bridge="kdrig-br",
        broker_ip=f"{SUBNET}.1",
        client_ns=(f"kdrig-h1-{tag}", f"kdrig-h2-{tag}"),
        client_if=("kdrig-h1", "kdrig-h2"),
        client_ip=(f"{SUBNET}.2", f"{SUBNET}.3"),
    )
    created: list[str] = []
    try:
        for ns in (hosts.broker_ns, *hosts.client_ns):
            _run("ip", "netns", "add", ns)
            created.append(ns)
            _run("ip", "link", "set", "lo", "up", ns=ns)
        _run("ip", "link", "add", hosts.bridge, "type", "bridge", ns=hosts.broker_ns)
        _run("ip", "addr", "add", f"{hosts.broker_ip}/24", "dev", hosts.bridge, ns=hosts.broker_ns)
        _run("ip", "link", "set", hosts.bridge, "mtu", str(mtu), "up", ns=hosts.broker_ns)
        for n, (ns, iface, addr) in enumerate(zip(hosts.client_ns, hosts.client_if, hosts.client_ip), start=1):
            port = f"kdrig-bp{n}"
            _run(
                "ip",
                "link",
                "add",
                "name",
                port,
                "netns",
                hosts.broker_ns,
                "mtu",
                str(mtu),
                "type",
                "veth",
                "peer",
                "name",
                iface,
                "netns",
                ns,
                "mtu",
                str(mtu),
            )
            _run("ip", "link", "set", port, "master", hosts.bridge, "up", ns=hosts.broker_ns)
            _run("ip", "addr", "add", f"{addr}/24", "dev", iface, ns=ns)
            _run("ip", "link", "set", iface, "up", ns=ns)
            for where, device in ((ns, iface), (hosts.broker_ns, port)):
                # MTU-sized segments with their real checksums, not 64 KiB "super-segments" (rig/netns.py)
                _run("ethtool", "-K", device, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off", ns=where)
        yield hosts
    finally:
        for ns in reversed(created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
