"""Round trips over every API key, version and direction: kdissect's encoder writes, its decoder must read back.

The encoder walks the schema tables; the decoder is generated from them. They share no code, so a round trip
checks one reading of the tables against another. The rest of the file holds the decoder to its promises on
bad bytes: truncation, lying counts, trailing bytes, unknown versions and keys never raise.
"""

from __future__ import annotations

import re
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import TRIPLES, body, definition, filled, filled_struct, flexible, normal, records_hook, struct_of

from kdissect.decode.body import CompiledBodies
from kdissect.schema import BUILTIN, DATA_SCHEMAS, Field, pick
from kdissect.schema.connect_protocol import CONNECT_ASSIGNMENT, CONNECT_METADATA
from kdissect.schema.encoder import Encoder
from kdissect.schema.generated_extras import STREAMS_SUBSCRIPTION_INFO
from kdissect.schema.streams_assignment import ASSIGNMENT_INFO
from kdissect.schema.tree import Struct, UnknownTag
from kdissect.schema.versioned import known_versions, read_versioned, version_width
from kdissect.wire import write_uvarint

DECODER = CompiledBodies(BUILTIN, records_hook)
ENCODER = Encoder()
SETTINGS = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))


def payload_struct(name: str, version: int):
    definition = pick(PAYLOADS[name], version)
    return struct_of(definition.fields, version, version in definition.flexible)


def encode(api_key: int, version: int, direction: str, value) -> bytes:
    message = definition(api_key, version, direction)
    return ENCODER.encode(message.fields, version, version in message.flexible, value)


def assert_round_trip(api_key: int, version: int, direction: str, value) -> None:
    data = encode(api_key, version, direction, value)
    decoded, diagnostics = DECODER.decode(api_key, version, direction, data, 0)
    assert diagnostics == []
    assert decoded.schema == definition(api_key, version, direction).name
    assert (decoded.version, decoded.assumed, decoded.raw) == (version, False, None)
    assert normal(decoded.fields, data) == normal(value)


def test_triples_cover_every_version():
    """736 = 368 (key, version) pairs, each a request and a response."""
    assert len(TRIPLES) == 736 and len(BUILTIN.apis) == 95


@pytest.mark.parametrize("api_key, version, direction", TRIPLES)
def test_round_trip_every_triple(api_key, version, direction):
    """Each triple gets Hypothesis' simplest body (nulls, empty arrays, no tags) and one random one."""

    @settings(max_examples=2, **SETTINGS)
    @given(body(api_key, version, direction))
    def check(value):
        assert_round_trip(api_key, version, direction, value)

    check()


@settings(max_examples=400, **SETTINGS)
@given(st.sampled_from(TRIPLES).flatmap(lambda t: st.tuples(st.just(t), body(*t))))
def test_round_trip_sampled(case):
    """More random bodies over triples drawn at random: deeper arrays, unknown tags, records batches."""
    (api_key, version, direction), value = case
    assert_round_trip(api_key, version, direction, value)


@pytest.mark.parametrize("api_key, version, direction", TRIPLES)
def test_round_trip_filled(api_key, version, direction):
    """Every field present, every tagged field set, arrays of two: no field left unexercised."""
    assert_round_trip(api_key, version, direction, filled(api_key, version, direction))


# ---------------------------------------------------------------------------------------- bad bytes

TRUNCATED = [
    (3, 12, "response"),  # Metadata: nested arrays, nullable strings, uuid
    (3, 5, "response"),  # Metadata, not flexible
    (0, 9, "request"),  # Produce: records inside nested arrays
    (1, 12, "response"),  # Fetch: tagged fields in partitions, records
    (18, 3, "response"),  # ApiVersions: tagged struct arrays at the top level
    (11, 7, "response"),  # JoinGroup: bytes metadata
    (8, 8, "request"),  # OffsetCommit
    (60, 1, "response"),  # DescribeCluster
]


def resolves(path: str, fields: tuple[Field, ...], version: int) -> bool:
    """Whether a diagnostic's path ("Topics[1].Partitions[0].ErrorCode") walks through real fields."""
    current = fields
    parts = path.split(".")
    for i, part in enumerate(parts):
        if part == "(tagged fields)":
            return i == len(parts) - 1
        name = re.sub(r"(\[\d+\])+$", "", part)
        found = next((f for f in current if f.name == name and version in f.versions), None)
        if found is None:
            return False
        if part != name and not found.array:
            return False
        current = found.fields
    return True


@pytest.mark.parametrize("api_key, version, direction", TRUNCATED)
def test_truncation_at_every_byte(api_key, version, direction):
    """A body cut anywhere gives one body.malformed naming a real field, and whatever was read; never raises."""
    message = definition(api_key, version, direction)
    data = encode(api_key, version, direction, filled(api_key, version, direction))
    prefix = b"\xaa" * 5  # a stand-in for the header: offsets are frame offsets
    for cut in range(len(data)):
        frame = prefix + data[:cut]
        decoded, diagnostics = DECODER.decode(api_key, version, direction, frame, len(prefix))
        assert [d.code for d in diagnostics] == ["body.malformed"], (cut, diagnostics)
        (d,) = diagnostics
        assert d.severity == "error" and d.scope == "frame"
        assert len(prefix) <= d.offset <= len(frame), (cut, d)
        assert resolves(d.path, message.fields, version), (cut, d.path)
        assert decoded.fields is not None and decoded.schema == message.name
    decoded, diagnostics = DECODER.decode(api_key, version, direction, prefix + data, len(prefix))
    assert diagnostics == []


def test_truncation_names_the_exact_field():
    """Cut inside the second topic's name of a Metadata v12 response: the path says so, and the first topic survives."""
    value = filled(3, 12, "response")
    data = encode(3, 12, "response", value)
    second = value["Topics"][1]["Name"].encode()
    cut = data.index(second) + 2
    decoded, (d,) = DECODER.decode(3, 12, "response", data[:cut], 0)
    assert d.code == "body.malformed" and d.path == "Topics[1].Name"
    assert normal(decoded.fields["Topics"][0]) == normal(value["Topics"][0])
    assert decoded.fields["Brokers"] is not None and len(decoded.fields["Brokers"]) == 2


def _peak_allocation(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


LYING = [
    # (description, api key, version, direction, body bytes, field the diagnostic names)
    ("int32 count of structs", 3, 5, "response", struct.pack(">ii", 0, 2**31 - 1), "Brokers"),
    (
        "int32 count of int32s",
        3,
        0,
        "response",
        struct.pack(">i", 0)
        + struct.pack(">i", 1)
        + struct.pack(">h", 0)
        + struct.pack(">h", 1)
        + b"t"
        + struct.pack(">i", 1)
        + struct.pack(">hii", 0, 0, 0)
        + struct.pack(">i", 2**31 - 1)
        + bytes(4),
        "Topics[0].Partitions[0].ReplicaNodes",
    ),
    ("int32 count of strings", 15, 0, "request", struct.pack(">i", 2**31 - 1), "Groups"),
    ("compact count of structs", 3, 12, "response", struct.pack(">i", 0) + write_uvarint(2**31), "Brokers"),
    (
        "compact count of uuids in a tagged field",
        63,
        1,
        "request",
        struct.pack(">iqq??", 1, 2, 3, False, False)
        + write_uvarint(1)
        + write_uvarint(0)
        + write_uvarint(9)
        + write_uvarint(2**31 - 1)
        + bytes(4),
        "OfflineLogDirs",
    ),
]


@pytest.mark.parametrize("what, api_key, version, direction, data, path", LYING, ids=[c[0] for c in LYING])
def test_huge_array_count_allocates_nothing(what, api_key, version, direction, data, path):
    """A count of 2**31-1 with a few bytes behind it is refused before anything is allocated for it."""
    result = []
    peak = _peak_allocation(lambda: result.append(DECODER.decode(api_key, version, direction, data, 0)))
    decoded, diagnostics = result[0]
    assert [d.code for d in diagnostics] == ["body.malformed"]
    assert diagnostics[0].path == path
    assert peak < 1 << 20, f"{peak} bytes allocated"


def test_trailing_bytes():
    """Bytes after a complete body are a warning at the offset where the body ended; the body is whole."""
    value = filled(12, 4, "request")
    data = encode(12, 4, "request", value)
    decoded, (d,) = DECODER.decode(12, 4, "request", data + b"\x00\x00\x00\x00", 0)
    assert (d.code, d.severity, d.offset) == ("body.trailing-bytes", "warning", len(data))
    assert "4 bytes" in d.message
    assert normal(decoded.fields) == normal(value)


def test_unknown_newer_version_decodes_as_newest():
    """A version past the tables is read with the newest schema, and says so."""
    newest = BUILTIN.apis[3].max_version
    value = filled(3, newest, "response")
    data = encode(3, newest, "response", value)
    decoded, (d,) = DECODER.decode(3, newest + 7, "response", data, 0)
    assert d.code == "body.assumed-version" and f"v{newest + 7}" in d.message and f"v{newest}" in d.message
    assert (decoded.version, decoded.assumed) == (newest, True)
    assert normal(decoded.fields, data) == normal(value)


def test_unknown_api_key_keeps_the_body_raw():
    unknown = max(BUILTIN.apis) + 1000
    frame = b"\x00\x01\x02header" + b"raw body"
    decoded, (d,) = DECODER.decode(unknown, 0, "request", frame, 9)
    assert d.code == "body.unknown-api" and d.offset == 9
    assert decoded.fields is None and decoded.raw == b"raw body"


def test_unknown_tags_keep_their_bytes_and_offsets():
    """An unknown tag in a flexible body comes back named, with its bytes and the frame offset of those bytes."""
    value = Struct(("unknown tag 200",), [UnknownTag(200, b"\x01\x02\x03", -1)])
    data = encode(12, 4, "response", Struct(("ThrottleTimeMs", "ErrorCode") + value.names, [0, 0] + value.values))
    decoded, diagnostics = DECODER.decode(12, 4, "response", b"hdr" + data, 3)
    assert diagnostics == []
    tag = decoded.fields["unknown tag 200"]
    assert (tag.tag, tag.data, tag.offset) == (200, b"\x01\x02\x03", 3 + len(data) - 3)
    assert flexible(12, 4, "response")


# ------------------------------------------------------------------------------------------ data schemas

PAYLOADS = {
    **DATA_SCHEMAS,
    "ConnectProtocolMetadata": CONNECT_METADATA,
    "ConnectProtocolAssignment": CONNECT_ASSIGNMENT,
    "SubscriptionInfoData": STREAMS_SUBSCRIPTION_INFO,
    "AssignmentInfo": ASSIGNMENT_INFO,
}
"""Every version-led payload: the consumer protocol and control records, Kafka Connect's group payloads and Kafka
Streams' user data."""
DATA_CASES = [(name, version) for name, definitions in sorted(PAYLOADS.items()) for version in known_versions(definitions)]


def encode_data(name: str, version: int, value: Struct) -> tuple[bytes, Struct]:
    """The bytes of a version-led data schema, and what `read_versioned` should make of them.

    KRaft records and Kafka Streams' user data hold their version as their first field (an int16, an int32); the
    others are preceded by an int16.
    """
    definition = pick(PAYLOADS[name], version)
    flex = version in definition.flexible
    width, in_band = version_width(definition)
    if in_band:
        value.values[0] = version
        return ENCODER.encode(definition.fields, version, flex, value), value
    data = struct.pack(">h", version) + ENCODER.encode(definition.fields, version, flex, value)
    return data, Struct(("Version",) + value.names, [version] + value.values)


@pytest.mark.parametrize("name, version", DATA_CASES)
def test_data_schema_round_trip(name, version):
    """Every payload, written and read back at each version with every field filled."""
    definition = pick(PAYLOADS[name], version)
    data, expected = encode_data(name, version, filled_struct(definition.fields, version, version in definition.flexible))
    got, problem = read_versioned(PAYLOADS[name], data)
    assert problem is None
    assert normal(got) == normal(expected)
    got, problem = read_versioned(PAYLOADS[name], data + b"\x00")
    assert problem == f"1 bytes follow the end of {definition.name}"
    if len(data) > 2:
        got, problem = read_versioned(PAYLOADS[name], data[:-1])
        assert problem is not None and got is not None


@settings(max_examples=300, **SETTINGS)
@given(st.sampled_from(DATA_CASES).flatmap(lambda case: st.tuples(st.just(case), payload_struct(*case))))
def test_data_schema_round_trip_random(case):
    """Random payloads of every kind and version: nulls, empty and longer arrays, any text."""
    (name, version), value = case
    data, expected = encode_data(name, version, value)
    got, problem = read_versioned(PAYLOADS[name], data)
    assert problem is None
    assert normal(got) == normal(expected)


def test_data_schema_newer_version_reads_as_newest():
    """A subscription from a newer client: its extra bytes are expected, not a problem."""
    name = "ConsumerProtocolSubscription"
    newest = max(v for n, v in DATA_CASES if n == name)
    definition = pick(DATA_SCHEMAS[name], newest)
    data, expected = encode_data(name, newest, filled_struct(definition.fields, newest, False))
    got, problem = read_versioned(DATA_SCHEMAS[name], struct.pack(">h", newest + 2) + data[2:] + b"new field")
    assert problem is None
    assert got["Version"] == newest + 2 and normal(got)[1][1:] == normal(expected)[1][1:]


def test_data_schema_too_short():
    assert read_versioned(DATA_SCHEMAS["ConsumerProtocolAssignment"], b"\x00") == (None, "1 bytes, too short to hold a version")


# ------------------------------------------------------------------------------------------------ spans

SPANS = CompiledBodies(BUILTIN, records_hook, spans=True)


def _struct_spans(value: Struct, path: str = ""):
    yield path, value
    for name, v in value.items():
        for i, item in enumerate(v if isinstance(v, list) else [v]):
            if isinstance(item, Struct):
                yield from _struct_spans(item, f"{path}{name}[{i}]." if isinstance(v, list) else f"{path}{name}.")


@pytest.mark.parametrize("api_key, version, direction", TRUNCATED[:5])
def test_spans_of_whole_bodies(api_key, version, direction):
    """With spans on, the same values, and every field's span inside the frame, in wire order."""
    data = encode(api_key, version, direction, filled(api_key, version, direction))
    decoded, diagnostics = SPANS.decode(api_key, version, direction, b"hdr" + data, 3)
    assert diagnostics == []
    assert normal(decoded.fields) == normal(DECODER.decode(api_key, version, direction, data, 0)[0].fields)
    for path, s in _struct_spans(decoded.fields):
        assert len(s.spans) == 2 * len(s.names), path
        edges = [s.span(n) for n in s.names]
        assert all(3 <= a <= b <= 3 + len(data) for a, b in edges), path
        assert all(b1 <= a2 for (_, b1), (a2, _) in zip(edges, edges[1:])), path


def test_spans_of_truncated_bodies_stay_parallel_to_names():
    """Cut a Metadata v12 response inside its first broker: the top-level struct names ThrottleTimeMs and Brokers."""
    data = encode(3, 12, "response", filled(3, 12, "response"))
    decoded, (d,) = SPANS.decode(3, 12, "response", data[:27], 0)
    assert d.code == "body.malformed" and d.path.startswith("Brokers[")
    for path, s in _struct_spans(decoded.fields):
        assert len(s.spans) == 2 * len(s.names), (path, s.names, s.spans)
        for name in s.names:
            span = s.span(name)
            assert span is None or 0 <= span[0] <= span[1] <= 27
    for cut in range(len(data)):
        decoded, _ = SPANS.decode(3, 12, "response", data[:cut], 0)
        for path, s in _struct_spans(decoded.fields) if decoded.fields is not None else ():
            assert len(s.spans) == 2 * len(s.names), (cut, path, s.names, s.spans)
