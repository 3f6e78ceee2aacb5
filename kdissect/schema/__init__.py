"""The Kafka protocol tables and the small lookups the decoder runs per frame.

The tables are generated from Apache Kafka's message specs into `generated.py` (see docs/schema.md);
their shape is in `model.py`. The API tables here (`APIS`, `API_NAMES`, `MAX_VERSION` and the flexible
versions behind the header lookups) are live: `installed` lays users' specs over the built-in APIs for the
length of a run, in place, so every reader of them sees the same tables.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from kdissect.schema import generated
from kdissect.schema.generated import (
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
from kdissect.schema.model import NEVER, OPEN, PRIMITIVES, Api, Field, MessageSpec, StructSpec, Versions, all_versions, pick, union

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
    "MAX_VERSION",
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
    "generation",
    "installed",
    "is_flexible",
    "pick",
    "request_header_version",
    "response_header_version",
]

API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7


class VersionTable(list):
    """The newest version of each API key, indexed by key (-1 where no API has it), and `top`, the newest of any:
    what request detection checks a header against, per candidate frame."""

    __slots__ = ("top",)
    top: int


APIS: dict[int, Api] = {}
API_NAMES: dict[int, str] = {}
MAX_VERSION = VersionTable()
_FLEXIBLE_FROM: dict[int, int] = {}
"""First flexible request version of each API key; flexibleVersions is always open-ended ("N+"), so a version
newer than the tables still counts as flexible. Keys that are never flexible are absent."""
_user: tuple[Api, ...] = ()
"""The users' APIs laid over the built-in ones now."""
_generation = 0


def _fill(user: tuple[Api, ...]) -> None:
    """Make every live table the built-in APIs with `user`'s over them: a key of its own adds an API; a built-in
    key gets the user's definitions first, so they win the versions they cover (the union rule of the generator)."""
    global _user, _generation
    apis = dict(generated.APIS)
    for api in user:
        base = apis.get(api.key)
        if base is not None:
            requests, responses = union(api.requests + base.requests), union(api.responses + base.responses)
            api = Api(api.key, api.name, requests, responses, all_versions(requests))
        apis[api.key] = api
    APIS.clear()
    APIS.update(sorted(apis.items()))
    API_NAMES.clear()
    API_NAMES.update((key, api.name) for key, api in APIS.items())
    _FLEXIBLE_FROM.clear()
    _FLEXIBLE_FROM.update(
        (key, min(m.flexible.lo for m in a.requests if m.flexible)) for key, a in APIS.items() if any(m.flexible for m in a.requests)
    )
    MAX_VERSION[:] = [-1] * (max(APIS) + 1)
    for key, api in APIS.items():
        MAX_VERSION[key] = api.max_version
    MAX_VERSION.top = max(MAX_VERSION)
    _user = user
    _generation += 1


def generation() -> int:
    """A number that changes whenever the live tables do (never the same twice): the key for a cache of something
    made from them."""
    return _generation


_fill(())


@contextmanager
def installed(user: Sequence[Api]) -> Iterator[None]:
    """The tables with `user`'s APIs laid over the built-in ones, until the block ends (then as they were).

    The one way users' specs reach the decoder, request detection, header versions and every view: a driver
    enters it once, before it decodes anything (the commands, each Spark task). Decoders compiled inside keep
    the definitions they were made from, so make them inside too.
    """
    before, wanted = _user, tuple(user)
    if len(wanted) == len(before) and all(a is b for a, b in zip(wanted, before)):
        yield
        return
    _fill(wanted)
    try:
        yield
    finally:
        _fill(before)


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
