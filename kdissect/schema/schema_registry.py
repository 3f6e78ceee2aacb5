"""Confluent Schema Registry's leader election, declared as data: the JSON its instances put in JoinGroup and SyncGroup.

Schema Registry instances elect their leader through a Kafka group of protocol type "sr" (one protocol, "v0"). Unlike
Kafka's own protocols these payloads are JSON written by Jackson (its SchemaRegistryProtocol): a member's metadata is
its identity, and the leader's assignment names the leader by member id and repeats its identity. Members without a
value are left out (Jackson's NON_EMPTY), and a reader ignores members it does not know; these tables list the
members Schema Registry writes, in the order it writes them, for the display filters' paths and the docs.
"""

from __future__ import annotations

from kdissect.schema.model import Field, Versions, data_schema

ANY = Versions(0, 0)
"""The JSON carries a version of its own (1), not a Kafka version: the tables are read at one."""
PROTOCOL_TYPE = "sr"

IDENTITY_FIELDS = (
    Field("version", "int32", ANY),
    Field("host", "string", ANY),
    Field("port", "int32", ANY),
    Field("master_eligibility", "bool", ANY),
    Field("scheme", "string", ANY),
)
IDENTITY = data_schema("SchemaRegistryIdentity", ANY, IDENTITY_FIELDS)
"""An instance: where its REST API listens, and whether it may lead (leader.eligibility)."""
ASSIGNMENT = data_schema(
    "SchemaRegistryAssignment",
    ANY,
    (
        Field("version", "int32", ANY),
        Field("error", "int16", ANY),
        Field("master", "string", ANY),
        Field("master_identity", "SchemaRegistryIdentity", ANY, fields=IDENTITY_FIELDS),
    ),
)
"""The leader's answer: an error (1: DUPLICATE_URLS, two instances advertise the same URL), the leader's member id and
its identity."""
ERRORS = {0: "NO_ERROR", 1: "DUPLICATE_URLS"}
