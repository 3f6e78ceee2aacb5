"""Independent oracles for the message decoder: other people's encoders write, kdissect reads, field by field.

- kio (Kafka 4.x trunk messages, its own code generator and writers): every request and response entity of
  every API and version it has; instances drawn by Hypothesis from kio's own type hints.
- kafka-python 3: its JSON-driven `ApiMessage` classes (its own copy of the specs, its own compiled encoders)
  and its older hand-written schemas in `kafka.protocol.old`, which owe nothing to the specs' JSON.
- tshark 4.0 on the public captures: api key, version, correlation id, client id, topic names, partition ids,
  error codes and the ApiVersions table, wherever tshark supports the version.

Records fields are kept as raw bytes here (the records decoder has its own oracles): what is checked is that
kdissect finds every field where the other encoder put it.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import importlib
import io
import pkgutil
import random
import shutil
import struct
import subprocess
import types
import typing
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import ZERO_UUID, definition, raw_records_hook

from kdissect.decode.body import CompiledBodies
from kdissect.decode.meaning import PARTITION_FIELDS
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import BUILTIN, DATA_SCHEMAS, Field, pick
from kdissect.schema.tree import Struct
from kdissect.schema.versioned import read_versioned

DECODER = CompiledBodies(BUILTIN, raw_records_hook)


def decode(api_key: int, version: int, direction: str, data: bytes) -> Struct:
    body, diagnostics = DECODER.decode(api_key, version, direction, data, 0)
    assert diagnostics == [], diagnostics
    assert body.version == version and not body.assumed
    return body.fields


def known(api_key: int, version: int) -> bool:
    return api_key in BUILTIN.apis and version in BUILTIN.apis[api_key].versions


def squash(name: str) -> str:
    return name.replace("_", "").lower()


def same_float(a: float, b: Any) -> bool:
    return isinstance(b, float) and struct.pack(">d", a) == struct.pack(">d", b)


# ================================================================================================ kio

kio_index = pytest.importorskip("kio.index")
from kio.schema.index import schema_name_map
from kio.serial import entity_writer
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import get_field_tag
from kio.static.constants import EntityType
from kio.static.primitive import Interval, Records

KIO_RENAMED = {
    # (api key, kio field): kdissect's name. The specs renamed these; the wire did not change.
    (28, "generation_id"): "GenerationIdOrMemberEpoch",  # TxnOffsetCommit v3+, renamed in Kafka 4
    (88, "acceptable_recovery_lag"): "AcceptableRecoveryLagLegacy",  # StreamsGroupHeartbeat v0 int32; v1 added an int64
}
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
KIO_ENTITIES = sorted(
    (name, version, et.name)
    for name, versions in schema_name_map.items()
    for version, kinds in versions.items()
    for et in (EntityType.request, EntityType.response)
    if et in kinds
)

kio_records = st.just(Records(b"")) | st.builds(
    lambda n: Records(encode_batch([Draft(b"k", b"v" * n, (), 1_700_000_000_000)])), st.integers(0, 5)
)


def kio_strategy(hint: Any) -> st.SearchStrategy[Any]:
    """A bounded strategy for a kio annotation: arrays of at most 3, timestamps and durations kio can write."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in typing.get_args(hint) if a is not type(None)]
        return st.none() | kio_strategy(inner)
    if origin is tuple:
        return st.lists(kio_strategy(typing.get_args(hint)[0]), max_size=3).map(tuple)
    if dataclasses.is_dataclass(hint):
        return kio_entity(hint)
    if hint is bool:
        return st.booleans()
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    if isinstance(hint, type) and issubclass(hint, Interval):
        return st.integers(hint.__low__, hint.__high__)
    if isinstance(hint, type) and issubclass(hint, datetime.timedelta):
        bound = 2**31 - 1 if "i32" in hint.__name__ else 2**45
        return st.integers(-bound, bound).map(lambda ms: datetime.timedelta(milliseconds=ms))
    if isinstance(hint, type) and issubclass(hint, datetime.datetime):
        return st.integers(0, 2**42).map(lambda ms: EPOCH + datetime.timedelta(milliseconds=ms))
    if hint is Records:
        return kio_records
    if isinstance(hint, type) and issubclass(hint, float):
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(hint, type) and issubclass(hint, str):
        return st.text(max_size=8)
    if isinstance(hint, type) and issubclass(hint, bytes):
        return st.binary(max_size=8)
    if hint is uuid.UUID:
        return st.uuids()
    raise AssertionError(f"no strategy for kio type {hint!r}")


_kio_cache: dict[type, st.SearchStrategy[Any]] = {}


def kio_entity(cls: type) -> st.SearchStrategy[Any]:
    if cls not in _kio_cache:
        hints = typing.get_type_hints(cls)
        _kio_cache[cls] = st.builds(cls, **{f.name: kio_strategy(hints[f.name]) for f in dataclasses.fields(cls)})
    return _kio_cache[cls]


def kio_expected(value: Any, kafka_type: str) -> Any:
    """What kio's writer puts on the wire for `value`, as kdissect reads it back."""
    if value is None:
        return {"uuid": ZERO_UUID, "datetime_i64": -1}.get(kafka_type)
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, bool):
        return value
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    for plain in (int, float, bytes, str):
        if isinstance(value, plain):
            return plain(value)
    raise AssertionError(f"unexpected kio value {value!r}")


def kio_compare(api_key: int, obj: Any, decoded: Struct, path: str = "") -> int:
    """Every kio field against kdissect's field of the same name; returns how many leaf values were compared."""
    assert isinstance(decoded, Struct), (path, decoded)
    matched, compared = set(), 0
    for kf in dataclasses.fields(obj):
        value = getattr(obj, kf.name)
        names = [n for n in decoded.names if squash(n) in (squash(kf.name), squash(kf.name) + "ms")]
        if not names and (api_key, kf.name) in KIO_RENAMED and KIO_RENAMED[api_key, kf.name] in decoded.names:
            names = [KIO_RENAMED[api_key, kf.name]]
        if not names:
            assert get_field_tag(kf) is not None, f"{path}{kf.name}: kdissect has no such field, only {decoded.names}"
            default = kf.default if kf.default is not dataclasses.MISSING else get_tagged_field_default(kf)
            assert value == default, f"{path}{kf.name}: absent from kdissect's body, but kio wrote {value!r}"
            continue
        (name,) = names
        matched.add(name)
        compared += kio_value(api_key, value, decoded[name], kf.metadata.get("kafka_type", ""), path + name)
    assert set(decoded.names) == matched, f"{path}: kdissect fields kio does not have: {set(decoded.names) - matched}"
    return compared


def kio_value(api_key: int, value: Any, got: Any, kafka_type: str, path: str) -> int:
    if isinstance(value, tuple):
        assert isinstance(got, list) and len(got) == len(value), (path, value, got)
        return sum(kio_value(api_key, v, g, kafka_type, f"{path}[{i}]") for i, (v, g) in enumerate(zip(value, got)))
    if dataclasses.is_dataclass(value):
        return kio_compare(api_key, value, got, path + ".")
    want = kio_expected(value, kafka_type)
    if isinstance(want, float):
        assert same_float(want, got), (path, want, got)
    else:
        assert type(got) is type(want) and got == want, (path, want, got)
    return 1


@pytest.mark.parametrize("name, version, direction", KIO_ENTITIES)
def test_kio_writes_kdissect_reads(name, version, direction):
    """kio writes a random instance of its entity; kdissect's reading matches it field for field."""
    cls = kio_index.load_entity_schema(name, version, EntityType[direction])
    api_key = int(cls.__api_key__)
    assert known(api_key, version), f"kio has {name} v{version}, kdissect's tables do not"
    write = entity_writer(cls)

    @settings(max_examples=5, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(kio_entity(cls))
    def check(obj):
        out = io.BytesIO()
        write(out, obj)
        kio_compare(api_key, obj, decode(api_key, version, direction, out.getvalue()))

    check()


KIO_DATA = sorted(
    (name, version) for name, versions in schema_name_map.items() for version, kinds in versions.items() if EntityType.data in kinds
)


@pytest.mark.parametrize("name, version", KIO_DATA)
def test_kio_data_schemas(name, version):
    """Consumer-protocol payloads and control record values written by kio, read by `read_versioned`.

    kio writes the struct alone; the version goes before it, except for the KRaft records, whose first field
    is their version.
    """
    cls = kio_index.load_entity_schema(name, version, EntityType.data)
    definitions = DATA_SCHEMAS[cls.__name__]
    in_band = pick(definitions, version).fields[0].name == "Version"
    write = entity_writer(cls)

    @settings(max_examples=5, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(kio_entity(cls))
    def check(obj):
        if in_band:
            obj = dataclasses.replace(obj, version=version)
        out = io.BytesIO()
        write(out, obj)
        data = out.getvalue() if in_band else struct.pack(">h", version) + out.getvalue()
        got, problem = read_versioned(definitions, data)
        assert problem is None
        if not in_band:
            assert got["Version"] == version
            got = Struct(got.names[1:], got.values[1:])
        kio_compare(-1, obj, got)

    check()


def test_kio_covers_what_it_claims():
    """kio 0.6.x models 302 (API, version) pairs, each a request and a response: all are compared above."""
    assert len(KIO_ENTITIES) >= 600
    assert {d for _, _, d in KIO_ENTITIES} == {"request", "response"}


# ======================================================================================= kafka-python

kafka_protocol = pytest.importorskip("kafka.protocol")
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.old import types as old_types
from kafka.protocol.old.api import Request as OldRequest
from kafka.protocol.old.api import Response as OldResponse
from kafka.protocol.schemas.fields.codecs import BitField

for _module in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
    importlib.import_module(_module.name)


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


KP_RENAMED = {
    # (api key, kafka-python field): kdissect's possible names
    (28, "generation_id"): {"GenerationIdOrMemberEpoch"},  # renamed in Kafka 4's specs; kafka-python has the 3.x name
    (3, "authorized_operations"): {"ClusterAuthorizedOperations", "TopicAuthorizedOperations"},  # kafka-python's bitfield patch
    (60, "authorized_operations"): {"ClusterAuthorizedOperations"},
}
KP_MESSAGES = sorted(
    (
        (c.API_KEY, v, "request" if c.is_request() else "response", c)
        for c in {c for c in _subclasses(ApiMessage) if getattr(c, "_class_version", None) is None}
        for v in range(c.valid_versions[0], c.valid_versions[1] + 1)
    ),
    key=lambda t: t[:3],
)
KP_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


class KafkaPythonGenerator:
    """Random values for kafka-python's own field objects: edge integers, non-ASCII text, nulls where allowed."""

    def __init__(self, seed: str) -> None:
        self.r = random.Random(seed)

    def integer(self, bits: int, signed: bool = True) -> int:
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
        return self.r.choice([lo, hi, 0, -1 if signed else 1, self.r.randint(lo, hi)])

    def simple(self, f: Any) -> Any:
        t = f._type_str
        if f._type is BitField:
            return self.r.choice([None, set(), {0, 3, 30}])
        if t in KP_INT_RANGES:
            return self.integer(KP_INT_RANGES[t])
        if t == "uint16":
            return self.integer(16, signed=False)
        if t == "float64":
            return self.r.choice([0.0, -0.0, 1.5, float("inf"), self.r.uniform(-1e300, 1e300)])
        if t == "bool":
            return self.r.random() < 0.5
        if t == "uuid":
            return uuid.UUID(int=self.r.getrandbits(128))
        if t == "string":
            return self.r.choice(["", "é", f"topic-{self.r.randint(0, 99)}", "日本語"])
        if t in ("bytes", "records"):
            return bytes(self.r.getrandbits(8) for _ in range(self.r.randint(0, 6)))
        raise AssertionError(f"no generator for kafka-python type {t}")

    def value(self, f: Any, version: int) -> Any:
        if f.nullable_for_version_q(version) and self.r.random() < 0.2:
            return None
        if f.is_struct_array():
            return [self.struct(f, version) for _ in range(self.r.randint(0, 3))]
        if f.is_array():
            return [self.simple(f.array_of) for _ in range(self.r.randint(0, 3))]
        if f.is_struct():
            return self.struct(f, version)
        return self.simple(f)

    def fields(self, f: Any, version: int) -> dict[str, Any]:
        return {sub.name: self.value(sub, version) for sub in f.fields.values() if sub.for_version_q(version)}

    def struct(self, f: Any, version: int) -> Any:
        return f.data_class(version=version, **self.fields(f, version))


def kp_compare(api_key: int, obj: Any, decoded: Struct, version: int, path: str = "") -> int:
    assert isinstance(decoded, Struct), (path, decoded)
    matched, compared = set(), 0
    for kf in (f for f in obj._struct.fields.values() if f.for_version_q(version)):
        names = [n for n in decoded.names if squash(n) == squash(kf.name)]
        names = names or [n for n in decoded.names if n in KP_RENAMED.get((api_key, kf.name), ())]
        value = getattr(obj, kf.name)
        if not names:
            assert kf.tagged_field_q(version), f"{path}{kf.name}: kdissect has no such field, only {decoded.names}"
            assert value == kf.default, f"{path}{kf.name}: absent from kdissect's body, but kafka-python wrote {value!r}"
            continue
        (name,) = names
        matched.add(name)
        compared += kp_value(api_key, kf, value, decoded[name], version, path + name)
    assert set(decoded.names) == matched, f"{path}: kdissect fields kafka-python does not have: {set(decoded.names) - matched}"
    return compared


def kp_value(api_key: int, kf: Any, value: Any, got: Any, version: int, path: str) -> int:
    if value is None and kf.is_array():
        assert got is None, (path, got)
        return 1
    if kf.is_struct_array() or kf.is_array():
        assert isinstance(got, list) and len(got) == len(value), (path, value, got)
        if kf.is_struct_array():
            return sum(kp_compare(api_key, v, g, version, f"{path}[{i}].") for i, (v, g) in enumerate(zip(value, got)))
        return sum(kp_value(api_key, kf.array_of, v, g, version, f"{path}[{i}]") for i, (v, g) in enumerate(zip(value, got)))
    if kf.is_struct():
        if value is None:
            assert got is None, (path, got)
            return 1
        return kp_compare(api_key, value, got, version, path + ".")
    if getattr(kf, "_type", None) is BitField:
        bits = {31} if value is None else value
        want = sum(1 << b for b in bits)
        assert got == (want - 2**32 if want >= 2**31 else want), (path, value, got)
        return 1
    if kf._type_str == "uuid":
        value = str(value or uuid.UUID(int=0))
    if isinstance(value, float):
        assert same_float(value, got), (path, value, got)
    else:
        assert type(got) is type(value) and got == value, (path, value, got)
    return 1


@pytest.mark.parametrize("api_key, version, direction, cls", KP_MESSAGES, ids=lambda x: getattr(x, "__name__", x))
def test_kafka_python_messages(api_key, version, direction, cls):
    """kafka-python's ApiMessage encoder writes four random messages; kdissect reads each back field for field."""
    assert known(api_key, version), f"kafka-python has {cls.__name__} v{version}, kdissect's tables do not"
    generate = KafkaPythonGenerator(f"{cls.__name__}-{version}")
    for _ in range(4):
        obj = cls[version](**generate.fields(cls._struct, version))
        data = bytes(obj.encode(version=version))
        kp_compare(api_key, obj, decode(api_key, version, direction, data), version)


OLD_SKIPS = {
    # kafka-python's own mistakes: its bytes are not the Kafka message, so there is nothing to compare
    "DescribeAclsRequest_v2": "kafka-python reuses the v1 schema, but v2 is flexible (compact strings, tagged fields)",
    "DescribeAclsResponse_v2": "kafka-python reuses the v1 schema, but v2 is flexible (compact strings, tagged fields)",
    "DescribeLogDirsRequest_v0": "kafka-python declares Partitions as one int32; the spec has []int32",
}
OLD_CLASSES = sorted(
    (
        c
        for c in set(_subclasses(OldRequest)) | set(_subclasses(OldResponse))
        if isinstance(getattr(c, "API_KEY", None), int)
        and isinstance(getattr(c, "API_VERSION", None), int)
        and isinstance(getattr(c, "SCHEMA", None), old_types.Schema)
    ),
    key=lambda c: (c.API_KEY, c.API_VERSION, c.__name__),
)


def old_generate(t: Any, r: random.Random) -> Any:
    if isinstance(t, old_types.Schema):
        return tuple(old_generate(f, r) for f in t.fields)
    if isinstance(t, old_types.Array):  # and CompactArray
        return [old_generate(t.array_of, r) for _ in range(r.randint(0, 3))]
    if t is old_types.TaggedFields:
        return {}
    bits = {old_types.Int8: 8, old_types.Int16: 16, old_types.Int32: 32, old_types.Int64: 64}.get(t)
    if bits:
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        return r.choice([lo, hi, 0, r.randint(lo, hi)])
    if t is old_types.Float64:
        return r.choice([0.0, -2.5, float("-inf")])
    if t is old_types.Boolean:
        return r.random() < 0.5
    if t is old_types.UUID:
        return uuid.UUID(int=r.getrandbits(128))
    if isinstance(t, old_types.String):  # and CompactString
        return r.choice(["", "é", "topic", "日本"])
    if t in (old_types.Bytes, old_types.CompactBytes):
        return bytes(r.getrandbits(8) for _ in range(r.randint(0, 5)))
    if t is old_types.BitField:
        return {1, 4}
    raise AssertionError(f"no generator for {t!r}")


def old_flat(t: Any, value: Any) -> list:
    """kafka-python's hand-written value as a flat list of typed leaves, arrays kept as nested lists.

    Struct nesting is not on the wire, so it is flattened on both sides: kafka-python writes Metadata v0-8 topics
    as an array of strings where the spec has an array of one-string structs, and nests CreatePartitions'
    count and assignments in a sub-schema the spec does not have.
    """
    if isinstance(t, old_types.Schema):
        return [leaf for f, v in zip(t.fields, value) if f is not old_types.TaggedFields for leaf in old_flat(f, v)]
    if isinstance(t, old_types.Array):
        return [("array", None if value is None else [old_flat(t.array_of, v) for v in value])]
    if t is old_types.UUID:
        value = str(value)
    if t is old_types.BitField:
        value = sum(1 << b for b in value)
    return [(type(value).__name__, struct.pack(">d", value) if isinstance(value, float) else value)]


def ours_flat(value: Any) -> list:
    if isinstance(value, Struct):
        return [leaf for v in value.values for leaf in ours_flat(v)]
    if isinstance(value, list):
        return [("array", [ours_flat(v) for v in value])]
    return [(type(value).__name__, struct.pack(">d", value) if isinstance(value, float) else value)]


@pytest.mark.parametrize("cls", OLD_CLASSES, ids=lambda c: c.__name__)
def test_kafka_python_hand_written_schemas(cls):
    """kafka-python's pre-JSON schemas, written by hand: the same values, leaf for leaf, in wire order."""
    if cls.__name__ in OLD_SKIPS:
        pytest.skip(OLD_SKIPS[cls.__name__])
    direction = "response" if issubclass(cls, OldResponse) else "request"
    assert known(cls.API_KEY, cls.API_VERSION)
    r = random.Random(cls.__name__)
    for _ in range(4):
        values = old_generate(cls.SCHEMA, r)
        decoded = decode(cls.API_KEY, cls.API_VERSION, direction, cls(*values).encode())
        assert ours_flat(decoded) == old_flat(cls.SCHEMA, values)


@pytest.mark.parametrize("name", sorted(OLD_SKIPS))
def test_kafka_python_skips_are_still_wrong(name):
    """The skipped kafka-python schemas really disagree with the spec: if kafka-python fixes them, unskip."""
    (cls,) = [c for c in OLD_CLASSES if c.__name__ == name]
    direction = "response" if issubclass(cls, OldResponse) else "request"
    flexible = cls.API_VERSION in definition(cls.API_KEY, cls.API_VERSION, direction).flexible
    has_tags = cls.SCHEMA.has_tagged_fields()
    partitions_scalar = name == "DescribeLogDirsRequest_v0" and cls.SCHEMA.fields[0].array_of.fields[1] is old_types.Int32
    assert (flexible and not has_tags) or partitions_scalar


# ============================================================================================= tshark

CAPTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "captures-public"
TSHARK = shutil.which("tshark")
T_FIELDS = [
    "tcp.srcport",
    "tcp.dstport",
    "kafka.request_key",
    "kafka.request.version",
    "kafka.response.version",
    "kafka.correlation_id",
    "kafka.client_id",
    "kafka.topic_name",
    "kafka.partition_id",
    "kafka.error",
    "kafka.api_versions.api_key",
    "kafka.api_versions.min_version",
    "kafka.api_versions.max_version",
    "_ws.expert.message",
]


def tshark_rows(path: Path) -> list[dict[str, list[str]]]:
    command = [
        TSHARK,
        "-r",
        str(path),
        "-d",
        "tcp.port==36333,kafka",
        "-Y",
        "kafka",
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=\x1f",
    ]
    for f in T_FIELDS:
        command += ["-e", f]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120).stdout
    return [{k: [x for x in v.split("\x1f") if x] for k, v in zip(T_FIELDS, line.split("\t"))} for line in out.splitlines()]


def leaves(value: Struct, fields: tuple[Field, ...], version: int):
    """(field, value) for every primitive value of a body, in wire order."""
    by_name = {f.name: f for f in fields if version in f.versions}
    for name, v in value.items():
        f = by_name.get(name)
        if f is None or v is None:
            continue
        for item in v if f.array else [v]:
            if f.is_struct:
                yield from leaves(item, f.fields, version)
            else:
                yield f, item


def facts(body: Any, api_key: int, direction: str) -> dict[str, list]:
    """What tshark's kafka.topic_name, kafka.partition_id and kafka.error list for one message."""
    out: dict[str, list] = {"topics": [], "partitions": [], "errors": [], "api_versions": []}
    for f, v in leaves(body.fields, definition(api_key, body.version, direction).fields, body.version):
        if f.entity == "topicName" and f.type == "string":
            out["topics"].append(v)
        elif f.type == "int32" and f.name in PARTITION_FIELDS:
            out["partitions"].append(v)
        elif f.type == "int16" and f.name.endswith("ErrorCode"):
            out["errors"].append(v)
    if api_key == 18 and direction == "response":
        out["api_versions"] = [(k["ApiKey"], k["MinVersion"], k["MaxVersion"]) for k in body.fields["ApiKeys"]]
    return out


def kdissect_messages(path: Path) -> dict[tuple[int, int, str], tuple[Any, Any]]:
    from kdissect.capture import open_capture
    from kdissect.dissector import Options, make_dissector
    from kdissect.events import Exchange

    dissector = make_dissector(Options(ports=frozenset({9092, 36333})))
    out = {}
    with open_capture(path) as capture:
        for e in dissector.run(capture.packets()):
            if isinstance(e, Exchange):
                for side, message in (("request", e.request), ("response", e.response)):
                    if message is not None:
                        out[e.connection.client.port, e.correlation_id, side] = (e, message)
    return out


def tshark_supports(row: dict[str, list[str]], api_key: int | None, side: str) -> bool:
    """tshark 4.0 decoded this body: not Malformed, not an unsupported version of its own API, request known.

    An ApiVersions response lists "Unsupported X version" for every newer API in the broker's table: those are
    about the table's entries, not about the message.
    """
    experts = " ".join(row["_ws.expert.message"])
    if "Malformed" in experts or "Request missing" in experts:
        return False
    return "Unsupported" not in experts or (api_key == 18 and side == "response")


CAPTURE_FILES = sorted(p.name for p in CAPTURES.glob("*.pcap*")) if CAPTURES.is_dir() else []


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed: no tshark oracle")
@pytest.mark.skipif(not CAPTURE_FILES, reason=f"the public captures are not here ({CAPTURES} is absent)")
@pytest.mark.parametrize("name", CAPTURE_FILES)
def test_tshark_agrees(name):
    """Each Kafka message tshark finds, kdissect finds with the same header; where tshark can read the body,
    the same topic names, partition ids, error codes and ApiVersions table, in wire order."""
    path = CAPTURES / name
    ours = kdissect_messages(path)
    rows = tshark_rows(path)
    assert rows, "tshark found no Kafka message"
    compared = 0
    for row in rows:
        side = "request" if row["kafka.request_key"] else "response"
        port = int((row["tcp.srcport"] if side == "request" else row["tcp.dstport"])[0])
        (correlation_id,) = map(int, row["kafka.correlation_id"])
        exchange, message = ours[port, correlation_id, side]
        if side == "request":
            assert [exchange.api_key, exchange.api_version] == [int(row["kafka.request_key"][0]), int(row["kafka.request.version"][0])]
            assert (exchange.client_id or "") == (row["kafka.client_id"] or [""])[0]
        elif row["kafka.response.version"]:
            assert exchange.api_version == int(row["kafka.response.version"][0])
        if not tshark_supports(row, exchange.api_key, side):
            continue
        got = facts(message.body, exchange.api_key, side)
        assert got["topics"] == row["kafka.topic_name"], (side, correlation_id)
        assert got["partitions"] == [int(x) for x in row["kafka.partition_id"]], (side, correlation_id)
        assert got["errors"] == [int(x) for x in row["kafka.error"]], (side, correlation_id)
        table = list(zip(*(map(int, row[f"kafka.api_versions.{k}"]) for k in ("api_key", "min_version", "max_version"))))
        assert got["api_versions"] == table, (side, correlation_id)
        compared += 1
    assert len(rows) == len(ours)
