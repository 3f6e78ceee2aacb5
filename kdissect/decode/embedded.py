"""Payloads carried opaquely inside other messages, read into what they say.

Group payloads ride as bytes in JoinGroup (each protocol's metadata, each member's), SyncGroup (assignments) and
DescribeGroups, in the format of the group's protocol type: "consumer" (the consumer protocol, and inside it Kafka
Streams' user data when the protocol, the assignor, is "stream"), "connect" (Kafka Connect's workers) and "sr"
(Schema Registry's leader election). SASL exchanges ride in SaslAuthenticate, or after SaslHandshake v0 as raw tokens
with no Kafka header. Each reading is added to its struct as an annotation on the field it explains; the bytes
themselves stay as they were, except secrets, which are replaced unless shown. What a reader cannot read is said with
its place in the frame (`locate`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kdissect.decode.misread import Misread, start_of
from kdissect.decode.redaction import Redacted
from kdissect.decode.sasl import read_sasl
from kdissect.decode.session import Session
from kdissect.diagnostic import Diagnostic
from kdissect.schema import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, ApiKey
from kdissect.schema.connect_protocol import PROTOCOL_TYPE as CONNECT
from kdissect.schema.schema_registry import PROTOCOL_TYPE as SCHEMA_REGISTRY
from kdissect.schema.tree import Struct
from kdissect.schema.versioned import read_versioned

API_KEYS = frozenset({ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
"""The APIs that carry payloads inside payloads."""
TEACHING_REQUESTS = frozenset({ApiKey.JOIN_GROUP, ApiKey.SASL_HANDSHAKE})
"""Requests whose reading `annotate` keeps in the session for later messages: group protocol types (and the
protocol, when a member offers only one), the SASL mechanism."""
CONSUMER = "consumer"
STREAMS = "stream"
"""The name Kafka Streams' assignor joins a consumer group under (its user data is read as a protocol of its own)."""

Reader = Callable[[bytes], "tuple[Struct | None, list[Misread]]"]
Locate = Callable[[str, str], "int | None"]
"""(path of a struct in the body, field name) -> the frame offset where that bytes field's payload starts."""
CONSUMER_SCHEMAS = {"subscription": CONSUMER_PROTOCOL_SUBSCRIPTION, "assignment": CONSUMER_PROTOCOL_ASSIGNMENT}


def reader(kind: str, what: str) -> Reader | None:
    """The reader of a group's `what` ("subscription" or "assignment") in protocol type `kind` (the consumer protocol
    has its own path), imported when such a group is first met: most captures hold none."""
    if kind == CONNECT:
        from kdissect.decode import connect

        return connect.metadata if what == "subscription" else connect.assignment
    if kind == SCHEMA_REGISTRY:
        from kdissect.decode import registry

        return registry.identity if what == "subscription" else registry.assignment
    if kind == STREAMS:
        from kdissect.decode import streams

        return streams.subscription if what == "subscription" else streams.assignment
    return None


class Reading:
    """One body's embedded payloads as they are read: the misreads, located in the frame, become diagnostics."""

    __slots__ = ("locate", "diagnostics")

    def __init__(self, locate: Locate) -> None:
        self.locate = locate
        self.diagnostics: list[Diagnostic] = []

    def payload(self, holder: Struct, field: str, path: str, what: str, kind: str | None, name: str | None) -> None:
        """Annotate `holder.field` with what it holds: a group's `what` ("subscription" or "assignment") of protocol
        type `kind` and protocol (assignor) `name`; either may be unknown (None)."""
        data = holder.get(field)
        if not isinstance(data, bytes) or not data:
            return
        if kind in (CONSUMER, None):
            self._consumer(holder, field, path, what, kind, name, data)
            return
        read = reader(kind, what)
        if read is None:
            return
        found, wrong = read(data)
        if found is not None:
            holder.annotate(field, found)
        self._tell(path, field, wrong)

    def _consumer(self, holder: Struct, field: str, path: str, what: str, kind: str | None, name: str | None, data: bytes) -> None:
        """The consumer protocol. With the protocol type unknown (old SyncGroup versions on a connection whose
        JoinGroup was not captured), the reading is kept only if the bytes parse cleanly."""
        found, problem = read_versioned(CONSUMER_SCHEMAS[what], data)
        if found is None or (problem and kind is None):
            return
        if problem:
            found.annotate("problem", problem)
        holder.annotate(field, found)
        user_data = found.get("UserData")
        read_user_data = reader(STREAMS, what) if name == STREAMS and isinstance(user_data, bytes) and user_data else None
        if read_user_data is not None:
            inner, wrong = read_user_data(user_data)
            if inner is not None:
                found.annotate("UserData", inner)
            if wrong:
                start = start_of(CONSUMER_SCHEMAS[what], data, "UserData")
                self._tell(path, field, [m.deeper(start) for m in wrong])

    def _tell(self, path: str, field: str, wrong: list[Misread]) -> None:
        if not wrong:
            return
        start = self.locate(path, field)
        where = f"{path}.{field}" if path else field
        for m in wrong:
            self.diagnostics.append(Diagnostic(m.code, m.message, m.severity, "frame", None if start is None else start + m.at, where))


def _each(value: object) -> list[tuple[int, Struct]]:
    return [(i, v) for i, v in enumerate(value) if isinstance(v, Struct)] if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def annotate(
    api_key: int, direction: str, body: Struct, request: Struct | None, session: Session, show_secrets: bool, locate: Locate
) -> list[Diagnostic]:
    """Read the embedded payloads of one decoded body, in place; what could not be read, as diagnostics."""
    reading = Reading(locate)
    if api_key == ApiKey.JOIN_GROUP:
        group = _text(body.get("GroupId") if request is None else request.get("GroupId"))
        kind = _text(
            body.get("ProtocolType")
            if direction == "request"
            else (body.get("ProtocolType") or (request.get("ProtocolType") if request else None))
        )
        if direction == "request":
            if group is not None and kind is not None:
                session.protocol_types[group] = kind
            offered = {_text(item.get("Name")) for _, item in _each(body.get("Protocols"))}
            if group is not None and len(offered) == 1:  # Kafka Streams offers its "stream" assignor alone
                (only,) = offered
                if only is not None:
                    session.protocol_names[group] = only
            for i, item in _each(body.get("Protocols")):
                reading.payload(item, "Metadata", f"Protocols[{i}]", "subscription", kind, _text(item.get("Name")))
        else:
            name = _text(body.get("ProtocolName"))
            if group is not None and name is not None:
                session.protocol_names[group] = name
            for i, item in _each(body.get("Members")):
                reading.payload(item, "Metadata", f"Members[{i}]", "subscription", kind, name)
    elif api_key == ApiKey.SYNC_GROUP:
        group = _text((request or body).get("GroupId"))
        kind = _text(body.get("ProtocolType") or (request.get("ProtocolType") if request else None)) or session.protocol_types.get(
            group or ""
        )
        name = _text(body.get("ProtocolName") or (request.get("ProtocolName") if request else None)) or session.protocol_names.get(
            group or ""
        )
        if direction == "request":
            for i, item in _each(body.get("Assignments")):
                reading.payload(item, "Assignment", f"Assignments[{i}]", "assignment", kind, name)
        else:
            reading.payload(body, "Assignment", "", "assignment", kind, name)
    elif api_key == ApiKey.DESCRIBE_GROUPS and direction == "response":
        for i, group_struct in _each(body.get("Groups")):
            kind, name = _text(group_struct.get("ProtocolType")) or None, _text(group_struct.get("ProtocolData")) or None
            for j, member in _each(group_struct.get("Members")):
                path = f"Groups[{i}].Members[{j}]"
                reading.payload(member, "MemberMetadata", path, "subscription", kind, name)
                reading.payload(member, "MemberAssignment", path, "assignment", kind, name)
    elif api_key == ApiKey.SASL_HANDSHAKE and direction == "request":
        mechanism = body.get("Mechanism")
        session.sasl_mechanism = mechanism if isinstance(mechanism, str) else None
    elif api_key == ApiKey.SASL_AUTHENTICATE:
        auth_bytes(body, session, direction == "request", show_secrets)
    return reading.diagnostics


def auth_bytes(holder: Struct, session: Session, from_client: bool, show_secrets: bool) -> None:
    """Read the SASL message in `holder.AuthBytes` (a SaslAuthenticate body, or a raw token after SaslHandshake v0)
    by the mechanism the connection chose; the bytes themselves are redacted unless shown."""
    data = holder.get("AuthBytes")
    if isinstance(data, bytes):
        holder.annotate("AuthBytes", read_sasl(session.sasl_mechanism, data, from_client, show_secrets))
        if not show_secrets and data:
            holder.values[holder.names.index("AuthBytes")] = Redacted(len(data))
