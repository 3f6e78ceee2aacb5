"""Decrypting and decoding Kafka over TLS, against tshark decrypting the same capture, in the same run.

The capture is the rig's real TLS traffic (every TLS capture in captures/ with a key log: TLS 1.2 and 1.3,
AES-GCM and ChaCha20, KeyUpdates) copied until it reaches the size asked for, each copy on addresses of its
own and later in time. Copies keep their ClientHello randoms, so the captures' key logs, put together, open
them all. Timed: kdissect decrypting and decoding everything (bodies, records), kdissect decrypting with
headers only, and `tshark -o tls.keylog_file:... -d tls.port==9093,kafka -T fields -e kafka.correlation_id`
(decrypting, then its Kafka dissector on the plaintext). The Kafka messages each found are counted too.

    python benchmarks/bench_tls.py [--mb 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from kdissect.capture import Packet, open_capture
from kdissect.capture.linktypes import LINKTYPE_ETHERNET
from kdissect.capture.writer import PcapWriter
from kdissect.dissector import Options, make_dissector

CAPTURES = Path(HERE).parent / "captures"
TLS_PORT = 9093


def sources() -> list[tuple[Path, Path, int]]:
    """(capture, key log, TLS port) of every TLS capture of the rig that has a key log beside it."""
    out = []
    for keylog in sorted(CAPTURES.glob("tls*.keylog")):
        head = json.loads(keylog.with_suffix(".manifest.jsonl").read_text().splitlines()[0])
        out.append((keylog.with_suffix(".pcap"), keylog, head["tls"]["port"]))
    return out


def moved(packet: Packet, copy: int, port: int, shift: int) -> Packet:
    """The packet of the `copy`-th copy: the client on 10.x.y.z, the broker's port `port`, `shift` ns later."""
    data = bytearray(packet.data)
    ip = 14
    tcp = ip + (data[ip] & 0x0F) * 4
    sport, dport = struct.unpack_from(">HH", data, tcp)
    client = bytes((10, copy >> 16 & 0xFF, copy >> 8 & 0xFF, copy & 0xFF))
    if dport == port:  # client to broker
        data[ip + 12 : ip + 16] = client
        struct.pack_into(">H", data, tcp + 2, TLS_PORT)
    else:
        data[ip + 16 : ip + 20] = client
        struct.pack_into(">H", data, tcp, TLS_PORT)
    return Packet(packet.ts + shift, packet.linktype, bytes(data), packet.orig_len, 0)


def synthesise(path: str, keylog: str, mb: int) -> None:
    parts = []
    for capture, _, port in sources():
        with open_capture(capture) as source:
            parts.append((list(source.packets()), port))
    Path(keylog).write_bytes(b"".join(log.read_bytes() for _, log, _ in sources()))
    with open(path, "wb") as out:
        writer = PcapWriter(out, LINKTYPE_ETHERNET)
        copy, shift = 0, 0
        while out.tell() < mb * 1_000_000:
            for packets, port in parts:
                copy += 1
                for packet in packets:
                    writer.write(moved(packet, copy, port, shift))
                shift += packets[-1].ts - packets[0].ts + 1_000_000
        print(f"{path}: {writer.packets} packets, {copy} captures copied")


def run_kdissect(path: str, keylog: bytes, decode: bool) -> tuple[float, int]:
    """(seconds, Kafka messages) of one pass of the core, decrypting."""
    start = time.perf_counter()
    with open_capture(path) as capture:
        dissector = make_dissector(Options(ports=frozenset({TLS_PORT}), tls_keylog=keylog, decode=decode))
        messages = 0
        for event in dissector.run(capture.packets()):
            messages += (getattr(event, "request", None) is not None) + (getattr(event, "response", None) is not None)
    return time.perf_counter() - start, messages


def run_tshark(path: str, keylog: str) -> tuple[float, int]:
    start = time.perf_counter()
    out = subprocess.run(
        ["tshark", "-r", path, "-o", f"tls.keylog_file:{keylog}", "-d", f"tls.port=={TLS_PORT},kafka"]
        + ["-T", "fields", "-e", "kafka.correlation_id"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return time.perf_counter() - start, sum(len(line.split(",")) for line in out.splitlines() if line.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=50, help="size of the synthetic capture (default 50)")
    parser.add_argument("--repeat", type=int, default=3, help="take the best of this many runs (default 3)")
    args = parser.parse_args()
    path = os.path.join(HERE, "data", f"tls-{args.mb}mb.pcap")
    keylog = os.path.join(HERE, "data", "tls.keylog")
    if not os.path.exists(path) or not os.path.exists(keylog):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        synthesise(path, keylog, args.mb)
    size = os.path.getsize(path) / 1e6
    secrets = Path(keylog).read_bytes()
    rows = [
        ("kdissect: decrypt, decode everything", lambda: run_kdissect(path, secrets, True)),
        ("kdissect: decrypt, headers only", lambda: run_kdissect(path, secrets, False)),
        ("tshark: decrypt, Kafka dissector (-T fields)", lambda: run_tshark(path, keylog)),
    ]
    best: dict[str, tuple[float, int]] = {}
    for _ in range(args.repeat):  # interleaved, so that a busy moment of the machine hits every row alike
        for name, run in rows:
            seconds, messages = run()
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, messages)
    results = [(name, *best[name]) for name, _ in rows]
    reference = results[-1][1]
    print(f"\n{size:.1f} MB of TLS ({path})\n")
    print("| | MB/s | Kafka messages | × tshark time |")
    print("|---|---:|---:|---:|")
    for name, seconds, messages in results:
        print(f"| {name} | {size / seconds:.1f} | {messages} | {seconds / reference:.2f} |")


if __name__ == "__main__":
    main()
