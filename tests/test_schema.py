"""The schema tables: reproducible from the specs, complete, and right on facts a decoder relies on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdissect import schema
from kdissect.schema import (
    BUILTIN,
    ERROR_CODES,
    REQUEST_HEADER,
    RESPONSE_HEADER,
    Field,
    MessageSpec,
    Versions,
    generate,
    pick,
    specs,
)
from kdissect.schema.model import NEVER, OPEN, PRIMITIVES

GENERATED = Path(generate.__file__).with_name("generated.py")
EXTRAS = Path(generate.__file__).with_name("generated_extras.py")


def field(message: MessageSpec, path: str) -> Field:
    """The field at a dotted path such as "TopicData.PartitionData.Records"."""
    fields = message.fields
    for name in path.split("."):
        found = next((f for f in fields if f.name == name), None)
        assert found is not None, f"{message.name} has no {path}"
        fields = found.fields
    return found


def every_field(fields: tuple[Field, ...], seen: set[int] | None = None):
    seen = set() if seen is None else seen
    for f in fields:
        yield f
        if id(f.fields) not in seen:  # common structs are shared: walk each once
            seen.add(id(f.fields))
            yield from every_field(f.fields, seen)


def all_messages():
    for a in BUILTIN.apis.values():
        yield from a.requests
        yield from a.responses
    yield from REQUEST_HEADER
    yield from RESPONSE_HEADER
    for definitions in schema.DATA_SCHEMAS.values():
        yield from definitions


# ---------------------------------------------------------------------------------------------- generator


def test_generated_modules_are_reproducible_from_the_specs(tmp_path):
    specs = generate.default_specs()
    if not specs.is_dir():
        pytest.skip(f"specs folder not present ({specs.name}); set KDISSECT_SPECS to check reproducibility")
    out, extras = tmp_path / "generated.py", tmp_path / "generated_extras.py"
    assert generate.main(["--specs", str(specs), "--output", str(out), "--extras-output", str(extras)]) == 0
    for made, kept in ((out, GENERATED), (extras, EXTRAS)):
        assert made.read_text(encoding="utf-8") == kept.read_text(encoding="utf-8"), (
            f"{kept.name} differs from the generator's output: run `python -m kdissect.schema.generate`"
        )


def test_header_names_the_command_and_the_snapshots():
    head = GENERATED.read_text(encoding="utf-8")[:1000]
    assert "python -m kdissect.schema.generate" in head
    assert "Do not edit by hand" in head
    assert "trunk: apache/kafka " in head and "3.9: apache/kafka " in head
    assert "sha256" in head
    head = EXTRAS.read_text(encoding="utf-8")[:1000]
    assert "python -m kdissect.schema.generate" in head and "Do not edit by hand" in head
    assert "trunk: apache/kafka " in head and "extras/streams" in head and "sha256" in head


def test_comment_stripping_keeps_slashes_inside_strings_and_every_line():
    text = '// license\n{ "a": "x // y", // trailing\n  "b": "q\\"//" }\n'
    assert specs.strip_comments(text).count("\n") == text.count("\n")
    assert specs.strip_comments(text).split() == ["{", '"a":', '"x', "//", 'y",', '"b":', '"q\\"//"', "}"]


def test_block_comments_go_too_as_kafkas_reader_takes_them():
    """extras/streams/SubscriptionInfoData.json fences its old fields with /***** ... *****/ lines."""
    text = '{ "a": "x /* y */", /***** only 1-6\n *****/ "b": 1 }\n'
    assert specs.strip_comments(text).count("\n") == text.count("\n")
    assert specs.strip_comments(text).split() == ["{", '"a":', '"x', "/*", "y", '*/",', '"b":', "1", "}"]


def test_a_tagged_field_without_versions_takes_its_tagged_versions():
    """Kafka's generator (FieldSpec) defaults versions to taggedVersions: TransactionLogValue relies on it."""
    text = """{"type": "data", "name": "Thing", "validVersions": "0-1", "flexibleVersions": "1+", "fields": [
        {"name": "A", "type": "int64", "versions": "0+"},
        {"name": "B", "type": "int64", "taggedVersions": "1+", "tag": 0, "default": -1}]}"""
    builder = specs.MessageBuilder(specs.Document("Thing.json", text), "test")
    message = builder.build("data")
    assert builder.problems == []
    assert message.fields[1].versions == message.fields[1].tagged == Versions(1, OPEN)


def test_defaults_keep_the_specs_string_form():
    assert specs.spec_default(False) == "false"
    assert specs.spec_default(-1) == "-1"
    assert specs.spec_default("0x7fffffff") == "0x7fffffff"


# ---------------------------------------------------------------------------------------------- coverage


def test_union_covers_95_api_keys_and_368_versions():
    assert sorted(BUILTIN.apis) == list(range(95))
    assert sum(len(a.versions) for a in BUILTIN.apis.values()) == 368
    for key, a in BUILTIN.apis.items():
        assert a.key == key
        assert list(a.versions) == sorted(set(a.versions))
        for version in a.versions:
            assert a.request(version) is not None, (key, version)
            assert a.response(version) is not None, (key, version)


def test_trunk_comes_first_and_older_definitions_only_add_versions():
    for a in BUILTIN.apis.values():
        for definitions in (a.requests, a.responses):
            sources = [m.source for m in definitions]
            assert sources in (["trunk"], ["3.9"], ["trunk", "3.9"])
            if sources == ["3.9"]:
                assert a.key in (4, 5, 6, 7)  # ZooKeeper APIs: "none" in trunk


def test_api_names():
    assert BUILTIN.names[0] == "Produce"
    assert BUILTIN.names[18] == "ApiVersions"
    assert BUILTIN.names[94] == "UnregisterController"
    assert BUILTIN.names[74] == "ListConfigResources"  # ListClientMetricsResources in 3.9
    assert BUILTIN.api(0).name == "Produce"
    assert BUILTIN.api(999) is None


def test_struct_fields_are_resolved():
    for message in all_messages():
        for f in every_field(message.fields):
            if f.type not in PRIMITIVES:
                assert f.fields, f"{message.name}.{f.name}: struct {f.type} has no fields"


# ---------------------------------------------------------------------------------------------- facts


def test_tagged_fields_only_in_flexible_versions():
    """Decoders may read tagged fields from the tag buffer alone: none is tagged in a non-flexible version."""
    for message in all_messages():
        for f in every_field(message.fields):
            if f.tagged:
                assert f.tag is not None and f.tagged.lo >= message.flexible.lo, (message.name, f.name)
                assert f.tagged == f.versions, (message.name, f.name)


def test_produce_v0_to_v2_come_from_3_9():
    produce = BUILTIN.apis[0]
    assert produce.versions == tuple(range(14))
    assert {produce.request(v).source for v in (0, 1, 2)} == {"3.9"}
    assert produce.request(3).source == "trunk"
    assert produce.response(2).source == "3.9"
    assert produce.request(3).valid == Versions(3, 13)


def test_fetch_versions_and_flexibility():
    fetch = BUILTIN.apis[1]
    assert fetch.versions == tuple(range(19))
    assert fetch.request(18).flexible == Versions(12, OPEN)
    assert not fetch.flexible(11) and fetch.flexible(12) and fetch.flexible(18)
    assert fetch.request(3).source == "3.9"


def test_api_versions_and_zookeeper_apis():
    assert BUILTIN.apis[18].versions == tuple(range(6))
    leader_and_isr = BUILTIN.apis[4]
    assert leader_and_isr.name == "LeaderAndIsr"
    assert leader_and_isr.versions == tuple(range(8))
    assert [m.source for m in leader_and_isr.requests] == ["3.9"]


def test_share_group_v0_exists_only_unstable_in_3_9():
    for key in (76, 77, 78, 79):
        v0 = BUILTIN.apis[key].request(0)
        assert v0.source == "3.9" and v0.latest_unstable
        assert BUILTIN.apis[key].request(1).source == "trunk"


def test_request_header_v0_has_no_client_id():
    assert pick(REQUEST_HEADER, 1).source == "trunk"
    v0 = pick(REQUEST_HEADER, 0)
    assert v0.source == "3.9"
    present = [f.name for f in v0.fields if 0 in f.versions]
    assert present == ["RequestApiKey", "RequestApiVersion", "CorrelationId"]
    client_id = field(v0, "ClientId")
    assert client_id.flexible == NEVER  # never a compact string, even in header v2
    assert field(pick(REQUEST_HEADER, 2), "ClientId").flexible == NEVER
    assert [m.valid for m in RESPONSE_HEADER] == [Versions(0, 1)]


def test_tagged_fields_carry_their_tags():
    cluster_id = field(BUILTIN.apis[1].request(12), "ClusterId")
    assert (cluster_id.tag, cluster_id.tagged) == (0, Versions(12, OPEN))
    assert cluster_id.nullable == Versions(12, OPEN)
    assert cluster_id.default == "null"
    features = field(BUILTIN.apis[18].response(3), "SupportedFeatures")
    assert (features.tag, features.tagged, features.array) == (0, Versions(3, OPEN), True)
    assert field(BUILTIN.apis[18].response(3), "ZkMigrationReady").tag == 3


def test_field_facts():
    produce = BUILTIN.apis[0].request(9)
    transactional_id = field(produce, "TransactionalId")
    assert transactional_id.nullable == Versions(3, OPEN)
    assert transactional_id.entity == "transactionalId"
    name = field(produce, "TopicData.Name")
    assert name.map_key and name.versions == Versions(0, 12)
    records = field(produce, "TopicData.PartitionData.Records")
    assert records.type == "records" and not records.is_struct
    topic_data = field(produce, "TopicData")
    assert topic_data.array and topic_data.type == "TopicProduceData" and topic_data.is_struct
    assert field(BUILTIN.apis[1].request(4), "MaxBytes").default == "0x7fffffff"
    assert field(BUILTIN.apis[18].request(5), "NodeId").default == "-1"  # a JSON number in the spec
    assert field(BUILTIN.apis[24].request(4), "Transactions.VerifyOnly").default == "false"  # a JSON boolean


def test_common_struct_is_one_tuple_everywhere():
    message = BUILTIN.apis[4].request(2)  # LeaderAndIsr, 3.9: one struct, used ungrouped (v0-1) and per topic (v2+)
    (struct,) = message.common_structs
    assert struct.name == "LeaderAndIsrPartitionState"
    assert field(message, "UngroupedPartitionStates").fields is struct.fields
    assert field(message, "TopicStates.PartitionStates").fields is struct.fields
    assert field(message, "UngroupedPartitionStates.TopicName").versions == Versions(0, 1)


def test_data_schemas_and_control_records():
    assert pick(schema.CONSUMER_PROTOCOL_SUBSCRIPTION, 3).name == "ConsumerProtocolSubscription"
    assert pick(schema.CONSUMER_PROTOCOL_ASSIGNMENT, 3).flexible == NEVER
    assert [f.name for f in schema.CONTROL_RECORD_KEY[0].fields] == ["Type"]
    assert schema.CONTROL_RECORD_TYPES[0] == ("ABORT", "EndTxnMarker")
    assert schema.CONTROL_RECORD_TYPES[6] == ("KRAFT_VOTERS", "VotersRecord")
    for type_name, value_schema in schema.CONTROL_RECORD_TYPES.values():
        assert schema.DATA_SCHEMAS[value_schema], type_name
    for definitions in (
        schema.END_TXN_MARKER,
        schema.LEADER_CHANGE_MESSAGE,
        schema.SNAPSHOT_HEADER_RECORD,
        schema.SNAPSHOT_FOOTER_RECORD,
        schema.KRAFT_VERSION_RECORD,
        schema.VOTERS_RECORD,
        schema.DEFAULT_PRINCIPAL_DATA,
    ):
        assert definitions and all(m.kind == "data" and m.api_key is None for m in definitions)


# ---------------------------------------------------------------------------------------------- errors

# Codes where kafka-python's constant differs from Kafka's Errors enum (kafka-python keeps old names).
KAFKA_PYTHON_NAMES = {
    -1: "UNKNOWN",
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}


def test_error_codes_agree_with_kafka_python():
    errors = pytest.importorskip("kafka.errors")
    theirs: dict[int, set[str]] = {}
    for value in vars(errors).values():
        if isinstance(value, type) and issubclass(value, errors.BrokerResponseError):
            if value.errno is not None:
                theirs.setdefault(value.errno, set()).add(value.message)
    shared = set(theirs) & set(ERROR_CODES)
    assert len(shared) > 100
    for code in sorted(shared):
        expected = KAFKA_PYTHON_NAMES.get(code, ERROR_CODES[code])
        assert expected in theirs[code], (code, ERROR_CODES[code], theirs[code])


def test_error_table_is_contiguous_and_named():
    assert sorted(ERROR_CODES) == list(range(-1, max(ERROR_CODES) + 1))
    assert max(ERROR_CODES) >= 133
    assert ERROR_CODES[-1] == "UNKNOWN_SERVER_ERROR"
    assert ERROR_CODES[0] == "NONE"
    assert ERROR_CODES[3] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert schema.error_name(3) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert schema.error_name(9999) == "UNKNOWN_ERROR_9999"


# ---------------------------------------------------------------------------------------------- headers


@pytest.mark.parametrize(
    ("key", "version", "request_header", "response_header"),
    [
        (0, 2, 1, 0),  # Produce v2: not flexible
        (0, 9, 2, 1),  # Produce v9: first flexible version
        (1, 12, 2, 1),
        (7, 0, 0, 0),  # ControlledShutdown v0: the one request header v0
        (7, 1, 1, 0),
        (7, 3, 2, 1),
        (17, 1, 1, 0),  # SaslHandshake: never flexible
        (18, 2, 1, 0),
        (18, 3, 2, 0),  # ApiVersions: response header v0 even when flexible
        (18, 5, 2, 0),
        (1, 99, 2, 1),  # newer than the tables: flexibleVersions is open-ended
        (999, 0, 1, 0),  # unknown key: assume the classic headers
    ],
)
def test_header_versions(key, version, request_header, response_header):
    assert BUILTIN.request_header_version(key, version) == request_header
    assert BUILTIN.response_header_version(key, version) == response_header


def test_header_versions_follow_the_tables():
    for a in BUILTIN.apis.values():
        for version in a.versions:
            flexible = a.flexible(version)
            assert BUILTIN.is_flexible(a.key, version) == flexible
            expected_request = 2 if flexible else (0 if (a.key, version) == (7, 0) else 1)
            assert BUILTIN.request_header_version(a.key, version) == expected_request
            expected_response = 0 if a.key == 18 else int(flexible)
            assert BUILTIN.response_header_version(a.key, version) == expected_response
