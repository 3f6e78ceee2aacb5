"""The rate `kdissect live` sustains, against `tcpdump -w /dev/null` on the same replayed traffic, in the same run.

Real Kafka traffic (captures/consumer-group-confluent.pcap, copied `--copies` times with new client addresses by
`testing.craft.conversation_copy`: distinct connections, as many clients make) is replayed by tcpreplay at its
top speed onto a veth pair in a private network namespace (rig/replay.py), and each capturer, started first on the
pair's other end with a ring large enough for all of it, takes the packets until it has them all. Its sustained
rate is packets (and bytes) over the time from the replay's start to its exit: the sender is much faster than
any capturer, so that time is the capturer draining the ring at its own pace. The capturers take turns, in an
order that alternates between rounds, so the machine's load falls on all alike:

- tcpdump -w /dev/null (libpcap's TPACKET_V3 ring, written nowhere): the reference;
- kdissect live --metrics --headers-only (pairs and times exchanges without decoding bodies) and kdissect live
  --metrics (full decoding: bodies, records, the doctor, every metric), each with the TPACKET_V3 ring and with one
  recvmsg per packet (`--backend socket`): what decides the default.

    python benchmarks/bench_live.py [--copies 400] [--repeat 3]

Needs root, iproute2, ethtool, tcpreplay and tcpdump. Prints each run, then per capturer the median packets/s and
MB/s and the ratio to tcpdump's.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, ROOT)

from kdissect.capture import open_capture
from kdissect.capture.writer import PcapWriter
from kdissect.testing.craft import conversation_copy
from rig.replay import inside, missing, replay_ns, tcpreplay

SOURCE = os.path.join(ROOT, "captures", "consumer-group-confluent.pcap")
RING = "1GiB"
KDISSECT = [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])", "live", "--ring-size", RING]


def traffic(copies: int, path: str) -> tuple[int, int]:
    """`copies` copies of the source conversation, one after the other: (packets, bytes on the wire)."""
    with open_capture(SOURCE) as source:
        packets = list(source.packets())
    count = size = 0
    with open(path, "wb") as out:
        writer = PcapWriter(out, packets[0].linktype, nanosecond=True)
        for k in range(copies):
            for packet in conversation_copy(packets, k, bytes([10, 99, 0, 1]), packets[0].ts, packets[0].ts + k * 1_000_000):
                writer.write(packet)
                count += 1
                size += packet.orig_len
    return count, size


def capturers(interface: str, packets: int) -> dict[str, list[str]]:
    live = [*KDISSECT, "-i", interface, "--packets", str(packets), "--metrics", "127.0.0.1:9465"]
    return {
        "tcpdump -w /dev/null": ["tcpdump", "-i", interface, "-w", "/dev/null", "-c", str(packets), "-B", str(1 << 20), "tcp port 9092"],
        "headers only, ring": [*live, "--headers-only"],
        "headers only, recvmsg": [*live, "--headers-only", "--backend", "socket"],
        "full decoding, ring": live,
        "full decoding, recvmsg": [*live, "--backend", "socket"],
    }


def run(ns, name: str, argv: list[str], pcap: str, timeout: float) -> tuple[float, str]:
    """Start one capturer, replay, wait for it to have every packet: (seconds from the replay's start, its stderr)."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    process = subprocess.Popen(
        inside(ns.name, argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    assert process.stderr is not None
    lines: list[str] = []
    ready = threading.Event()

    def collect() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if "listening on" in line:
                ready.set()

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    if not ready.wait(60):
        process.kill()
        raise SystemExit(f"{name} did not start: {''.join(lines)}")
    time.sleep(0.5)  # the tap's HTTP server and the first poll
    start = time.monotonic()
    tcpreplay(ns, [pcap], "--topspeed")
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(2)  # what it had is still reported: drops make a capturer miss its count
        process.wait(30)
    took = time.monotonic() - start
    reader.join(5)
    return took, "".join(lines)


def dropped(name: str, stderr: str) -> int:
    found = re.search(r"(\d+) (?:packets )?dropped by (?:the )?kernel", stderr)
    return int(found.group(1)) if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=400, help="copies of the conversation (357 packets each)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", action="append", help="capturers whose name contains this (repeatable)")
    args = parser.parse_args()
    lacking = missing()
    if lacking:
        raise SystemExit(lacking)
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        pcap = os.path.join(tmp, "traffic.pcap")
        packets, size = traffic(args.copies, pcap)
        print(f"traffic: {packets} packets, {size / 1e6:.1f} MB on the wire ({args.copies} copies of {os.path.basename(SOURCE)})")
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
        times: dict[str, list[float]] = {}
        with replay_ns() as ns:
            todo = capturers(ns.capture, packets)
            if args.only:
                todo = {k: v for k, v in todo.items() if k == "tcpdump -w /dev/null" or any(o in k for o in args.only)}
            for round_ in range(args.repeat):
                order = list(todo.items()) if round_ % 2 == 0 else list(reversed(todo.items()))
                for name, argv in order:
                    took, stderr = run(ns, name, argv, pcap, timeout=max(120.0, packets / 2000))
                    lost = dropped(name, stderr)
                    note = f", {lost} dropped by the kernel" if lost else ""
                    rate = f"{packets / took:9.0f} packets/s  {size / took / 1e6:7.1f} MB/s"
                    print(f"  round {round_ + 1}: {name:32s} {took:7.2f} s  {rate}{note}")
                    times.setdefault(name, []).append(took)
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
        reference = statistics.median(times["tcpdump -w /dev/null"])
        print(f"\nmedians of {args.repeat} rounds (the ratio is tcpdump's time over the capturer's: its rate as a part of tcpdump's):")
        for name, taken in times.items():
            median = statistics.median(taken)
            print(f"  {name:32s} {packets / median:9.0f} packets/s  {size / median / 1e6:7.1f} MB/s  ratio {reference / median:.3f}")


if __name__ == "__main__":
    main()
