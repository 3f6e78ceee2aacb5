"""Peak memory of `kdissect read --json -o /dev/null` on a synthetic ~1 GB capture and on a capture of hostile
size prefixes, each run in its own process and measured by its peak RSS. A benchmark, not a unit test.

    python benchmarks/bench_memory.py                  # both captures, 1 GB of traffic (a few minutes)
    python benchmarks/bench_memory.py --gb 0.1         # a quicker look
    python benchmarks/bench_memory.py --keep DIR       # keep the generated captures in DIR
    python benchmarks/bench_memory.py --jobs 2         # read by two processes (`read --jobs`): each one's peak

The traffic capture: `--connections` connections interleaved, each repeating a Produce v3 request with one
record batch per partition (codecs rotating through none, gzip, lz4, zstd, snappy) and its response, then a
Fetch v4 request and a response carrying the same batches, every frame cut into 1448-byte segments with
ACKs. Frames are encoded once per connection and replayed with new correlation ids, so writing 1 GB takes
about a minute. The hostile capture: thousands of connections, each sending one of: a 2 GiB size prefix, a
negative one, a size prefix of 100 MB (the largest believed) followed by 64 KB and a FIN, an array count of
2**31 - 1, a string length of 2**31 - 1, a record whose varints claim 2**31 bytes, two zstd batches that
each decompress to 1 GiB (cut at 64 MiB, each costing that much decompression), and SYNs alone. Both are streamed
to disk, never held in memory, and never committed.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import lz4.frame
import zstandard

from kdissect.capture.linktypes import LINKTYPE_ETHERNET
from kdissect.capture.writer import PcapWriter
from kdissect.net.tcp import SYN
from kdissect.records.batch import CRC_START, HEADER
from kdissect.records.codecs import GZIP, LZ4, ZSTD
from kdissect.records.crc import crc32c
from kdissect.records.encode import Draft, compress, encode_batch, encode_message, encode_record
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation
from kdissect.testing.record_encoder import nested_fan_out
from kdissect.wire import write_varint

BOUND_MB = 400
"""The bound this benchmark holds kdissect to, for either capture at its default size, with the default limits.

The traffic capture needs about 65 MB whatever its size. The hostile one needs about 190 MB plus some 20 MB per
thousand connections: one zstd bomb batch at a time costs 128 MiB while it is cut at 64 MiB (its chunks and
their join), and every connection stays tracked (and its open 100 MB frame held) until `max_connections`
evicts it."""
MSS = 1448
CODECS = ("none", "gzip", "lz4", "zstd", "snappy")


def _string(text: bytes) -> bytes:
    return struct.pack(">h", len(text)) + text


def produce_request(batches: list[bytes]) -> bytes:
    partitions = b"".join(struct.pack(">ii", i, len(b)) + b for i, b in enumerate(batches))
    return struct.pack(">hhii", -1, 1, 30000, 1) + _string(b"bench") + struct.pack(">i", len(batches)) + partitions


def produce_response(partitions: int) -> bytes:
    each = b"".join(struct.pack(">ihqq", i, 0, 0, -1) for i in range(partitions))
    return struct.pack(">i", 1) + _string(b"bench") + struct.pack(">i", partitions) + each + struct.pack(">i", 0)


def fetch_request(partitions: int) -> bytes:
    each = b"".join(struct.pack(">iqi", i, 0, 1 << 20) for i in range(partitions))
    return struct.pack(">iiiib", -1, 500, 1, 50 << 20, 0) + struct.pack(">i", 1) + _string(b"bench") + struct.pack(">i", partitions) + each


def fetch_response(batches: list[bytes]) -> bytes:
    each = b"".join(struct.pack(">ihqqi", i, 0, 100, 100, 0) + struct.pack(">i", len(b)) + b for i, b in enumerate(batches))
    return struct.pack(">ii", 0, 1) + _string(b"bench") + struct.pack(">i", len(batches)) + each


def _with_id(frame: bytes, at: int, correlation: int) -> bytes:
    return frame[:at] + struct.pack(">i", correlation) + frame[at + 4 :]


def traffic(path: str, size: int, connections: int, partitions: int, records: int, value_size: int) -> int:
    """Write the traffic capture; returns its number of exchanges."""
    clock = Clock(step=20_000)
    convs = []
    for i in range(connections):
        conv = Conversation(client=f"10.1.{i // 250}.{i % 250 + 1}", server="10.0.0.9", client_port=40000 + i, clock=clock)
        codecs = itertools.cycle(CODECS[i % len(CODECS) :] + CODECS[: i % len(CODECS)])
        batches = [
            encode_batch(
                [Draft(f"k{n}".encode(), os.urandom(value_size // 8) * 8, ((b"h", b"v"),), n) for n in range(records)], codec=next(codecs)
            )
            for _ in range(partitions)
        ]
        frames = (
            craft.request(0, 3, 0, produce_request(batches), client_id="bench"),
            craft.response(0, produce_response(partitions)),
            craft.request(1, 4, 0, fetch_request(partitions), client_id="bench"),
            craft.response(0, fetch_response(batches)),
        )
        convs.append((conv, frames))
    exchanges = 0
    with open(path, "wb") as out:
        writer = PcapWriter(out, LINKTYPE_ETHERNET)
        for conv, _ in convs:
            writer.write_all(conv.handshake())
        correlation = 0
        while out.tell() < size:
            correlation += 1
            for conv, (produce, produced, fetch, fetched) in convs:
                writer.write_all(conv.send(CLIENT, _with_id(produce, 8, 2 * correlation), MSS))
                writer.write_all(conv.send(SERVER, _with_id(produced, 4, 2 * correlation), MSS) + [conv.ack(CLIENT)])
                writer.write_all(conv.send(CLIENT, _with_id(fetch, 8, 2 * correlation + 1), MSS))
                writer.write_all(conv.send(SERVER, _with_id(fetched, 4, 2 * correlation + 1), MSS) + [conv.ack(CLIENT)])
                exchanges += 2
        for conv, _ in convs:
            writer.write_all(conv.close())
    return exchanges


def hostile(path: str, connections: int) -> int:
    """Write the hostile capture; returns its number of connections."""
    clock = Clock()
    record = b"\0" + write_varint(0) + write_varint(0) + write_varint(2**31 - 1) + b"\0\0"
    liar = bytearray(encode_batch([Draft(b"k", b"v")]))
    liar[61:] = write_varint(len(record)) + record
    struct.pack_into(">i", liar, 8, len(liar) - 12)
    bomb = encode_batch([Draft(None, b"\0" * (1 << 30))], codec="zstd")
    cases = [
        struct.pack(">i", 2**31 - 1) + b"\xee" * 1000,
        struct.pack(">i", -(2**31)) + b"\xee" * 1000,
        struct.pack(">i", 100 << 20) + b"\0" * (64 << 10),
        craft.request(0, 3, 1, struct.pack(">hhii", -1, 1, 1000, 2**31 - 1)),
        craft.request(3, 1, 1, struct.pack(">ih", 1, 2**15 - 1)) + craft.request(0, 3, 2, struct.pack(">hhi", 2**15 - 1, 1, 1000)),
        craft.request(0, 3, 1, produce_request([bytes(liar)])),
        craft.request(0, 3, 1, produce_request([bomb, bomb])),
    ]
    with open(path, "wb") as out:
        writer = PcapWriter(out, LINKTYPE_ETHERNET)
        for i in range(connections):
            conv = Conversation(client=f"10.2.{i // 250 % 250}.{i % 250 + 1}", server="10.0.0.9", client_port=1024 + i % 60000, clock=clock)
            case = i % (len(cases) + 1)
            if case == len(cases):
                writer.write(conv.segment(CLIENT, flags=SYN))
                continue
            writer.write_all(conv.handshake() + conv.send(CLIENT, cases[case], MSS))
            if case != 2:  # the 100 MB frame stays open: the framer holds what came of it until the capture ends
                writer.write_all(conv.close())
    return connections


def _produce(conv: Conversation, records: bytes, correlation: int = 1) -> list:
    """A Produce v3 request whose one partition holds `records`, and an empty response."""
    return conv.send(CLIENT, craft.request(0, 3, correlation, produce_request([records]), client_id="bench"), MSS) + conv.send(
        SERVER, craft.response(correlation, produce_response(0)), MSS
    )


def _raw_batch(codec: int, payload: bytes, count: int) -> bytes:
    """A v2 batch whose records section is `payload` as given (several members or frames), its CRC right."""
    header = bytearray(HEADER.pack(0, HEADER.size - 12 + len(payload), 0, 2, 0, codec, count - 1, 0, 0, -1, -1, -1, count))
    batch = header + payload
    struct.pack_into(">I", batch, CRC_START - 4, crc32c(bytes(batch[CRC_START:])))
    return bytes(batch)


def _tiny_records(n: int) -> bytes:
    """n records of 7 bytes each (a one-byte value), as a zstd batch: 8 MiB of them compress to a few KB."""
    one = encode_record(Draft(None, b"v"), 0, 0)
    return _raw_batch(ZSTD, zstandard.ZstdCompressor(level=19).compress(one * n), n)


def _gzip_members(n: int) -> bytes:
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    return _raw_batch(GZIP, (c.compress(b"") + c.flush()) * n, 0)


def _lz4_frames(n: int) -> bytes:
    return _raw_batch(LZ4, lz4.frame.compress(b"") * n, 0)


def _families(scale: float) -> dict[str, tuple[str, object]]:
    """Hostile shapes from issue 15, each: (what it holds, a writer of its packets). `scale` 1 is the issue's size."""

    def many(connections: int, make):
        def write(clock):
            for i in range(connections):
                conv = Conversation(client=f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255 or 1}", client_port=1024 + i % 60000, clock=clock)
                yield from make(conv)

        return write

    tiny = int(8 * 1024 * 1024 / 7 * scale)
    members, frames = int(400_000 * scale), int(200_000 * scale)
    strings, connections, waiting = int(2_000_000 * scale), int(100_000 * scale), int(20_000 * scale)
    fanout, nested, held = 100, max(1, int(400 * scale)), max(1, int(3 * scale))
    groups = craft.request(15, 0, 1, struct.pack(">i", strings) + b"\0\0" * strings, client_id="bench")
    metadata = craft.request(3, 1, 0, struct.pack(">i", 1) + _string(b"orders"), client_id="bench")
    return {
        "tiny-records": (f"a zstd batch of {tiny} 7-byte records", lambda clock: _one_conversation(clock, _tiny_records(tiny))),
        "gzip-members": (f"a gzip payload of {members} empty members", lambda clock: _one_conversation(clock, _gzip_members(members))),
        "lz4-frames": (f"an lz4 payload of {frames} empty frames", lambda clock: _one_conversation(clock, _lz4_frames(frames))),
        "array": (f"a body with an array of {strings} empty strings", lambda clock: _one_request(clock, groups)),
        "syn-flood": (f"{connections} SYNs alone", many(connections, lambda conv: [conv.segment(CLIENT, flags=SYN)])),
        "half-frames": (
            f"{connections} connections each holding half a frame",
            many(connections, lambda conv: conv.handshake() + conv.send(CLIENT, struct.pack(">i", 512) + b"\0" * 256)),
        ),
        "nested-fan-out": (
            f"{nested} Produce requests, each a gzip wrapper nesting {fanout}**3 messages and a zstd batch of {fanout} records"
            " whose values are such wrappers",
            lambda clock: _nested_requests(clock, nested, fanout),
        ),
        "nested-values": (
            f"{held} Produce requests, each 40 gzip wrappers of 20 gzip wrappers of 50 messages of 1 MiB of zeros",
            lambda clock: _nested_values(clock, held),
        ),
        "waiting-requests": (
            f"{waiting} connections with 30 requests waiting each",
            many(waiting, lambda conv: conv.handshake() + conv.send(CLIENT, b"".join(_with_id(metadata, 8, k) for k in range(30)), MSS)),
        ),
    }


def _nested_requests(clock: Clock, requests: int, fanout: int) -> list:
    """Produce requests whose one partition holds a legacy gzip wrapper of wrappers of wrappers (fanout**3 messages)
    and another a zstd batch of records whose values are such wrappers: decompression fanning out at every level."""
    wrapper = nested_fan_out(fanout, 3)
    values = encode_batch([Draft(None, wrapper) for _ in range(fanout)], codec="zstd")
    frame = produce_request([wrapper, values])
    conv = Conversation(clock=clock)
    packets = conv.handshake()
    for correlation in range(requests):
        packets += conv.send(CLIENT, craft.request(0, 3, correlation, frame, client_id="bench"), MSS)
        packets += conv.send(SERVER, craft.response(correlation, produce_response(0)), MSS)
    return packets + conv.close()


def _nested_values(clock: Clock, requests: int) -> list:
    """Produce requests of 480 KB whose records decompress, gzip inside gzip, to 40 000 values of 1 MiB of zeros:
    every decompressed byte a value held while its exchange is written (records.context.earned bounds them)."""
    leaf = encode_message(0, magic=1, value=bytes(1 << 20))
    inner = encode_message(0, magic=1, value=compress(GZIP, leaf * 50), attributes=GZIP)
    outer = encode_message(0, magic=1, value=compress(GZIP, inner * 20), attributes=GZIP)
    conv = Conversation(clock=clock)
    packets = conv.handshake()
    for correlation in range(requests):
        packets += conv.send(CLIENT, craft.request(0, 3, correlation, produce_request([outer * 40]), client_id="bench"), MSS)
        packets += conv.send(SERVER, craft.response(correlation, produce_response(0)), MSS)
    return packets + conv.close()


def _one_conversation(clock: Clock, records: bytes) -> list:
    conv = Conversation(clock=clock)
    return conv.handshake() + _produce(conv, records) + conv.close()


def _one_request(clock: Clock, frame: bytes) -> list:
    conv = Conversation(clock=clock)
    return conv.handshake() + conv.send(CLIENT, frame, MSS) + conv.close()


def family(path: str, write) -> None:
    with open(path, "wb") as out:
        PcapWriter(out, LINKTYPE_ETHERNET).write_all(write(Clock()))


RUN = """
import resource, sys
from kdissect.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
with open("/proc/self/status") as status:
    sys.stderr.write("\\n" + next(line for line in status if line.startswith("VmHWM")))
sys.stderr.write(f"\\nWorkers: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
"""
"""The child's own peak (ru_maxrss would carry over the peak of the process that started it, across exec), then the
largest peak of the workers it forked (`read --jobs`; they start from its memory, so theirs is their own)."""


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def measure(path: str, root: str = ROOT, jobs: list[str] = ()) -> tuple[float, float, float]:
    """(peak RSS in MB, the largest worker's in MB, seconds) of `kdissect read --json -o /dev/null PATH` in a process
    of its own, running the kdissect found in `root`."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", RUN, "read", "--json", "--quiet", "-o", os.devnull, *jobs, path],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": os.path.abspath(root)},
    )
    took = time.perf_counter() - started
    if result.returncode:
        raise SystemExit(f"kdissect failed on {path}:\n{result.stderr}")
    rss_kb = int(result.stderr.rsplit("VmHWM:", 1)[1].split()[0])
    workers_kb = int(result.stderr.rsplit("Workers:", 1)[1].split()[0])
    return rss_kb / 1024, workers_kb / 1024, took


def linear_decompression() -> list[str]:
    """Seconds to decompress 1x, 2x, 4x and 8x as many gzip members and lz4 frames, as ratios to 1x: linear
    decompression reads 2, 4, 8 (quadratic re-slicing read 4, 16, 64)."""
    from kdissect.records.codecs import decompress

    lines = ["| framing | 1x | 2x | 4x | 8x | ratios to 1x |", "|---|---:|---:|---:|---:|---|"]
    for name, make, codec, base in (("gzip members", _gzip_members, GZIP, 50_000), ("lz4 frames", _lz4_frames, LZ4, 25_000)):
        took = []
        for scale in (1, 2, 4, 8):
            payload = make(base * scale)[HEADER.size :]
            started = time.perf_counter()
            decompress(codec, payload, 64 << 20)
            took.append(time.perf_counter() - started)
        cells = " | ".join(f"{base * k:,}: {t:.2f} s" for k, t in zip((1, 2, 4, 8), took))
        lines.append(f"| {name} | {cells} | {' / '.join(f'{t / took[0]:.1f}' for t in took)} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="size of the traffic capture (default 1)")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--value-size", type=int, default=512)
    parser.add_argument("--hostile-connections", type=int, default=8000)
    parser.add_argument("--scale", type=float, default=1.0, help="size of the hostile families, 1 being issue 15's (default 1)")
    parser.add_argument("--only", help="comma-separated captures to measure: traffic, hostile and the families' names")
    parser.add_argument("--against", metavar="DIR", help="also measure the kdissect checked out in DIR (e.g. main), for before/after")
    parser.add_argument("--keep", metavar="DIR", help="write the captures here and keep them")
    parser.add_argument("--jobs", help="read --jobs N (default: the CLI's own, one process)")
    args = parser.parse_args()
    jobs = ["--jobs", args.jobs] if args.jobs else []
    folder = args.keep or tempfile.mkdtemp(prefix="kdissect-bench-memory-")
    os.makedirs(folder, exist_ok=True)
    families = _families(args.scale)
    writers = {
        "traffic": (
            "",
            lambda path: traffic(path, int(args.gb * 1e9), args.connections, args.partitions, args.records, args.value_size),
        ),
        "hostile": (f"{args.hostile_connections} connections", lambda path: hostile(path, args.hostile_connections)),
        **{name: (content, functools.partial(family, write=write)) for name, (content, write) in families.items()},
    }
    chosen = args.only.split(",") if args.only else list(writers)
    rows = []
    try:
        for name in chosen:
            content, write = writers[name]
            path = os.path.join(folder, f"{name}.pcap")
            started = time.perf_counter()
            exchanges = write(path)
            written = time.perf_counter() - started
            if name == "traffic":
                content = f"{args.connections} connections, {exchanges} exchanges"
            before = measure(path, args.against) if args.against else None
            rows.append((name, os.path.getsize(path), content, *measure(path, ROOT, jobs), written, before))
            if not args.keep:
                os.remove(path)
    finally:
        if not args.keep:
            os.rmdir(folder)
    print(f"kdissect read --json -o /dev/null, peak RSS per capture (bound: {BOUND_MB} MB)")
    against = f" | {args.against}: RSS MB, s" if args.against else ""
    print(f"| capture | size MB | content | peak RSS MB | a worker's MB | read s | written in s{against} | within bound |")
    print("|---|---:|---|---:|---:|---:|---:|" + ("---:|" if args.against else "") + "---|")
    for name, size, content, rss, worker, took, written, before in rows:
        other = f" | {before[0]:.0f}, {before[2]:.1f}" if before else ""
        within = "yes" if max(rss, worker) < BOUND_MB else "NO"
        print(f"| {name} | {size / 1e6:.1f} | {content} | {rss:.0f} | {worker:.0f} | {took:.1f} | {written:.0f}{other} | {within} |")
    print()
    print("Decompression time at 1x..8x members or frames, in this process:")
    print("\n".join(linear_decompression()))
    sys.exit(0 if all(max(row[3], row[4]) < BOUND_MB for row in rows) else 1)


if __name__ == "__main__":
    main()
