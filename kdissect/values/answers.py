"""Schemas out of what a registry says: its REST answers (Confluent's and Apicurio's), and the records of Confluent's
`_schemas` topic. The same reading serves the answers kdissect asks for (--schema-registry), those a capture holds
(clients asking their registry), and the topic a registry keeps its schemas in.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from kdissect.values.framing import GLOBAL_ID, GUID, ID, SchemaRef
from kdissect.values.schemas import AVRO, JSON, PROTOBUF, REGISTRY_TYPES, Reference, Schema

_BY_ID = re.compile(r"/schemas/ids/(\d+)$")
_BY_GUID = re.compile(r"/schemas/guids/([0-9a-fA-F-]{36})$")
_REGISTER = re.compile(r"/subjects/([^/]+)/versions$")
_VERSION = re.compile(r"/subjects/([^/]+)/versions/([^/]+)$")
_LOOKUP = re.compile(r"/subjects/([^/]+)$")
_APICURIO = re.compile(r"/apis/registry/v[23]/ids/globalIds/(\d+)$")
APICURIO_TYPES = {"AVRO": AVRO, "PROTOBUF": PROTOBUF, "JSON": JSON}


def confluent_schema(answer: Any, source: str, ref: SchemaRef | None = None, subject: str | None = None) -> Schema | None:
    """A schema from a Confluent registry's JSON answer (`GET /schemas/ids/N`, a registered or looked-up version);
    `ref` and `subject` are what the request said when the answer does not."""
    if not isinstance(answer, dict) or not isinstance(answer.get("schema"), str):
        return None
    fmt = REGISTRY_TYPES.get(str(answer.get("schemaType") or "AVRO").upper())
    if fmt is None:
        return None
    refs = [] if ref is None else [ref]
    if isinstance(answer.get("id"), int) and SchemaRef(ID, answer["id"]) not in refs:
        refs.append(SchemaRef(ID, answer["id"]))
    if isinstance(answer.get("guid"), str) and SchemaRef(GUID, answer["guid"]) not in refs:
        refs.append(SchemaRef(GUID, answer["guid"].lower()))
    if not refs:
        return None
    subject = answer.get("subject") if isinstance(answer.get("subject"), str) else subject
    version = answer.get("version") if isinstance(answer.get("version"), int) else None
    return Schema(fmt, answer["schema"], refs, subject, version, [source], _references(answer.get("references")))


def _references(given: Any) -> tuple[Reference, ...]:
    out = []
    for item in given if isinstance(given, list) else ():
        if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("subject"), str):
            out.append(Reference(item["name"], item["subject"], int(item.get("version") or 1)))
    return tuple(out)


def apicurio_schema(text: str, global_id: int, artifact_type: str | None, source: str) -> Schema | None:
    """A schema from Apicurio's `GET /apis/registry/v2/ids/globalIds/N`: the artifact as it is, its type in a header
    (X-Registry-ArtifactType) or told by its content."""
    fmt = APICURIO_TYPES.get((artifact_type or "").upper()) or guess_format(text)
    return Schema(fmt, text, [SchemaRef(GLOBAL_ID, global_id)], None, None, [source]) if fmt else None


def guess_format(text: str) -> str | None:
    """Avro, JSON Schema or .proto source, by what each must contain."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[", '"')):
        return PROTOBUF if re.search(r"\bmessage\s+\w+\s*\{", text) else None
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(document, dict) and ("$schema" in document or "properties" in document or document.get("type") == "object"):
        return JSON
    return AVRO


def from_exchange(
    method: str, target: str, body: bytes, status: int, answer: bytes, artifact_type: str | None, source: str
) -> list[Schema]:
    """The schemas one HTTP request and its answer tell, for the registry calls clients make; none for other calls."""
    if not 200 <= status < 300:
        return []
    split = urlsplit(target)
    path = unquote(split.path.rstrip("/"))
    query = parse_qs(split.query)
    apicurio = _APICURIO.search(path)
    if apicurio and method == "GET":
        found = apicurio_schema(answer.decode("utf-8", "replace"), int(apicurio.group(1)), artifact_type, source)
        return [found] if found else []
    try:
        told = orjson.loads(answer) if answer else None
    except orjson.JSONDecodeError:
        return []
    by_id, by_guid = _BY_ID.search(path), _BY_GUID.search(path)
    if method == "GET" and (by_id or by_guid):
        ref = SchemaRef(ID, int(by_id.group(1))) if by_id else SchemaRef(GUID, by_guid.group(1).lower())  # type: ignore[union-attr]
        subject = query.get("subject", [None])[0]
        found = confluent_schema(told, source, ref, subject)
        return [found] if found else []
    version = _VERSION.search(path)
    if method == "GET" and version:
        found = confluent_schema(told, source, None, version.group(1))
        return [found] if found else []
    registered = _REGISTER.search(path) if method == "POST" else None
    looked_up = _LOOKUP.search(path) if method == "POST" and not registered else None
    if (registered or looked_up) and isinstance(told, dict):
        try:
            sent = orjson.loads(body)
        except orjson.JSONDecodeError:
            return []
        if not isinstance(sent, dict):
            return []
        subject = (registered or looked_up).group(1)  # type: ignore[union-attr]
        merged = {**sent, **{k: v for k, v in told.items() if v is not None}}
        found = confluent_schema(merged, source, None, subject)
        return [found] if found else []
    return []


def from_schemas_record(key: bytes | None, value: bytes | None, source: str) -> Schema | None:
    """A schema from a record of Confluent's `_schemas` topic: key {"keytype": "SCHEMA", "subject", "version"}, value
    the registered schema with its id (a deleted one, or a null value, tells nothing)."""
    try:
        told_key = orjson.loads(key) if key else None
        told = orjson.loads(value) if value else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(told_key, dict) or told_key.get("keytype") != "SCHEMA" or not isinstance(told, dict) or told.get("deleted"):
        return None
    return confluent_schema(told, source)
