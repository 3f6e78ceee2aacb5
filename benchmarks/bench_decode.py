"""Message-body decoding speed: kdissect against kio and kafka-python 3, on the same bytes, in the same run.

    python benchmarks/bench_decode.py            # the table
    python benchmarks/bench_decode.py --profile  # and where kdissect's time goes (cProfile)

The bytes are written by kio's encoder, so every decoder reads identical input; each decoder's reading is
checked once before timing. Times are the best of several repeats, in microseconds per message. Ratios are
kdissect's time over the other decoder's: above 1 means kdissect is slower.

kdissect is timed three ways:
- body:     `CompiledBodies.decode` with records fields kept as bytes, which is what kio and kafka-python do;
- +records: the same, with records fields decoded into batches and records by kdissect's records decoder;
- Decoder:  the full path the core runs per message: body, records, embedded payloads and meaning.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import pstats
import struct
import sys
import time
import uuid
from typing import Any, Callable

import kafka.protocol.consumer.fetch as kp_fetch
import kafka.protocol.consumer.group as kp_group
import kafka.protocol.metadata.api_versions as kp_api_versions
import kafka.protocol.metadata.metadata as kp_metadata
import kafka.protocol.producer.produce as kp_produce
from kio.schema.api_versions.v3.response import ApiVersion, ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.response import FetchableTopicResponse, FetchResponse, PartitionData
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.metadata.v12.response import MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records

from kdissect.decode.body import CompiledBodies
from kdissect.decode.decoder import Decoder
from kdissect.decode.session import Session
from kdissect.events import Frame, Message
from kdissect.kafka.headers import parse_request_header, parse_response_header
from kdissect.records import decode_records
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import BUILTIN

NO_TIME = datetime.timedelta(0)
NOW = 1_700_000_000_000


def _records(batches: int, per_batch: int) -> Records:
    data = b"".join(
        encode_batch(
            [Draft(b"key-%d" % i, b"value " * 10 + bytes([i]), (("trace", b"abc"),), NOW + i) for i in range(per_batch)],
            base_offset=b * per_batch,
        )
        for b in range(batches)
    )
    return Records(data)


def _metadata() -> MetadataResponse:
    brokers = tuple(MetadataResponseBroker(node_id=i, host=f"broker-{i}.example.com", port=9092, rack=f"rack-{i}") for i in range(3))
    topics = tuple(
        MetadataResponseTopic(
            error_code=ErrorCode.none,
            name=f"topic-{t:03d}",
            topic_id=uuid.UUID(int=t + 1),
            is_internal=False,
            partitions=tuple(
                MetadataResponsePartition(
                    error_code=ErrorCode.none,
                    partition_index=p,
                    leader_id=p % 3,
                    leader_epoch=5,
                    replica_nodes=(0, 1, 2),
                    isr_nodes=(0, 1, 2),
                    offline_replicas=(),
                )
                for p in range(3)
            ),
            topic_authorized_operations=-2147483648,
        )
        for t in range(100)
    )
    return MetadataResponse(throttle_time=NO_TIME, brokers=brokers, cluster_id="cluster", controller_id=1, topics=topics)


def _produce() -> ProduceRequest:
    partition = PartitionProduceData(index=0, records=_records(1, 5))
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(TopicProduceData(name="orders", partition_data=(partition,)),),
    )


def _fetch() -> FetchResponse:
    partitions = tuple(
        PartitionData(
            partition_index=p,
            error_code=ErrorCode.none,
            high_watermark=100,
            last_stable_offset=100,
            log_start_offset=0,
            aborted_transactions=(),
            preferred_read_replica=-1,
            records=_records(3, 5),
        )
        for p in range(2)
    )
    return FetchResponse(
        throttle_time=NO_TIME,
        error_code=ErrorCode.none,
        session_id=7,
        responses=(FetchableTopicResponse(topic="orders", partitions=partitions),),
    )


def _api_versions() -> ApiVersionsResponse:
    keys = tuple(
        ApiVersion(api_key=k, min_version=BUILTIN.apis[k].min_version, max_version=BUILTIN.apis[k].max_version)
        for k in sorted(BUILTIN.apis)[:60]
    )
    return ApiVersionsResponse(error_code=ErrorCode.none, api_keys=keys, throttle_time=NO_TIME)


# (label, api key, version, direction, kio entity, kafka-python class)
CASES = [
    ("Metadata v12 response (100 topics)", 3, 12, "response", _metadata(), kp_metadata.MetadataResponse),
    ("Produce v9 request (5 records)", 0, 9, "request", _produce(), kp_produce.ProduceRequest),
    ("Fetch v12 response (6 batches)", 1, 12, "response", _fetch(), kp_fetch.FetchResponse),
    (
        "Heartbeat v4 request",
        12,
        4,
        "request",
        HeartbeatRequest(group_id="group", generation_id=3, member_id="member-1", group_instance_id=None),
        kp_group.HeartbeatRequest,
    ),
    (
        "Heartbeat v4 response",
        12,
        4,
        "response",
        HeartbeatResponse(throttle_time=NO_TIME, error_code=ErrorCode.none),
        kp_group.HeartbeatResponse,
    ),
    ("ApiVersions v3 response", 18, 3, "response", _api_versions(), kp_api_versions.ApiVersionsResponse),
]


def write(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def request_header(api_key: int, version: int) -> bytes:
    head = struct.pack(">hhih", api_key, version, 1, 5) + b"bench"
    return head + (b"\x00" if BUILTIN.request_header_version(api_key, version) == 2 else b"")


def response_header(api_key: int, version: int) -> bytes:
    return struct.pack(">i", 1) + (b"\x00" if BUILTIN.response_header_version(api_key, version) == 1 else b"")


def full_decoder_call(api_key: int, version: int, direction: str, body: bytes) -> Callable[[], Any]:
    """One message through `Decoder` as the core calls it: frame and parsed header in, decoded message out."""
    decoder = Decoder(BUILTIN)
    session = Session()
    request_data = request_header(api_key, version) + (body if direction == "request" else b"")
    request = Message(Frame(request_data, len(request_data), 0, 0, 0, 1, 1), parse_request_header(request_data, BUILTIN))
    if direction == "request":
        return lambda: decoder.request(request, session)
    data = response_header(api_key, version) + body
    message = Message(Frame(data, len(data), 0, 0, 0, 2, 2), parse_response_header(data, api_key, version, BUILTIN))
    return lambda: decoder.response(message, request, session)


def calibrate(fn: Callable[[], Any], min_time: float) -> int:
    """How many calls take about `min_time` seconds."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 4:
            return max(1, int(n * (min_time / elapsed)))
        n *= 4


def best_us(calls: list[Callable[[], Any]], repeats: int, min_time: float) -> list[float]:
    """Best time per call of each function, in microseconds.

    The functions take turns within each repeat, so a busy moment on the machine slows all of them rather
    than one: the ratios hold better than the absolute times.
    """
    counts = [calibrate(fn, min_time) for fn in calls]
    best = [float("inf")] * len(calls)
    for _ in range(repeats):
        for i, (fn, n) in enumerate(zip(calls, counts)):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / n)
    return [b * 1e6 for b in best]


def check(label: str, data: bytes, kio_value: Any, kp_value: Any, ours: Any) -> None:
    """Each decoder must have read the whole message before its time means anything."""
    body, diagnostics = ours
    assert diagnostics == [] and body.fields is not None, (label, diagnostics)
    assert kio_value[1] == len(data), (label, kio_value[1], len(data))
    assert kp_value is not None, label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", action="store_true", help="also profile kdissect's body decoding of the mix")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats (a smoke test, not a measurement)")
    args = parser.parse_args()
    repeats, min_time = (2, 0.02) if args.quick else (7, 0.1)

    import kio._kio_native as native

    reader_native = entity_reader.__module__ == native.__name__ or "kio_native" in repr(entity_reader)
    print(f"Python {sys.version.split()[0]}; kio reader: {'native extension ' + native.__name__ if reader_native else 'pure Python'}")
    print(f"µs per message, best of {repeats}; ratio = kdissect time / other time (>1: kdissect slower)\n")

    raw_bodies = CompiledBodies(BUILTIN, lambda buf, start, end: bytes(buf[start:end]))
    record_bodies = CompiledBodies(BUILTIN, lambda buf, start, end: decode_records(buf[start:end]))
    header = (
        f"{'message':36} {'bytes':>6} {'kio':>8} {'kafka-py':>9} {'body':>8} {'×kio':>6} {'×kp':>6}"
        f" {'+records':>9} {'Decoder':>8} {'×kio':>6} {'×kp':>6}"
    )
    print(header)
    print("-" * len(header))
    totals = [0.0] * 5
    mix: list[Callable[[], Any]] = []
    for label, api_key, version, direction, entity, kp_class in CASES:
        data = write(entity)
        read_kio = entity_reader(type(entity))
        kp_versioned = kp_class[version]
        check(label, data, read_kio(data, 0), kp_versioned.decode(data), raw_bodies.decode(api_key, version, direction, data, 0))
        body_args = (api_key, version, direction, data, 0)
        calls = [
            lambda read=read_kio, data=data: read(data, 0),
            lambda cls=kp_versioned, data=data: cls.decode(data),
            lambda a=body_args: raw_bodies.decode(*a),
            lambda a=body_args: record_bodies.decode(*a),
            full_decoder_call(api_key, version, direction, data),
        ]
        mix.append(calls[2])
        t = best_us(calls, repeats, min_time)
        totals = [a + b for a, b in zip(totals, t)]
        print(
            f"{label:36} {len(data):6} {t[0]:8.1f} {t[1]:9.1f} {t[2]:8.1f} {t[2] / t[0]:6.2f} {t[2] / t[1]:6.2f} "
            f"{t[3]:9.1f} {t[4]:8.1f} {t[4] / t[0]:6.2f} {t[4] / t[1]:6.2f}"
        )
    t = [x / len(CASES) for x in totals]
    print("-" * len(header))
    print(
        f"{'mix, one of each (mean)':36} {'':6} {t[0]:8.1f} {t[1]:9.1f} {t[2]:8.1f} {t[2] / t[0]:6.2f} {t[2] / t[1]:6.2f} "
        f"{t[3]:9.1f} {t[4]:8.1f} {t[4] / t[0]:6.2f} {t[4] / t[1]:6.2f}"
    )
    print(
        "\nmessages/s over the mix: "
        + ", ".join(
            f"{name} {1e6 / x:,.0f}"
            for name, x in zip(("kio", "kafka-python", "kdissect body", "kdissect +records", "kdissect Decoder"), t)
        )
    )

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(2000):
            for call in mix:
                call()
        profiler.disable()
        print("\nkdissect CompiledBodies.decode over the mix, 2000 rounds (cProfile, by own time):")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
