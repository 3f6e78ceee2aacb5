"""A soak of the tap: `kdissect live --metrics` under real Kafka traffic for ten minutes or more, its memory sampled.

Real traffic (captures/consumer-group-confluent.pcap: librdkafka producer and group members against tansu) is copied
`--copies` times with distinct client addresses (`testing.craft.conversation_copy`) and played by tcpreplay onto a
veth pair in a private network namespace (rig/replay.py) at `--pps` packets a second, looping with new addresses on
every loop (`--unique-ip`), for `--minutes`: connections, clients, relations and label values keep coming and going,
as on a busy cluster. kdissect captures the pair's other end with `--metrics-idle` short enough that eviction runs
many times in the soak. Every `--every` seconds the soak samples kdissect's resident memory (/proc/PID/status) and
scrapes its endpoint (series held, packets read, kernel drops).

It prints the RSS curve, then the verdict: the RSS after the warm-up (the first `--warmup` part, during which the tap
fills up to its first evictions) stays within 10 % of its median, the series held stay under their bound, and every
packet tcpreplay sent is either read by kdissect or counted as dropped by the kernel (the endpoint's
kdissect_capture_kernel_drops_total and the final stderr line agree).

    python benchmarks/soak_metrics.py [--minutes 10] [--pps 2000] [--every 5]

CI runs a short version (tests/test_metrics_soak.py: `--minutes 0.5`). Needs root, iproute2, ethtool and tcpreplay.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
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
from rig.replay import inside, missing, replay_ns

SOURCE = os.path.join(ROOT, "captures", "consumer-group-confluent.pcap")
TAP = "127.0.0.1:9465"
SCRAPE = "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
FLAT = 0.10
"""How far from its median the RSS may go after the warm-up."""


def traffic(copies: int, path: str) -> int:
    """`copies` copies of the source conversation, a second apart (they overlap, as clients do): packets written."""
    with open_capture(SOURCE) as source:
        packets = list(source.packets())
    out_packets = []
    for k in range(copies):
        out_packets += conversation_copy(packets, k, bytes([10, 99, 0, 1]), packets[0].ts, packets[0].ts + k * 1_000_000_000)
    out_packets.sort(key=lambda p: p.ts)
    with open(path, "wb") as out:
        writer = PcapWriter(out, packets[0].linktype, nanosecond=True)
        for packet in out_packets:
            writer.write(packet)
    return len(out_packets)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        found = re.search(r"^VmRSS:\s+(\d+) kB", status.read(), re.MULTILINE)
    return int(found.group(1)) if found else 0


def scrape(ns: str) -> dict[str, float]:
    """The endpoint's unlabelled kdissect_* samples."""
    got = subprocess.run(inside(ns, [sys.executable, "-c", SCRAPE, f"http://{TAP}/metrics"]), capture_output=True, text=True, timeout=30)
    return {name: float(value) for name, value in re.findall(r"^(kdissect_\w+?)(?:_total)? (\S+)$", got.stdout, re.MULTILINE)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--pps", type=int, default=2000, help="packets a second tcpreplay sends")
    parser.add_argument("--copies", type=int, default=60, help="copies of the conversation in one loop (357 packets each)")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between two samples")
    parser.add_argument("--idle", type=float, default=30.0, help="kdissect's --metrics-idle")
    parser.add_argument("--series", type=int, default=2000, help="kdissect's --metrics-series")
    parser.add_argument("--warmup", type=float, default=0.3, help="part of the run before memory must be flat")
    args = parser.parse_args(argv)
    lacking = missing()
    if lacking:
        print(f"soak: {lacking}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="soak-metrics-") as tmp, replay_ns() as ns:
        pcap = os.path.join(tmp, "traffic.pcap")
        per_loop = traffic(args.copies, pcap)
        seconds = args.minutes * 60
        name = os.path.basename(SOURCE)
        print(f"traffic: {per_loop} packets a loop ({args.copies} copies of {name}), {args.pps} packets/s for {seconds:.0f} s")
        argv = [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])", "live", "-i", ns.capture]
        argv += ["--metrics", TAP, "--metrics-idle", str(args.idle), "--metrics-series", str(args.series), "--metrics-window", "10"]
        stderr_path = os.path.join(tmp, "kdissect.err")
        with open(stderr_path, "w") as err:
            tap = subprocess.Popen(inside(ns.name, argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
        try:
            deadline = time.monotonic() + 60
            while "listening on" not in open(stderr_path).read():
                if time.monotonic() > deadline or tap.poll() is not None:
                    print(f"soak: kdissect did not start: {open(stderr_path).read()}", file=sys.stderr)
                    return 2
                time.sleep(0.2)
            replay = ["tcpreplay", "--intf1", ns.send, "--preload-pcap", "--no-flow-stats", f"--pps={args.pps}"]
            replay += ["--loop=1000000", "--unique-ip", f"--duration={max(1, round(seconds))}", pcap]
            sender = subprocess.Popen(inside(ns.name, replay), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            report: list[str] = []
            reader = threading.Thread(target=lambda: report.extend(sender.stdout or []), daemon=True)
            reader.start()
            samples: list[tuple[float, int, dict[str, float]]] = []
            start = time.monotonic()
            print(f"{'seconds':>8} {'RSS MiB':>8} {'series':>7} {'packets':>10} {'drops':>7}")
            while sender.poll() is None:
                time.sleep(args.every)
                sample = (time.monotonic() - start, rss_kib(tap.pid), scrape(ns.name))
                samples.append(sample)
                got = sample[2]
                print(
                    f"{sample[0]:8.0f} {sample[1] / 1024:8.1f} {got.get('kdissect_metrics_series', 0):7.0f} "
                    f"{got.get('kdissect_capture_packets', 0):10.0f} {got.get('kdissect_capture_kernel_drops', 0):7.0f}",
                    flush=True,
                )
            reader.join(10)
            time.sleep(2)  # the ring drained
            last = scrape(ns.name)
        finally:
            if tap.poll() is None:
                tap.send_signal(signal.SIGINT)
                tap.wait(30)
        sent = int(re.search(r"Successful packets:\s+(\d+)", "".join(report)).group(1))  # type: ignore[union-attr]
        told = open(stderr_path).read()
    return verdict(args, samples, last, sent, told)


def verdict(args: argparse.Namespace, samples: list, last: dict[str, float], sent: int, told: str) -> int:
    settled = [rss for t, rss, _ in samples if t >= args.warmup * args.minutes * 60]
    if len(settled) < 2:
        print("soak: too short to judge (more --minutes or a smaller --every)")
        return 2
    median = statistics.median(settled)
    spread = max(abs(rss - median) / median for rss in settled)
    read, drops = int(last.get("kdissect_capture_packets", 0)), int(last.get("kdissect_capture_kernel_drops", 0))
    final = re.search(r"(\d+) dropped by the kernel", told)
    told_drops = int(final.group(1)) if final else 0
    series = max(s.get("kdissect_metrics_series", 0) for _, _, s in samples)
    print(f"\nRSS after the warm-up: median {median / 1024:.1f} MiB, at most {spread:.1%} from it (bound {FLAT:.0%})")
    print(f"series held: at most {series:.0f} (bound {args.series} per metric)")
    print(f"packets: tcpreplay sent {sent}, kdissect read {read}, the kernel dropped {drops} (kdissect's last line: {told_drops})")
    ok = spread <= FLAT and read + drops == sent and drops == told_drops
    print("verdict:", "flat, bounded, every packet accounted for" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
