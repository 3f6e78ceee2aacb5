"""The two-host capture: one consumer group whose two members run on two client hosts (rig/hosts.py), every
connection captured at both of its ends, by its client's host and by the broker's, with three tcpdumps.

    python -m rig.taps [--out DIR]      # captures/taps-group-{host1,host2,broker}.pcap, each with its manifest

Host 1 creates the topic and produces, then runs member `a` (and produces again while the group consumes); host 2
runs member `b`, which joins two seconds later: the group rebalances, both members fetch and commit, both leave.
Read alone, each host's capture holds one member of the group; read together they hold the group, and with the
broker's capture every connection is seen from both ends (kdissect's taps/: `read host1 host2 broker` times each
exchange on both sides). Each capture's manifest holds what its host's clients did (the broker's, both hosts'), and
its capture line names the three files.

``python -m rig.taps member NAME --bootstrap H:P --manifest FILE`` is what each host runs (in its namespace).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rig import clients, pcapinfo
from rig.broker import running_broker
from rig.capture import tcpdump, tcpdump_version
from rig.hosts import two_client_hosts
from rig.manifest import Manifest
from rig.run import CAPTURES, REPO, CheckFailed
from rig.scenarios.consume import GROUP_CONF
from rig.scenarios.kit import confluent_consumed, confluent_create_topics, confluent_produce, text_value

NAME = "taps-group"
TOPIC, GROUP, PARTITIONS, PORT = "taps", "kdrig-taps", 4, 9092
TAPS = ("host1", "host2", "broker")


def _records(round_no: int) -> list[dict]:
    return [
        {
            "key": f"t{round_no}-{j}".encode(),
            "value": text_value(f"taps round {round_no}", j, 1),
            "partition": j % PARTITIONS,
            "headers": [],
        }
        for j in range(8)
    ]


def member(name: str, bootstrap: str, manifest: Manifest) -> None:
    """One member's life: (host 1 first makes the topic and produces) join, fetch and commit for a while, leave."""
    from confluent_kafka import Consumer

    client = clients.confluent_name()
    producer_conf = {"bootstrap.servers": bootstrap, "client.id": f"kdrig-taps-producer-{name}", "linger.ms": 20}
    if name == "a":
        confluent_create_topics(manifest, bootstrap, {TOPIC: PARTITIONS})
        confluent_produce(manifest, producer_conf, TOPIC, _records(0))
    else:
        time.sleep(2)  # the group has formed with a alone: b's join rebalances it
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": f"kdrig-taps-{name}", **GROUP_CONF})
    consumer.subscribe([TOPIC])
    manifest.op(client, "subscribe", group=GROUP, member=name, topics=[TOPIC])
    started, produced = time.monotonic(), name != "a"
    while time.monotonic() - started < 14:
        if not produced and time.monotonic() - started > 8:
            confluent_produce(manifest, producer_conf, TOPIC, _records(1))
            produced = True
        msg = consumer.poll(0.2)
        if msg is None or msg.error():
            continue
        confluent_consumed(manifest, msg, client=client, group=GROUP, member=name)
        consumer.commit(message=msg, asynchronous=False)
    consumer.close()
    manifest.op(client, "close", group=GROUP, member=name)


def run(out: Path = CAPTURES) -> None:
    out.mkdir(parents=True, exist_ok=True)
    pcaps = [out / f"{NAME}-{tap}.pcap" for tap in TAPS]
    manifests = [p.with_suffix(".manifest.jsonl") for p in pcaps]
    parts = [out / f"{NAME}-host{n}.part.jsonl" for n in (1, 2)]
    for path in (*pcaps, *manifests, *parts):
        path.unlink(missing_ok=True)
    with contextlib.ExitStack() as stack:
        hosts = stack.enter_context(two_client_hosts())
        broker = stack.enter_context(running_broker(hosts.broker_ip, PORT, netns=hosts.broker_ns))
        where = [(hosts.client_ns[0], hosts.client_if[0]), (hosts.client_ns[1], hosts.client_if[1]), (hosts.broker_ns, hosts.bridge)]
        dumps = [stack.enter_context(tcpdump(str(p), iface, f"tcp port {PORT}", netns=ns)) for p, (ns, iface) in zip(pcaps, where)]
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        members = [
            subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    sys.executable,
                    "-m",
                    "rig.taps",
                    "member",
                    name,
                    "--bootstrap",
                    broker.bootstrap,
                    "--manifest",
                    str(part),
                ],
                cwd=REPO,
                env=env,
            )
            for ns, name, part in zip(hosts.client_ns, "ab", parts)
        ]
        if any(m.wait(timeout=120) for m in members):
            raise CheckFailed(f"{NAME}: a member exited with an error")
    hosts_lines = [[json.loads(line) for line in part.read_text().splitlines()] for part in parts]
    for part in parts:
        part.unlink()
    head = {
        "kind": "capture",
        "scenario": NAME,
        "title": "One consumer group, its members on two client hosts; every connection captured on its client's host and on "
        "the broker's (three tcpdumps, one per host)",
        "broker": {"software": "tansu", "version": broker.version, "host": broker.host, "port": broker.port, "storage": "memory"},
        "clients": clients.all_client_versions(),
        "taps": {
            tap: {"file": p.name, "interface": iface, "address": address}
            for tap, p, (_, iface), address in zip(TAPS, pcaps, where, (*hosts.client_ip, hosts.broker_ip))
        },
        "link_type": "EN10MB",
        "mtu": 1500,
        "netns": True,
        "timestamp_precision": "us",
        "snaplen": 0,
        "capture_tool": tcpdump_version(),
        "date": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "command": "python -m rig.taps",
    }
    for pcap, path, lines in zip(pcaps, manifests, (hosts_lines[0], hosts_lines[1], hosts_lines[0] + hosts_lines[1])):
        with open(path, "w", encoding="utf-8") as manifest:
            for line in [dict(head, file=pcap.name), *lines]:
                manifest.write(json.dumps(line, ensure_ascii=False) + "\n")
    for pcap, stats in zip(pcaps, dumps):
        summary = pcapinfo.summarize(str(pcap), PORT)
        if stats.dropped_by_kernel or summary.gaps:
            raise CheckFailed(f"{pcap.name}: {stats.dropped_by_kernel} packets dropped, {summary.gaps} TCP gaps")
        print(f"  {pcap.name}: {stats.captured} packets; {summary.api_table()}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["member"]:
        parser = argparse.ArgumentParser(prog="python -m rig.taps member")
        parser.add_argument("name", choices=("a", "b"))
        parser.add_argument("--bootstrap", required=True)
        parser.add_argument("--manifest", required=True)
        args = parser.parse_args(argv[1:])
        member(args.name, args.bootstrap, Manifest(args.manifest))
        return 0
    parser = argparse.ArgumentParser(prog="python -m rig.taps", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="output folder (default: captures/ of the repo)")
    args = parser.parse_args(argv)
    run(Path(args.out) if args.out else CAPTURES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
