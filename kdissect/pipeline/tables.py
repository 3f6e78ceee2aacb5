"""The tables' columns, defined once as Arrow types (the Spark schemas are derived from them).

docs/pipeline.md documents each column; keep the two in step. No column is named with a word SQL engines reserve
(`offset` is one, in DuckDB and Spark SQL alike): a query never has to quote a name.
"""

from __future__ import annotations

import pyarrow as pa

TIME = pa.timestamp("us", tz="UTC")

CONNECTION = [
    ("client_address", pa.string()),
    ("client_port", pa.int32()),
    ("broker_address", pa.string()),
    ("broker_port", pa.int32()),
]

ERROR = pa.struct([("side", pa.string()), ("path", pa.string()), ("code", pa.int32()), ("name", pa.string())])
DIAGNOSTIC = [
    ("code", pa.string()),
    ("severity", pa.string()),
    ("message", pa.string()),
    ("scope", pa.string()),
    ("scope_offset", pa.int64()),
    ("path", pa.string()),
]
EXCHANGE_DIAGNOSTIC = pa.struct([("side", pa.string()), *DIAGNOSTIC])
HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])

EXCHANGES = pa.schema(
    [
        ("capture", pa.string()),
        ("exchange_id", pa.int64()),
        ("connection_id", pa.int64()),
        *CONNECTION,
        ("status", pa.string()),
        ("time", TIME),
        ("ts_ns", pa.int64()),
        ("request_ts_ns", pa.int64()),
        ("response_ts_ns", pa.int64()),
        ("latency_ms", pa.float64()),
        ("queue_ms", pa.float64()),
        ("service_ms", pa.float64()),
        ("api_key", pa.int32()),
        ("api_name", pa.string()),
        ("api_version", pa.int32()),
        ("correlation_id", pa.int32()),
        ("client_id", pa.string()),
        ("errors", pa.list_(ERROR)),
        ("error_names", pa.list_(pa.string())),
        ("topics", pa.list_(pa.string())),
        ("groups", pa.list_(pa.string())),
        ("request_size", pa.int64()),
        ("response_size", pa.int64()),
        ("request_packets", pa.list_(pa.int64())),
        ("response_packets", pa.list_(pa.int64())),
        ("records", pa.int32()),
        ("diagnostics", pa.list_(EXCHANGE_DIAGNOSTIC)),
        ("json", pa.string()),
        ("unresolved_topic_ids", pa.list_(pa.string())),
    ]
)
"""`unresolved_topic_ids` is internal: the job names those topics from other connections, then drops it."""

RECORDS = pa.schema(
    [
        ("capture", pa.string()),
        ("exchange_id", pa.int64()),
        ("connection_id", pa.int64()),
        ("direction", pa.string()),
        ("api_key", pa.int32()),
        ("api_version", pa.int32()),
        ("topic", pa.string()),
        ("topic_id", pa.string()),
        ("partition", pa.int32()),
        ("field", pa.string()),
        ("ordinal", pa.int32()),
        ("record_offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("time", TIME),
        ("timestamp_type", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.list_(HEADER)),
        ("magic", pa.int32()),
        ("codec", pa.string()),
        ("producer_id", pa.int64()),
        ("producer_epoch", pa.int32()),
        ("sequence", pa.int32()),
        ("transactional", pa.bool_()),
        ("control", pa.bool_()),
        ("control_type", pa.string()),
        ("reading", pa.string()),
        ("key_format", pa.string()),
        ("key_schema_id", pa.string()),
        ("key_decoded", pa.string()),
        ("value_format", pa.string()),
        ("value_schema_id", pa.string()),
        ("value_decoded", pa.string()),
    ]
)

DIAGNOSTICS = pa.schema(
    [
        ("capture", pa.string()),
        ("source", pa.string()),
        ("exchange_id", pa.int64()),
        ("connection_id", pa.int64()),
        *CONNECTION,
        ("api_name", pa.string()),
        ("packet", pa.int64()),
        ("time", TIME),
        ("ts_ns", pa.int64()),
        *DIAGNOSTIC,
    ]
)

PARTITION = pa.struct([("topic", pa.string()), ("partition", pa.int32())])
FINDINGS = pa.schema(
    [
        ("capture", pa.string()),
        ("finding", pa.string()),
        ("severity", pa.string()),
        ("title", pa.string()),
        ("explanation", pa.string()),
        ("advice", pa.string()),
        ("software", pa.string()),
        ("caused_by", pa.list_(pa.string())),
        ("evidence_count", pa.int64()),
        ("evidence_unit", pa.string()),
        ("evidence_filter", pa.string()),
        ("exchange_ids", pa.list_(pa.int64())),
        ("connection_ids", pa.list_(pa.int64())),
        ("client_ids", pa.list_(pa.string())),
        ("groups", pa.list_(pa.string())),
        ("partitions", pa.list_(PARTITION)),
        ("first_time", TIME),
        ("last_time", TIME),
        ("first_ts_ns", pa.int64()),
        ("last_ts_ns", pa.int64()),
    ]
)
"""The doctor's findings of each capture (doctor/finding.py), partitioned by `date` alone (of the first evidence)."""
FINDINGS_OUTPUT = FINDINGS.append(pa.field("date", pa.string()))
"""The findings stage's output: the rows with their partition value."""

TOPICS = pa.schema([("topic_id", pa.string()), ("name", pa.string())])

STATS = pa.schema(
    [
        ("packets", pa.int64()),
        ("connections", pa.int64()),
        ("exchanges", pa.int64()),
        ("records", pa.int64()),
        ("diagnostics", pa.int64()),
    ]
)

KINDS = {"exchange": EXCHANGES, "record": RECORDS, "diagnostic": DIAGNOSTICS, "topic": TOPICS, "stats": STATS}
"""The core stage's output: one struct column per kind, the others null in each row."""

PARTITIONS = [("date", pa.string()), ("api", pa.string())]
TABLES = {"exchanges": EXCHANGES, "records": RECORDS, "diagnostics": DIAGNOSTICS, "findings": FINDINGS}
"""Every table by name, as written (exchanges still with its internal column)."""
PARTITIONED_BY = {"exchanges": ("date", "api"), "records": ("date", "api"), "diagnostics": ("date", "api"), "findings": ("date",)}

CORE_OUTPUT = pa.schema([("kind", pa.string()), *PARTITIONS, *((kind, pa.struct(list(schema))) for kind, schema in KINDS.items())])

INPUT = pa.schema(
    [
        ("file_id", pa.int32()),
        ("key", pa.binary()),
        ("split", pa.int32()),
        ("chunk", pa.int32()),
        ("first_index", pa.int64()),
        ("packets", pa.int64()),
        ("blob", pa.binary()),
    ]
)
"""Rows the data source yields: one per connection key per range (per chunk of a large range)."""


STRUCTS = {kind: pa.struct(list(schema)) for kind, schema in KINDS.items()}


def arrays(schema: pa.Schema, columns: dict[str, list]) -> list[pa.Array]:
    """One Arrow array per column of `schema` from its list of values (rows.Columns), each converted at once."""
    return [pa.array(columns[f.name], type=f.type) for f in schema]


def batch(kind: str, columns: dict[str, list], partitions: tuple[list, list]) -> pa.RecordBatch:
    """A core-output batch of one kind from its columns (rows.Columns: a list of values per column of its schema)."""
    size = len(partitions[0])
    out = []
    for name, struct_type in STRUCTS.items():
        if name == kind:
            out.append(pa.StructArray.from_arrays(arrays(KINDS[kind], columns), fields=list(struct_type)))
        else:
            out.append(pa.nulls(size, type=struct_type))
    head = [pa.array([kind] * size, pa.string()), pa.array(partitions[0], pa.string()), pa.array(partitions[1], pa.string())]
    return pa.RecordBatch.from_arrays(head + out, schema=CORE_OUTPUT)


def input_batch(rows: list) -> pa.RecordBatch:
    """Input rows (reader.Row tuples, in INPUT's column order) as one Arrow batch."""
    columns = list(zip(*rows))
    return pa.RecordBatch.from_arrays([pa.array(list(values), type=f.type) for values, f in zip(columns, INPUT)], schema=INPUT)
