"""Record values through a schema registry: confluent-kafka's Avro, Protobuf and JSON Schema serializers and
deserializers against the registry stand-in (rig/registry.py), whose port is captured too.

Each scenario also has a producer without the serializer writing to the same topic (the records a registry
deserializer fails on: "Invalid magic byte"), a schema evolved mid-run (a second id), and a consumer deserializing
every record with its own registry client, so its schema lookups (``GET /schemas/ids/N``) are in the capture.
``values-avro-kafkajs`` does the same with KafkaJS and @kafkajs/confluent-schema-registry (rig/node).
Every ``produced`` and ``consumed`` line carries ``decoded``: what the value (and key) mean, as the serializer was
given them, with the schema id and framing; a consumer's line carries the deserializer's error where it failed.
"""

from __future__ import annotations

import json
import struct
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Optional

from rig.clients import FIXED_TS, confluent_name
from rig.kafkajs import plan_records, run_kafkajs
from rig.scenarios import Ctx, scenario
from rig.scenarios.kit import confluent_consumed, confluent_create_topics, confluent_produce

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "kdrig.shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [{"name": "name", "type": "string"}]}},
        {"name": "items", "type": {"type": "array", "items": "string"}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}

PROTO_V1 = """syntax = "proto3";
package kdrig.shop;

message Address {
  string city = 1;
  string zip = 2;
}

message Payment {
  string order_id = 1;
  int64 cents = 2;
  string method = 3;
  Address billing = 4;
  repeated string tags = 5;
}
"""
PROTO_V2 = PROTO_V1.replace("  repeated string tags = 5;\n", "  repeated string tags = 5;\n  string currency = 6;\n")

ITEM_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Item",
    "type": "object",
    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": "number"}},
    "required": ["sku", "qty"],
}
ITEM_SCHEMA_V2 = {**ITEM_SCHEMA, "properties": {**ITEM_SCHEMA["properties"], "warehouse": {"type": "string"}}}


def _orders() -> list[dict]:
    """The Avro scenarios' first orders (schema ORDER_V1)."""
    orders = [
        {"id": f"order-{n}", "amount": 10.5 * n, "customer": {"name": f"customer {n}"}, "items": [f"sku-{n}", "sku-x"], "note": None}
        for n in (1, 2, 3)
    ]
    orders[1]["note"] = "leave at the door"
    return orders


def _plain_orders() -> list[dict]:
    """What the Avro scenarios' producer without the serializer writes, as JSON text."""
    return [{"id": "order-4", "amount": 4.0}, {"id": "order-5", "amount": 5.0}]


def _evolved_orders() -> list[dict]:
    """The Avro scenarios' orders after the schema evolved (ORDER_V2)."""
    return [
        {"id": f"order-{n}", "amount": 1.25 * n, "customer": {"name": f"customer {n}"}, "items": [], "note": None, "currency": "USD"}
        for n in (42, 43)
    ]


def _registry(ctx: Ctx):
    from confluent_kafka.schema_registry import SchemaRegistryClient

    assert ctx.registry is not None, "a value scenario needs the registry stand-in"
    return SchemaRegistryClient({"url": ctx.registry})


def _send(
    ctx: Ctx,
    topic: str,
    client_id: str,
    records: list[tuple[str, Any, bytes, list, dict]],
    start_ts: int,
) -> None:
    """Produce serialized records (key, decoded value, value bytes, headers, what the manifest says they mean)."""
    rows = [
        {"key": key.encode(), "value": value, "headers": headers, "partition": 0, "timestamp": start_ts + i, "decoded": decoded}
        for i, (key, _, value, headers, decoded) in enumerate(records)
    ]
    for row in rows:
        row["headers"] = [(k, v) for k, v in row["headers"]]
    confluent_produce(
        ctx.manifest,
        {"bootstrap.servers": ctx.bootstrap, "client.id": client_id, "linger.ms": 20},
        topic,
        [{**{k: v for k, v in row.items() if k != "decoded"}, "manifest": {"decoded": row["decoded"]}} for row in rows],
        acks="all",
    )


def _serialized(serializer: Callable, topic: str, value: Any) -> tuple[bytes, list]:
    from confluent_kafka.serialization import MessageField, SerializationContext

    headers: list = []
    data = serializer(value, SerializationContext(topic, MessageField.VALUE, headers))
    return data, headers


def _framed(
    serializer: Callable, topic: str, fmt: str, items: list[tuple[str, Any]], meaning: Callable[[Any], Any] = lambda v: v, **extra: Any
) -> list:
    """(key, value) pairs through a registry serializer, as `_send` takes them, each with what the manifest says it
    means: the value as given (a Protobuf message in its JSON mapping), its schema id, `extra` (message indexes)."""
    out = []
    for key, value in items:
        data, headers = _serialized(serializer, topic, value)
        told = meaning(value)
        out.append((key, told, data, headers, _decoded(fmt, "confluent", _id(data), told, **extra)))
    return out


def _proto_meaning(message: Any) -> Any:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(message, preserving_proto_field_name=True)


def _decoded(fmt: str, framing: str, schema_id: Optional[int], value: Any, **extra: Any) -> dict:
    return {"format": fmt, "framing": framing, "schema_id": schema_id, "value": value, **extra}


def _consume(ctx: Ctx, topic: str, expected: int, deserialize: Callable[[bytes, list], Any], client_id: str) -> None:
    """Read every record of the topic with a plain consumer and deserialize each by hand, so a failure is one
    record's (recorded with the deserializer's words), not the consumer's."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "client.id": client_id,
            "group.id": f"{client_id}-group",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    deadline = time.monotonic() + 30
    while got < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        got += 1
        try:
            extra = {"deserialized": deserialize(msg.value(), msg.headers() or [])}
        except Exception as exc:  # the deserializer's own words are the ground truth
            extra = {"deserializer_error": f"{type(exc).__name__}: {exc}"}
        confluent_consumed(ctx.manifest, msg, client=confluent_name(), group=None, **extra)
    consumer.close()


@scenario(
    "values-avro-confluent",
    "Avro values through the registry stand-in (AvroSerializer, schema evolved mid-run), a producer without the "
    "serializer on the same topic, a corrupt framed value, an AvroDeserializer consumer; the registry's port captured",
    expect_apis={0, 1, 3},
    registry=True,
)
def values_avro(ctx: Ctx) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    m = ctx.manifest
    confluent_create_topics(m, ctx.bootstrap, {"orders": 1, "_schemas": 1})
    client = _registry(ctx)
    v1 = AvroSerializer(client, json.dumps(ORDER_V1))
    orders = _orders()
    records = _framed(v1, "orders", "avro", [(o["id"], o) for o in orders])
    _send(ctx, "orders", "kdrig-avro-producer", records, FIXED_TS)
    # A producer without the serializer: JSON text where consumers expect Avro (the "magic byte" poison pill).
    plain = _plain_orders()
    _send(
        ctx,
        "orders",
        "kdrig-legacy-writer",
        [(o["id"], o, json.dumps(o).encode(), [], _decoded("json", "none", None, o)) for o in plain],
        FIXED_TS + 100,
    )
    # A framed value cut short: the right magic and id, half an Avro record.
    cut = records[0][2][: len(records[0][2]) // 2]
    _send(
        ctx,
        "orders",
        "kdrig-legacy-writer",
        [("order-6", None, cut, [], _decoded("avro", "confluent", _id(cut), None, error="truncated"))],
        FIXED_TS + 150,
    )
    # The schema evolves: a second id, a field with a default.
    v2 = AvroSerializer(client, json.dumps(ORDER_V2))
    evolved = _evolved_orders()
    _send(ctx, "orders", "kdrig-avro-producer", _framed(v2, "orders", "avro", [(o["id"], o) for o in evolved]), FIXED_TS + 200)
    reader = AvroDeserializer(_registry(ctx))
    _consume(ctx, "orders", 8, _deserializer(reader, "orders"), "kdrig-avro-consumer")


@scenario(
    "values-avro-kafkajs",
    "Avro values through the registry stand-in by KafkaJS 2.2.4 and @kafkajs/confluent-schema-registry (register, "
    "encode; schema evolved mid-run), a KafkaJS producer without the serializer on the same topic, a corrupt framed "
    "value, a KafkaJS consumer group decoding with the library; the registry's port captured",
    expect_apis={0, 1, 3},
    registry=True,
)
def values_avro_kafkajs(ctx: Ctx) -> None:
    """values-avro-confluent's records, made and read by KafkaJS: the library registers each schema (asking the
    subject's compatibility first, and setting it after the first registration), encodes with the id it got, and
    its decode() reads every record back, fetching the schemas by id."""
    orders = _orders()
    plain = _plain_orders()
    evolved = _evolved_orders()

    def framed(schema: str, items: list[dict], start_ts: int, cut: bool = False) -> list[dict]:
        return [
            {
                "key": ("order-6" if cut else o["id"]).encode(),
                "partition": 0,
                "timestamp": start_ts + i,
                "encode": {"schema": schema, "value": o, "cut": cut},
                "decoded": _decoded("avro", "confluent", None, None, error="truncated") if cut else _decoded("avro", "confluent", None, o),
            }
            for i, o in enumerate(items)
        ]

    def produce(client_id: str, records: list[dict]) -> dict:
        return dict(act="produce", client_id=client_id, topic="orders", acks="all", batch=True, records=plan_records(records))

    acts = [
        dict(act="create-topics", client_id="kdrig-kjs-setup", topics={"orders": 1, "_schemas": 1}),
        dict(act="register", type="AVRO", schema=json.dumps(ORDER_V1), subject="orders-value", **{"as": "v1"}),
        produce("kdrig-avro-producer", framed("v1", orders, FIXED_TS)),
        # A producer without the serializer: JSON text where consumers expect Avro (the "magic byte" poison pill).
        produce(
            "kdrig-legacy-writer",
            [
                {"key": o["id"].encode(), "value": json.dumps(o).encode(), "partition": 0, "timestamp": FIXED_TS + 100 + i}
                | {"decoded": _decoded("json", "none", None, o)}
                for i, o in enumerate(plain)
            ],
        ),
        # A framed value cut short: the right magic and id, half of order-1's Avro record.
        produce("kdrig-legacy-writer", framed("v1", orders[:1], FIXED_TS + 150, cut=True)),
        # The schema evolves: a second id, a field with a default.
        dict(act="register", type="AVRO", schema=json.dumps(ORDER_V2), subject="orders-value", **{"as": "v2"}),
        produce("kdrig-avro-producer", framed("v2", evolved, FIXED_TS + 200)),
        dict(
            act="consume",
            client_id="kdrig-avro-consumer",
            group="kdrig-avro-kjs-group",
            topic="orders",
            members=["a"],
            expected=8,
            seconds=40,
            max_wait_ms=500,
            decode=True,
        ),
    ]
    run_kafkajs(ctx.manifest, ctx.bootstrap, acts, registry=ctx.registry)


@scenario(
    "values-protobuf-confluent",
    "Protobuf values through the registry stand-in (ProtobufSerializer: message indexes [1] and the [0] shortcut, the "
    "schema id in the payload and as a GUID in a header, schema evolved mid-run), a producer without the serializer, "
    "a ProtobufDeserializer consumer; the registry's port captured",
    expect_apis={0, 1, 3},
    registry=True,
)
def values_protobuf(ctx: Ctx) -> None:
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    m = ctx.manifest
    confluent_create_topics(m, ctx.bootstrap, {"payments": 1, "addresses": 1, "_schemas": 1})
    client = _registry(ctx)
    v1 = _proto_module(PROTO_V1, "shop_v1")
    config = {"use.deprecated.format": False}
    pay = ProtobufSerializer(v1.Payment, client, config)
    payments = [
        (
            f"order-{n}",
            v1.Payment(
                order_id=f"order-{n}", cents=1000 * n, method="card", billing=v1.Address(city="Lyon", zip=f"6900{n}"), tags=["a", "b"]
            ),
        )
        for n in (1, 2)
    ]
    _send(
        ctx,
        "payments",
        "kdrig-protobuf-producer",
        _framed(pay, "payments", "protobuf", payments, _proto_meaning, message_indexes=[1]),
        FIXED_TS,
    )
    # The same schema, its GUID in the __value_schema_id header instead of the payload.
    by_header = ProtobufSerializer(v1.Payment, client, {**config, "schema.id.serializer": header_schema_id_serializer})
    message = v1.Payment(order_id="order-3", cents=3000, method="transfer")
    data, headers = _serialized(by_header, "payments", message)
    meaning = _proto_meaning(message)
    guid = headers[0][1]
    _send(
        ctx,
        "payments",
        "kdrig-protobuf-header-producer",
        [
            (
                "order-3",
                meaning,
                data,
                headers,
                _decoded(
                    "protobuf",
                    "confluent-header-guid",
                    _id(data, guid),
                    meaning,
                    message_indexes=[1],
                    guid=str(uuid.UUID(bytes=guid[1:17])),
                ),
            )
        ],
        FIXED_TS + 50,
    )
    # A producer without the serializer: text.
    _send(
        ctx,
        "payments",
        "kdrig-legacy-writer",
        [("order-4", "order-4 paid 40.00", b"order-4 paid 40.00", [], _decoded("text", "none", None, "order-4 paid 40.00"))],
        FIXED_TS + 100,
    )
    v2 = _proto_module(PROTO_V2, "shop_v2")
    pay2 = ProtobufSerializer(v2.Payment, client, config)
    evolved = [(f"order-{n}", v2.Payment(order_id=f"order-{n}", cents=42 * n, method="card", currency="USD")) for n in (42, 43)]
    _send(
        ctx,
        "payments",
        "kdrig-protobuf-producer",
        _framed(pay2, "payments", "protobuf", evolved, _proto_meaning, message_indexes=[1]),
        FIXED_TS + 200,
    )
    # The first message of the file: message indexes [0], written as the single byte 0.
    addr = ProtobufSerializer(v1.Address, client, config)
    cities = [(city, v1.Address(city=city, zip="00000")) for city in ("Lyon", "Nantes")]
    _send(
        ctx,
        "addresses",
        "kdrig-protobuf-producer",
        _framed(addr, "addresses", "protobuf", cities, _proto_meaning, message_indexes=[0]),
        FIXED_TS + 300,
    )
    _consume(ctx, "payments", 6, _proto_deserializer(ProtobufDeserializer(v2.Payment, {**config}), "payments"), "kdrig-protobuf-consumer")
    _consume(ctx, "addresses", 2, _proto_deserializer(ProtobufDeserializer(v1.Address, {**config}), "addresses"), "kdrig-protobuf-consumer")


@scenario(
    "values-json-confluent",
    "JSON Schema values through the registry stand-in (JSONSerializer, schema evolved mid-run), plain JSON from a "
    "producer without the serializer, a framed value that breaks its schema, a JSONDeserializer consumer; the "
    "registry's port captured",
    expect_apis={0, 1, 3},
    registry=True,
)
def values_json(ctx: Ctx) -> None:
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    m = ctx.manifest
    confluent_create_topics(m, ctx.bootstrap, {"items": 1, "_schemas": 1})
    client = _registry(ctx)
    v1 = JSONSerializer(json.dumps(ITEM_SCHEMA), client)
    records = _framed(v1, "items", "json", [(f"item-{n}", {"sku": f"sku-{n}", "qty": n, "price": 2.5 * n}) for n in (1, 2, 3)])
    _send(ctx, "items", "kdrig-json-producer", records, FIXED_TS)
    plain = {"sku": "sku-4", "qty": 4}
    _send(
        ctx,
        "items",
        "kdrig-legacy-writer",
        [("item-4", plain, json.dumps(plain).encode(), [], _decoded("json", "none", None, plain))],
        FIXED_TS + 100,
    )
    # Framed with the schema's id, but qty is text: the schema says integer.
    wrong = {"sku": "sku-5", "qty": "five"}
    framed = records[0][2][:5] + json.dumps(wrong).encode()
    _send(
        ctx,
        "items",
        "kdrig-legacy-writer",
        [("item-5", wrong, framed, [], _decoded("json", "confluent", _id(framed), wrong, error="schema"))],
        FIXED_TS + 150,
    )
    v2 = JSONSerializer(json.dumps(ITEM_SCHEMA_V2), client)
    evolved = [(f"item-{n}", {"sku": f"sku-{n}", "qty": n, "price": 1.0, "warehouse": "east"}) for n in (42, 43)]
    _send(ctx, "items", "kdrig-json-producer", _framed(v2, "items", "json", evolved), FIXED_TS + 200)
    _consume(ctx, "items", 7, _deserializer(JSONDeserializer(None, schema_registry_client=_registry(ctx)), "items"), "kdrig-json-consumer")


def _id(data: bytes, guid: Optional[bytes] = None) -> Optional[int]:
    """The schema id a framed value carries (None for a GUID header, whose id the manifest's guid says)."""
    if guid is not None:
        return None
    return struct.unpack(">I", data[1:5])[0] if len(data) >= 5 and data[0] == 0 else None


def _deserializer(deserializer: Any, topic: str) -> Callable[[bytes, list], Any]:
    from confluent_kafka.serialization import MessageField, SerializationContext

    return lambda value, headers: deserializer(value, SerializationContext(topic, MessageField.VALUE, headers))


def _proto_deserializer(deserializer: Any, topic: str) -> Callable[[bytes, list], Any]:
    read = _deserializer(deserializer, topic)
    return lambda value, headers: _proto_meaning(read(value, headers))


def _proto_module(source: str, name: str) -> Any:
    """The message classes of a .proto text: grpcio-tools' bundled protoc makes its descriptor set, loaded into a pool
    of its own (two versions of one schema, with the same names, live side by side)."""
    from types import SimpleNamespace

    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_tools import protoc

    folder = Path(tempfile.mkdtemp(prefix="kdrig-proto-"))
    (folder / f"{name}.proto").write_text(source)
    out = folder / f"{name}.desc"
    if protoc.main(["protoc", f"-I{folder}", f"--descriptor_set_out={out}", str(folder / f"{name}.proto")]) != 0:
        raise RuntimeError(f"protoc failed on {name}.proto")
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    package = files.file[0].package
    names = [message.name for message in files.file[0].message_type]
    return SimpleNamespace(**{n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{n}")) for n in names})
