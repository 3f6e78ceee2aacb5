"""The Kafka protocol tables and the small lookups the decoder runs per frame.

The tables are generated from Apache Kafka's message specs into `generated.py` (see docs/schema.md);
their shape is in `model.py`.
"""

from __future__ import annotations

from kdissect.schema.generated import (
    API_NAMES,
    APIS,
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    CONTROL_RECORD_KEY,
    CONTROL_RECORD_TYPES,
    DATA_SCHEMAS,
    DEFAULT_PRINCIPAL_DATA,
    END_TXN_MARKER,
    ERROR_CODES,
    KRAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE,
    REQUEST_HEADER,
    RESPONSE_HEADER,
    SNAPSHOT_FOOTER_RECORD,
    SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
)
from kdissect.schema.model import NEVER, OPEN, PRIMITIVES, Api, Field, MessageSpec, StructSpec, Versions, pick

__all__ = [
    "API_NAMES",
    "APIS",
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "CONTROL_RECORD_KEY",
    "CONTROL_RECORD_TYPES",
    "DATA_SCHEMAS",
    "DEFAULT_PRINCIPAL_DATA",
    "END_TXN_MARKER",
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
    "Field",
    "MessageSpec",
    "StructSpec",
    "Versions",
    "api",
    "error_name",
    "is_flexible",
    "pick",
    "request_header_version",
    "response_header_version",
]

API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7

# First flexible request version of each API key; flexibleVersions is always open-ended ("N+"), so a
# version newer than the tables still counts as flexible. Keys that are never flexible are absent.
_FLEXIBLE_FROM: dict[int, int] = {
    key: min(m.flexible.lo for m in a.requests if m.flexible) for key, a in APIS.items() if any(m.flexible for m in a.requests)
}


def api(key: int) -> Api | None:
    return APIS.get(key)


def error_name(code: int) -> str:
    """Kafka's constant name for an error code; codes newer than the table get a stable placeholder."""
    name = ERROR_CODES.get(code)
    return name if name is not None else f"UNKNOWN_ERROR_{code}"


def is_flexible(api_key: int, api_version: int) -> bool:
    """Whether this request/response version uses compact encodings and tagged fields."""
    first = _FLEXIBLE_FROM.get(api_key)
    return first is not None and api_version >= first


def request_header_version(api_key: int, api_version: int) -> int:
    """v2 for flexible requests, else v1; ControlledShutdown v0 alone used v0 (no client id)."""
    if is_flexible(api_key, api_version):
        return 2
    return 0 if api_key == CONTROLLED_SHUTDOWN and api_version == 0 else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """v1 for flexible responses, else v0; ApiVersions always answers with v0, so that a client can
    read the response whatever version it asked for."""
    if api_key == API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0
