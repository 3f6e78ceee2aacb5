"""The Kafka protocol tables: generated from Apache Kafka's message specs into `generated.py` (docs/schema.md),
shaped by `model.py`, and gathered with the user's specs into the `Catalog` a run decodes with (`catalog.py`)."""

from __future__ import annotations

from kdissect.schema.catalog import BUILTIN, Catalog, catalog_with
from kdissect.schema.generated import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    CONTROL_RECORD_KEY,
    CONTROL_RECORD_TYPES,
    DATA_SCHEMAS,
    DEFAULT_PRINCIPAL_DATA,
    END_TXN_MARKER,
    ERROR_CODES,
    ERRORS,
    KRAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE,
    REQUEST_HEADER,
    RESPONSE_HEADER,
    SNAPSHOT_FOOTER_RECORD,
    SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
    ApiKey,
    ErrorCode,
)
from kdissect.schema.model import NEVER, OPEN, PRIMITIVES, Api, Field, KafkaError, MessageSpec, StructSpec, Versions, pick

__all__ = [
    "BUILTIN",
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "CONTROL_RECORD_KEY",
    "CONTROL_RECORD_TYPES",
    "DATA_SCHEMAS",
    "DEFAULT_PRINCIPAL_DATA",
    "END_TXN_MARKER",
    "ERRORS",
    "ERROR_CODES",
    "KRAFT_VERSION_RECORD",
    "LEADER_CHANGE_MESSAGE",
    "NEVER",
    "OPEN",
    "PRIMITIVES",
    "REQUEST_HEADER",
    "RESPONSE_HEADER",
    "SNAPSHOT_FOOTER_RECORD",
    "SNAPSHOT_HEADER_RECORD",
    "VOTERS_RECORD",
    "Api",
    "ApiKey",
    "Catalog",
    "ErrorCode",
    "Field",
    "KafkaError",
    "MessageSpec",
    "StructSpec",
    "Versions",
    "catalog_with",
    "error_name",
    "pick",
]


def error_name(code: int) -> str:
    """Kafka's constant name for an error code; codes newer than the table get a stable placeholder."""
    name = ERROR_CODES.get(code)
    return name if name is not None else f"UNKNOWN_ERROR_{code}"
