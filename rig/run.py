"""Run one scenario end to end: broker, tcpdump, workload, checks.

The workload always runs in a child Python process (``python -m rig workload``):
so that it can be started inside a network namespace with ``ip netns exec``, and
so that client libraries' background threads and finalizers of one scenario
cannot leak into the next.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from rig import clients, pcapinfo
from rig.broker import free_port, port_is_free, running_broker
from rig.capture import tcpdump, tcpdump_version
from rig.manifest import Manifest, dec
from rig.netns import netns_pair
from rig.relay import RELAY_HOST, running_relay
from rig.scenarios import Scenario

REPO = Path(__file__).resolve().parent.parent
CAPTURES = REPO / "captures"
DEFAULT_PORT = 9092


class CheckFailed(RuntimeError):
    pass


def run_scenario(sc: Scenario, out_dir: Path = CAPTURES, port: int = DEFAULT_PORT, verbose: bool = True) -> pcapinfo.Summary:
    out_dir.mkdir(parents=True, exist_ok=True)
    pcap = out_dir / f"{sc.name}.pcap"
    manifest_path = out_dir / f"{sc.name}.manifest.jsonl"
    for path in (pcap, manifest_path):
        if path.exists():
            path.unlink()
    manifest = Manifest(str(manifest_path))

    with contextlib.ExitStack() as stack:
        if sc.netns:
            pair = stack.enter_context(netns_pair(mtu=1500))
            broker = stack.enter_context(running_broker(pair.broker_ip, port, netns=pair.broker_ns))
            capture_ns, interface, mtu = pair.client_ns, pair.client_if, pair.mtu
            client_ns = pair.client_ns
        else:
            if not port_is_free("127.0.0.1", port):
                port = free_port()
            if sc.relay is not None:  # the clients see the relay's address; the broker's own leg is not captured
                broker = stack.enter_context(running_broker("127.0.0.1", port, advertised_host=RELAY_HOST))
                stack.enter_context(running_relay(port, "127.0.0.1", sc.relay))
            else:
                broker = stack.enter_context(running_broker("127.0.0.1", port))
            capture_ns, interface, client_ns = None, sc.interface, None
            mtu = int(Path("/sys/class/net/lo/mtu").read_text()) if interface == "lo" else None

        manifest.write(
            "capture",
            scenario=sc.name,
            title=sc.title,
            file=pcap.name,
            broker={"software": "tansu", "version": broker.version, "host": broker.host, "port": broker.port, "storage": "memory"},
            clients=clients.all_client_versions(),
            interface=interface,
            link_type=None,  # filled in from the pcap afterwards
            mtu=mtu,
            netns=sc.netns,
            **({"relay": f"{RELAY_HOST}:{broker.port}, holding chosen responses (rig/relay.py)"} if sc.relay is not None else {}),
            timestamp_precision="ns" if sc.nano else "us",
            snaplen=0,
            capture_tool=tcpdump_version(),
            date=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
            command=f"python -m rig {sc.name}",
        )
        expression = f"tcp port {broker.port}" + (f" and host {RELAY_HOST}" if sc.relay is not None else "")
        stats = stack.enter_context(tcpdump(str(pcap), interface, expression, netns=capture_ns, nano=sc.nano))
        _run_workload(sc, broker.bootstrap, manifest_path, client_ns, verbose)
    _fix_link_type(manifest_path, pcap)
    if verbose:
        print(f"  tcpdump: {stats.captured} packets captured, {stats.dropped_by_kernel} dropped")
    summary = check(sc, pcap, manifest_path, broker.port)
    if verbose:
        print(f"  {pcap.name}: {pcap.stat().st_size} bytes; {summary.api_table()}")
    return summary


def _fix_link_type(manifest_path: Path, pcap: Path) -> None:
    """Write the link type tcpdump really used (read from the pcap) into the capture line."""
    lines = Manifest(str(manifest_path)).read()
    linktype = pcapinfo.read_pcap(str(pcap)).linktype
    lines[0]["link_type"] = pcapinfo.LINK_NAMES.get(linktype, str(linktype))
    with open(manifest_path, "w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


def _run_workload(sc: Scenario, bootstrap: str, manifest_path: Path, netns: str | None, verbose: bool) -> None:
    command = [sys.executable, "-m", "rig", "workload", sc.name, "--bootstrap", bootstrap, "--manifest", str(manifest_path)]
    if netns is not None:
        command = ["ip", "netns", "exec", netns, *command]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run(command, cwd=REPO, env=env, timeout=600)
    if result.returncode != 0:
        raise CheckFailed(f"{sc.name}: workload exited with status {result.returncode}")


def check(sc: Scenario, pcap: Path, manifest_path: Path, port: int) -> pcapinfo.Summary:
    """The capture is whole and agrees with the manifest, or CheckFailed."""
    summary = pcapinfo.summarize(str(pcap), port)
    problems = []
    if summary.gaps:
        problems.append(f"{summary.gaps} TCP sequence gaps (lost packets)")
    if summary.unanswered:
        problems.append("unanswered requests: " + ", ".join(f"{pcapinfo.api_name(k)} v{v} corr {c}" for k, v, c in summary.unanswered))
    seen = {key for key, _ in summary.requests}
    missing = sorted(set(sc.expect_apis) - seen)
    if missing:
        problems.append("expected APIs not seen: " + ", ".join(pcapinfo.api_name(k) for k in missing))
    lines = Manifest(str(manifest_path)).read()
    if not lines or lines[0].get("kind") != "capture":
        problems.append("manifest does not start with a capture line")
    codec_at = {
        (ln["topic"], ln["partition"], ln["offset"]): ln.get("codec")
        for ln in lines
        if ln["kind"] == "produced" and ln.get("offset") is not None
    }
    for line in lines:
        if line["kind"] not in ("produced", "consumed"):
            continue
        value = dec(line.get("value"))
        if not value or len(value) < 4:
            continue
        if line["kind"] == "produced":
            if line.get("error") and line.get("offset") is None:
                continue  # a failed send may never have left the client (a topic that does not exist)
            if line.get("codec") == "none" and value not in summary.request_stream:
                problems.append(f"produced value not found in requests: {value[:40]!r}")
        elif codec_at.get((line["topic"], line["partition"], line["offset"])) == "none":
            if value not in summary.response_stream:
                problems.append(f"consumed value not found in responses: {value[:40]!r}")
    if problems:
        raise CheckFailed(f"{pcap.name}: " + "; ".join(problems))
    return summary
