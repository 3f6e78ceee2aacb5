"""Synthetic Kafka captures for the benchmarks: streamed to disk, never committed.

Each connection opens with a handshake, then repeats a Produce request carrying one record batch per
partition and its response, and a Fetch request and its response carrying the same batches back (and, with
--heartbeats N, N Heartbeat exchanges of a consumer group; with --joins K, a JoinGroup every K rounds).
Codecs rotate through the batches; frames are cut into MSS-sized segments; connections interleave. The bodies
are written by kdissect's own schema-driven encoder, the batches by its record encoder.

    python benchmarks/synth.py OUT.pcap --mb 100 [--codecs none,gzip,snappy,lz4,zstd] [--produce 7 --fetch 11] [--heartbeats 2] [--joins 50]
    python benchmarks/synth.py OUT.pcap --mb 25 --partitions 1 --records 1 --value-size 64 --no-acks  # small messages
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import subprocess
import sys
from collections.abc import Iterator

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kdissect.capture.linktypes import LINKTYPE_ETHERNET
from kdissect.capture.writer import PcapWriter
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import BUILTIN
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
"""Where the benchmarks keep what they generate (git-ignored)."""
PRODUCE, FETCH, JOIN_GROUP, HEARTBEAT = 0, 1, 11, 12
HEARTBEAT_VERSION, JOIN_GROUP_VERSION = 4, 5


def batches(rng: random.Random, codecs: Iterator[str], count: int, records: int, value_size: int, offset: int) -> list[bytes]:
    """`count` batches, their codecs taken from `codecs`, a cycle each connection keeps going across its exchanges."""
    out = []
    for i, codec in zip(range(count), codecs):
        drafts = [
            Draft(f"key-{offset + n}".encode(), rng.randbytes(value_size // 4) * 4, ((b"h", b"v"),), 1_700_000_000_000 + n)
            for n in range(records)
        ]
        out.append(encode_batch(drafts, codec=codec, base_offset=offset + i * records))
    return out


def conversation_packets(index: int, clock: Clock, args: argparse.Namespace, rng: random.Random):
    """The packets of one connection, one exchange pair at a time."""
    conv = Conversation(
        client=f"10.1.{index // 250}.{index % 250 + 1}",
        server="10.0.0.9",
        client_port=40000 + index,
        server_isn=rng.randrange(1 << 32),
        client_isn=rng.randrange(1 << 32),
        clock=clock,
    )
    yield conv.handshake()
    correlation, offset = 1, 0

    def answered(packets: list) -> list:
        """A response's packets, and the client's bare ACK of them, made now (its time and numbers current)."""
        return packets + [conv.ack(CLIENT)] if args.acks else packets

    codecs = itertools.cycle(args.codecs[index % len(args.codecs) :] + args.codecs[: index % len(args.codecs)])
    while True:
        parts = batches(rng, codecs, args.partitions, args.records, args.value_size, offset)
        produce = encode_body(
            PRODUCE,
            args.produce,
            "request",
            {
                "Acks": -1,
                "TimeoutMs": 30000,
                "TopicData": [{"Name": "bench", "PartitionData": [{"Index": p, "Records": b} for p, b in enumerate(parts)]}],
            },
        )
        flexible = BUILTIN.is_flexible(PRODUCE, args.produce)
        yield conv.send(CLIENT, request(PRODUCE, args.produce, correlation, produce, client_id="bench"), args.mss)
        answer = encode_body(
            PRODUCE,
            args.produce,
            "response",
            {
                "Responses": [{"Name": "bench", "PartitionResponses": [{"Index": p, "BaseOffset": offset} for p in range(len(parts))]}],
            },
        )
        yield answered(conv.send(SERVER, response(correlation, answer, 1 if flexible else 0), args.mss))
        correlation += 1
        fetch = encode_body(
            FETCH,
            args.fetch,
            "request",
            {
                "ReplicaId": -1,
                "MaxWaitMs": 500,
                "MinBytes": 1,
                "MaxBytes": 52428800,
                "Topics": [{"Topic": "bench", "Partitions": [{"Partition": p, "FetchOffset": offset} for p in range(len(parts))]}],
            },
        )
        yield conv.send(CLIENT, request(FETCH, args.fetch, correlation, fetch, client_id="bench"), args.mss)
        answer = encode_body(
            FETCH,
            args.fetch,
            "response",
            {
                "Responses": [
                    {
                        "Topic": "bench",
                        "Partitions": [
                            {"PartitionIndex": p, "HighWatermark": offset + args.records, "Records": b} for p, b in enumerate(parts)
                        ],
                    }
                ],
            },
        )
        flexible = BUILTIN.is_flexible(FETCH, args.fetch)
        yield answered(conv.send(SERVER, response(correlation, answer, 1 if flexible else 0), args.mss))
        correlation += 1
        offset += args.records * len(parts)
        if args.joins and offset // (args.records * len(parts)) % args.joins == 0:
            member = f"bench-{index}"
            join = {"GroupId": "bench-group", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 30000, "MemberId": member}
            join["ProtocolType"], join["Protocols"] = "consumer", [{"Name": "range", "Metadata": b""}]
            body = encode_body(JOIN_GROUP, JOIN_GROUP_VERSION, "request", join)
            yield conv.send(CLIENT, request(JOIN_GROUP, JOIN_GROUP_VERSION, correlation, body, client_id="bench"), args.mss)
            joined = {"GenerationId": offset, "ProtocolName": "range", "Leader": member, "MemberId": member}
            body = encode_body(JOIN_GROUP, JOIN_GROUP_VERSION, "response", joined)
            yield answered(conv.send(SERVER, response(correlation, body, 0), args.mss))
            correlation += 1
        for _ in range(args.heartbeats):
            beat = {"GroupId": "bench-group", "GenerationId": 1, "MemberId": f"bench-{index}"}
            yield conv.send(
                CLIENT,
                request(
                    HEARTBEAT, HEARTBEAT_VERSION, correlation, encode_body(HEARTBEAT, HEARTBEAT_VERSION, "request", beat), client_id="bench"
                ),
                args.mss,
            )
            yield answered(conv.send(SERVER, response(correlation, encode_body(HEARTBEAT, HEARTBEAT_VERSION, "response", {}), 1), args.mss))
            correlation += 1


def write(path: str, args: argparse.Namespace) -> tuple[int, int]:
    """Write the capture; returns (packets, records)."""
    rng = random.Random(args.seed)
    clock = Clock(step=20_000)
    flows = [conversation_packets(i, clock, args, random.Random(rng.random())) for i in range(args.connections)]
    limit = args.mb * 1_000_000
    packets = exchanges = 0
    with open(path, "wb") as out:
        writer = PcapWriter(out, LINKTYPE_ETHERNET)
        while out.tell() < limit:
            for flow in flows:
                for packet in next(flow):
                    writer.write(packet)
                    packets += 1
                exchanges += 1
    rounds = int(exchanges // (4 + 2 * args.heartbeats + (2 / args.joins if args.joins else 0)))
    return packets, rounds * 2 * args.partitions * args.records


def synthesized(name: str, mb: int, *options: str) -> str:
    """benchmarks/data/NAME: a capture of about `mb` MB written by this script with `options` (its command-line
    options), unless it is there already from an earlier run."""
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        os.makedirs(DATA, exist_ok=True)
        subprocess.run([sys.executable, os.path.abspath(__file__), path, "--mb", str(mb), *options], check=True, stdout=subprocess.DEVNULL)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--mb", type=int, default=100, help="stop after this many megabytes (default 100)")
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--records", type=int, default=20, help="records per batch")
    parser.add_argument("--value-size", type=int, default=200)
    parser.add_argument("--codecs", type=lambda s: s.split(","), default=["none"])
    parser.add_argument("--produce", type=int, default=7, help="Produce version (tshark 4.0 reads up to 8)")
    parser.add_argument("--fetch", type=int, default=11, help="Fetch version (tshark 4.0 reads up to 11)")
    parser.add_argument("--heartbeats", type=int, default=0, help="Heartbeat exchanges after each Produce and Fetch (default 0)")
    parser.add_argument("--joins", type=int, default=0, help="a JoinGroup exchange every this many rounds of a connection (default none)")
    parser.add_argument("--mss", type=int, default=1448)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-acks", dest="acks", action="store_false", help="no bare ACK after a response (delayed ACKs)")
    args = parser.parse_args()
    packets, records = write(args.out, args)
    print(f"{args.out}: {packets} packets, about {records} records")


if __name__ == "__main__":
    main()
