"""Confluent Schema Registry's leader election payloads read (kdissect/schema/schema_registry.py): JSON objects, shown
as such, their members in the order they were written."""

from __future__ import annotations

import json
from typing import Any

from kdissect.decode.misread import Misread
from kdissect.schema.schema_registry import ERRORS
from kdissect.schema.tree import Struct

MAX_DEPTH = 16
"""Objects nested deeper than this (Schema Registry writes two levels) are kept as JSON text."""
MAX_SIZE = 1 << 20
"""Bytes of JSON read at most: an identity is a hundred; a larger payload is not read (parsed, JSON can take many times
its size in memory)."""


def identity(data: bytes) -> tuple[Struct | None, list[Misread]]:
    return _read(data, "Schema Registry identity")


def assignment(data: bytes) -> tuple[Struct | None, list[Misread]]:
    found, wrong = _read(data, "Schema Registry assignment")
    error = found.get("error") if found is not None else None
    if found is not None and isinstance(error, int) and not isinstance(error, bool) and error:
        found.annotate("error", ERRORS.get(error, f"UNKNOWN_ERROR_{error}"))
    return found, wrong


def _read(data: bytes, what: str) -> tuple[Struct | None, list[Misread]]:
    if len(data) > MAX_SIZE:
        return None, [Misread("embedded.malformed", f"{what}: {len(data)} bytes of JSON, more than kdissect reads ({MAX_SIZE})", MAX_SIZE)]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, [Misread("embedded.malformed", f"{what}: not UTF-8 text ({e.reason})", e.start)]
    try:
        value = json.loads(text)
    except RecursionError:
        return None, [Misread("embedded.malformed", f"{what}: JSON nested too deep to read", 0)]
    except json.JSONDecodeError as e:
        return None, [Misread("embedded.malformed", f"{what}: not JSON ({e.msg})", len(text[: e.pos].encode("utf-8")))]
    if not isinstance(value, dict):
        return None, [Misread("embedded.malformed", f"{what}: a JSON {type(value).__name__}, not an object", 0)]
    return _struct(value, 1), []


def _struct(members: dict[str, Any], depth: int) -> Struct:
    values = [_member(v, depth) for v in members.values()]
    return Struct(tuple(members), values)


def _member(value: Any, depth: int) -> Any:
    if isinstance(value, dict):
        return _struct(value, depth + 1) if depth < MAX_DEPTH else json.dumps(value)
    if isinstance(value, list):
        return json.dumps(value)
    return value
