"""Run one scenario end to end: broker, tcpdump, workload, checks.

The workload always runs in a child Python process (``python -m rig workload``):
so that it can be started inside a network namespace with ``ip netns exec``, and
so that client libraries' background threads and finalizers of one scenario
cannot leak into the next.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

from rig import clients, pcapinfo
from rig.broker import free_port, port_is_free, running_broker
from rig.capture import tcpdump, tcpdump_version
from rig.manifest import Manifest, dec, dumps
from rig.netns import netns_pair
from rig.noida import running_noida
from rig.registry import IMPLEMENTS, SOFTWARE, running_registry
from rig.relay import RELAY_HOST, running_relay
from rig.scenarios import Scenario
from rig.tls import KeyUpdateRelay, inject_secrets, stunnel, stunnel_version

REPO = Path(__file__).resolve().parent.parent
CAPTURES = REPO / "captures"
DEFAULT_PORT = 9092
REGISTRY_PORT = 8081
"""Where a schema registry listens by default, and the stand-in when it is free."""


class CheckFailed(RuntimeError):
    pass


def capture_path(sc: Scenario, out_dir: Path = CAPTURES) -> Path:
    """The scenario's capture: NAME.pcap, or NAME.pcapng when its TLS secrets are embedded."""
    return out_dir / f"{sc.name}.pcapng" if sc.tls and sc.tls.inject_secrets else out_dir / f"{sc.name}.pcap"


def twin_path(sc: Scenario, out_dir: Path = CAPTURES) -> Path:
    """A TLS scenario's plaintext twin: the same connections between stunnel and the broker."""
    return out_dir / f"{sc.name}-plain.pcap"


def run_scenario(sc: Scenario, out_dir: Path = CAPTURES, port: int = DEFAULT_PORT, verbose: bool = True) -> pcapinfo.Summary:
    if sc.tls:
        return run_tls_scenario(sc, out_dir, port, verbose)
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
            elif sc.broker == "noida-db":
                broker = stack.enter_context(running_noida("127.0.0.1", port))
            else:
                broker = stack.enter_context(running_broker("127.0.0.1", port))
            capture_ns, interface, client_ns = None, sc.interface, None
            mtu = int(Path("/sys/class/net/lo/mtu").read_text()) if interface == "lo" else None
        registry = (
            stack.enter_context(
                running_registry(REGISTRY_PORT if port_is_free("127.0.0.1", REGISTRY_PORT) else free_port(), broker.bootstrap, manifest)
            )
            if sc.registry
            else None
        )

        manifest.write(
            "capture",
            scenario=sc.name,
            title=sc.title,
            file=pcap.name,
            broker={
                "software": sc.broker,
                "version": broker.version,
                "host": broker.host,
                "port": broker.port,
                "storage": "memory" if sc.broker == "tansu" else "a temporary data folder",
            },
            clients=clients.all_client_versions(),
            interface=interface,
            link_type=None,  # filled in from the pcap afterwards
            mtu=mtu,
            netns=sc.netns,
            **({"relay": f"{RELAY_HOST}:{broker.port}, holding chosen responses (rig/relay.py)"} if sc.relay is not None else {}),
            **({"schema_registry": {"software": SOFTWARE, "url": registry, "implements": list(IMPLEMENTS)}} if registry else {}),
            timestamp_precision="ns" if sc.nano else "us",
            snaplen=0,
            capture_tool=tcpdump_version(),
            date=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
            command=f"python -m rig {sc.name}",
        )
        expression = f"tcp port {broker.port}" + (f" and host {RELAY_HOST}" if sc.relay is not None else "")
        if registry:
            expression += f" or tcp port {registry.rsplit(':', 1)[1]}"
        stats = stack.enter_context(tcpdump(str(pcap), interface, expression, netns=capture_ns, nano=sc.nano))
        _run_workload(sc, broker.bootstrap, manifest_path, client_ns, verbose, registry=registry)
    _fix_link_type(manifest_path, pcap)
    if sc.wire_counts is not None:
        counts = sc.wire_counts(pcapinfo.summarize(str(pcap), broker.port))
        manifest.write("counted", source="the capture, read by rig/pcapinfo.py", **counts)
    if verbose:
        print(f"  tcpdump: {stats.captured} packets captured, {stats.dropped_by_kernel} dropped")
    summary = check(sc, pcap, manifest_path, broker.port)
    if verbose:
        print(f"  {pcap.name}: {pcap.stat().st_size} bytes; {summary.api_table()}")
    return summary


def run_tls_scenario(sc: Scenario, out_dir: Path, port: int, verbose: bool) -> pcapinfo.Summary:
    """Clients speak TLS to stunnel on port+1, which forwards to tansu on port; both sides are captured at once:
    NAME.pcap (TLS, with NAME.keylog) and its plaintext twin NAME-plain.pcap, each with its manifest."""
    assert sc.tls is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    pcap, plain, keylog = out_dir / f"{sc.name}.pcap", twin_path(sc, out_dir), out_dir / f"{sc.name}.keylog"
    manifest_path, plain_manifest = out_dir / f"{sc.name}.manifest.jsonl", plain.with_suffix(".manifest.jsonl")
    for path in (pcap, plain, keylog, manifest_path, plain_manifest, capture_path(sc, out_dir)):
        if path.exists():
            path.unlink()
    while not all(port_is_free("127.0.0.1", p) for p in (port, port + 1, port + 2)):
        port = free_port()
    tls_port = port + 1
    entry = tls_port + 1 if sc.tls.key_updates else tls_port
    """Where clients connect: stunnel, or the relay that carries them through openssl s_client to it."""
    manifest = Manifest(str(manifest_path))
    with contextlib.ExitStack() as stack:
        broker = stack.enter_context(running_broker("127.0.0.1", port, advertised_port=entry))
        stack.enter_context(stunnel(tls_port, port, sc.tls))
        if sc.tls.key_updates:
            assert sc.tls.ciphersuites is not None
            stack.enter_context(KeyUpdateRelay(entry, tls_port, str(keylog), sc.tls.ciphersuites))
        manifest.write(
            "capture",
            scenario=sc.name,
            title=sc.title,
            file=capture_path(sc, out_dir).name,
            broker={"software": "tansu", "version": broker.version, "host": broker.host, "port": broker.port, "storage": "memory"},
            tls={
                "terminator": stunnel_version(),
                "client_side": "openssl s_client relay, KeyUpdate after every answered request" if sc.tls.key_updates else None,
                "port": tls_port,
                "versions": [sc.tls.version_min, sc.tls.version_max],
                "ciphers": sc.tls.ciphers,
                "ciphersuites": sc.tls.ciphersuites,
                "keylog": None if sc.tls.inject_secrets else keylog.name,
                "plaintext_twin": plain.name,
            },
            clients=clients.all_client_versions(),
            interface="lo",
            link_type=None,
            mtu=int(Path("/sys/class/net/lo/mtu").read_text()),
            netns=False,
            timestamp_precision="us",
            snaplen=0,
            capture_tool=tcpdump_version(),
            date=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
            command=f"python -m rig {sc.name}",
        )
        tls_stats = stack.enter_context(tcpdump(str(pcap), "lo", f"tcp port {tls_port}"))
        plain_stats = stack.enter_context(tcpdump(str(plain), "lo", f"tcp port {port}"))
        _run_workload(sc, f"127.0.0.1:{entry}", manifest_path, None, verbose, str(keylog))
    _fix_link_type(manifest_path, pcap)
    _write_twin_manifest(manifest_path, plain_manifest, plain.name)
    if verbose:
        print(f"  tcpdump: TLS {tls_stats.captured} packets, plaintext {plain_stats.captured}; dropped {tls_stats.dropped_by_kernel}")
    summary = check_tls(sc, out_dir, tls_port, port)
    if sc.tls.inject_secrets:
        inject_secrets(pcap, keylog, capture_path(sc, out_dir))
        pcap.unlink()
        keylog.unlink()
    if verbose:
        print(f"  {capture_path(sc, out_dir).name}: {capture_path(sc, out_dir).stat().st_size} bytes; {summary.api_table()}")
    return summary


def _write_twin_manifest(manifest_path: Path, twin_manifest: Path, twin_name: str) -> None:
    """The twin's manifest: the same lines, its capture line naming the twin and the TLS capture it mirrors."""
    lines = Manifest(str(manifest_path)).read()
    head = dict(lines[0], file=twin_name, title="plaintext twin: " + lines[0]["title"], tls_twin=lines[0]["file"])
    head.pop("tls", None)
    with open(twin_manifest, "w", encoding="utf-8") as out:
        for line in [head, *lines[1:]]:
            out.write(dumps(line) + "\n")


def check_tls(sc: Scenario, out_dir: Path, tls_port: int, port: int) -> pcapinfo.Summary:
    """The plaintext twin passes every check of a plaintext scenario; the TLS capture has no TCP gap."""
    summary = check(sc, twin_path(sc, out_dir), twin_path(sc, out_dir).with_suffix(".manifest.jsonl"), port)
    pcap = out_dir / f"{sc.name}.pcap"
    if pcap.exists():
        gaps = pcapinfo.summarize(str(pcap), tls_port).gaps
        if gaps:
            raise CheckFailed(f"{pcap.name}: {gaps} TCP sequence gaps (lost packets)")
    return summary


def _fix_link_type(manifest_path: Path, pcap: Path) -> None:
    """Write the link type tcpdump really used (read from the pcap) into the capture line."""
    lines = Manifest(str(manifest_path)).read()
    linktype = pcapinfo.read_pcap(str(pcap)).linktype
    lines[0]["link_type"] = pcapinfo.LINK_NAMES.get(linktype, str(linktype))
    with open(manifest_path, "w", encoding="utf-8") as out:
        for line in lines:
            out.write(dumps(line) + "\n")


def _run_workload(
    sc: Scenario,
    bootstrap: str,
    manifest_path: Path,
    netns: str | None,
    verbose: bool,
    keylog: str | None = None,
    registry: str | None = None,
) -> None:
    command = [sys.executable, "-m", "rig", "workload", sc.name, "--bootstrap", bootstrap, "--manifest", str(manifest_path)]
    if keylog is not None:
        command += ["--keylog", keylog]
    if registry is not None:
        command += ["--registry", registry]
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
    if sc.wire_counts is not None:
        counted = [{k: v for k, v in ln.items() if k not in ("kind", "source")} for ln in lines if ln["kind"] == "counted"]
        if counted != [sc.wire_counts(summary)]:
            problems.append(f"the manifest's counted line {counted} is not what the capture holds: {sc.wire_counts(summary)}")
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
