"""Payloads carried opaquely inside other messages, read into what they say.

The consumer protocol's subscriptions and assignments ride as bytes in JoinGroup, SyncGroup and DescribeGroups
when the group's protocol type is "consumer"; SASL exchanges ride in SaslAuthenticate, or after SaslHandshake v0
as raw tokens with no Kafka header. Each reading is added
to its struct as an annotation on the field it explains; the bytes themselves stay as they were, except secrets,
which are replaced unless shown.
"""

from __future__ import annotations

from kdissect.decode.redaction import Redacted
from kdissect.decode.sasl import read_sasl
from kdissect.decode.session import Session
from kdissect.schema import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, ApiKey, MessageSpec
from kdissect.schema.tree import Struct
from kdissect.schema.versioned import read_versioned

API_KEYS = frozenset({ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
"""The APIs that carry payloads inside payloads."""
TEACHING_REQUESTS = frozenset({ApiKey.JOIN_GROUP, ApiKey.SASL_HANDSHAKE})
"""Requests whose reading `annotate` keeps in the session for later messages: group protocol types, the SASL
mechanism."""
CONSUMER = "consumer"


def _protocol(holder: Struct, field: str, schema: tuple[MessageSpec, ...], protocol_type: str | None) -> None:
    """Annotate `holder.field` with its consumer-protocol reading when the group speaks that protocol.

    With the protocol type unknown (old SyncGroup versions on a connection whose JoinGroup was not captured),
    the reading is kept only if the bytes parse cleanly.
    """
    data = holder.get(field)
    if not isinstance(data, bytes) or not data or protocol_type not in (CONSUMER, None):
        return
    struct, problem = read_versioned(schema, data)
    if struct is None or (problem and protocol_type is None):
        return
    if problem:
        struct.annotate("problem", problem)
    holder.annotate(field, struct)


def _each(value: object) -> list[Struct]:
    return [v for v in value if isinstance(v, Struct)] if isinstance(value, list) else []


def annotate(api_key: int, direction: str, body: Struct, request: Struct | None, session: Session, show_secrets: bool) -> None:
    """Read the embedded payloads of one decoded body, in place."""
    if api_key == ApiKey.JOIN_GROUP:
        group = body.get("GroupId") if request is None else request.get("GroupId")
        kind = (
            body.get("ProtocolType")
            if direction == "request"
            else (body.get("ProtocolType") or (request.get("ProtocolType") if request else None))
        )
        if direction == "request" and isinstance(group, str) and isinstance(kind, str):
            session.protocol_types[group] = kind
        for item in _each(body.get("Protocols" if direction == "request" else "Members")):
            _protocol(item, "Metadata", CONSUMER_PROTOCOL_SUBSCRIPTION, kind)
    elif api_key == ApiKey.SYNC_GROUP:
        group = (request or body).get("GroupId")
        kind = body.get("ProtocolType") or (request.get("ProtocolType") if request else None) or session.protocol_types.get(group)
        if direction == "request":
            for item in _each(body.get("Assignments")):
                _protocol(item, "Assignment", CONSUMER_PROTOCOL_ASSIGNMENT, kind)
        else:
            _protocol(body, "Assignment", CONSUMER_PROTOCOL_ASSIGNMENT, kind)
    elif api_key == ApiKey.DESCRIBE_GROUPS and direction == "response":
        for group in _each(body.get("Groups")):
            kind = group.get("ProtocolType") or None
            for member in _each(group.get("Members")):
                _protocol(member, "MemberMetadata", CONSUMER_PROTOCOL_SUBSCRIPTION, kind)
                _protocol(member, "MemberAssignment", CONSUMER_PROTOCOL_ASSIGNMENT, kind)
    elif api_key == ApiKey.SASL_HANDSHAKE and direction == "request":
        mechanism = body.get("Mechanism")
        session.sasl_mechanism = mechanism if isinstance(mechanism, str) else None
    elif api_key == ApiKey.SASL_AUTHENTICATE:
        auth_bytes(body, session, direction == "request", show_secrets)


def auth_bytes(holder: Struct, session: Session, from_client: bool, show_secrets: bool) -> None:
    """Read the SASL message in `holder.AuthBytes` (a SaslAuthenticate body, or a raw token after SaslHandshake v0)
    by the mechanism the connection chose; the bytes themselves are redacted unless shown."""
    data = holder.get("AuthBytes")
    if isinstance(data, bytes):
        holder.annotate("AuthBytes", read_sasl(session.sasl_mechanism, data, from_client, show_secrets))
        if not show_secrets and data:
            holder.values[holder.names.index("AuthBytes")] = Redacted(len(data))
