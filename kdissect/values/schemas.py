"""The schemas a run knows, wherever they came from: a folder (--schemas), a registry (--schema-registry), or the
capture itself (a registry's HTTP answers, the `_schemas` topic).

A schema is known by one or more `SchemaRef`s (a Confluent id and its GUID, an Apicurio global id, a Glue schema
version id) and, when a source says so, by its subject and version. The first source to tell a schema wins; later
ones that tell the same schema are remembered as sources too, so `kdissect schemas` can say where each was learnt.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kdissect.values.framing import GUID, ID, SchemaRef

AVRO, PROTOBUF, JSON = "avro", "protobuf", "json"
FORMATS = (AVRO, PROTOBUF, JSON)
REGISTRY_TYPES = {"AVRO": AVRO, "PROTOBUF": PROTOBUF, "JSON": JSON}
"""A registry's `schemaType` (absent means AVRO) as kdissect names the format."""


@dataclass(frozen=True, slots=True)
class Reference:
    """A schema another imports (a Protobuf import, an Avro named type, a JSON Schema $ref), by subject and version."""

    name: str
    subject: str
    version: int


@dataclass(eq=False)
class Schema:
    """One schema: its format, its text as a registry or file holds it, and what names it. Two are the same schema when
    they are the same object (the book merges what names one schema into one)."""

    format: str
    text: str
    refs: list[SchemaRef]
    subject: str | None = None
    version: int | None = None
    sources: list[str] = field(default_factory=list)
    """Where it was learnt, first first: "registry http://...", "file schemas/orders.avsc", "capture: HTTP answer of
    127.0.0.1:8081 (packet 57)", "capture: _schemas record (packet 80)"."""
    references: tuple[Reference, ...] = ()
    binary: bytes | None = None
    """A compiled Protobuf descriptor set the user gave, instead of `text`."""

    @property
    def name(self) -> str:
        """The schema as people call it: its subject, else its first id."""
        return self.subject or str(self.refs[0])

    @property
    def id(self) -> int | None:
        return next((int(r.id) for r in self.refs if r.kind == ID), None)

    @property
    def guid(self) -> str | None:
        return next((str(r.id) for r in self.refs if r.kind == GUID), None)


def schema_record(schema: Schema) -> dict[str, Any]:
    """A schema as plain data, to ship to another process (a Spark executor) and make again with `schema_from_record`."""
    return {
        "format": schema.format,
        "text": schema.text,
        "refs": [[r.kind, r.id] for r in schema.refs],
        "subject": schema.subject,
        "version": schema.version,
        "sources": list(schema.sources),
        "references": [[r.name, r.subject, r.version] for r in schema.references],
        "binary": base64.b64encode(schema.binary).decode() if schema.binary is not None else None,
    }


def schema_from_record(told: dict[str, Any]) -> Schema:
    return Schema(
        told["format"],
        told["text"],
        [SchemaRef(kind, ref) for kind, ref in told["refs"]],
        told["subject"],
        told["version"],
        list(told["sources"]),
        tuple(Reference(*r) for r in told["references"]),
        base64.b64decode(told["binary"]) if told["binary"] is not None else None,
    )


class Book:
    """The known schemas, by every ref and by subject; grows as a run learns."""

    def __init__(self) -> None:
        self._by_ref: dict[SchemaRef, Schema] = {}
        self._by_subject: dict[str, list[Schema]] = {}
        self._all: list[Schema] = []
        self.generation = 0
        """Counts what was added: a reader's verdict on an unknown schema is kept only until something is learnt."""

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[Schema]:
        return iter(self._all)

    def find(self, ref: SchemaRef) -> Schema | None:
        return self._by_ref.get(ref)

    def subject(self, subject: str) -> list[Schema]:
        """The versions of a subject, in the order they were learnt."""
        return self._by_subject.get(subject, [])

    def by_version(self, subject: str, version: int) -> Schema | None:
        return next((s for s in self.subject(subject) if s.version == version), None)

    def learn(self, schemas: list[Schema]) -> None:
        """Several schemas at once (what one registry answer told)."""
        for schema in schemas:
            self.add(schema)

    def add(self, schema: Schema) -> Schema:
        """Learn a schema; one already known by any of its refs, or by its subject and version, is completed instead
        (new refs, a subject it lacked, one more source). Returns the schema as the book now holds it."""
        known = next((self._by_ref[r] for r in schema.refs if r in self._by_ref), None)
        if known is None and schema.subject is not None and schema.version is not None:
            known = self.by_version(schema.subject, schema.version)
        if known is None:
            self._all.append(schema)
            known = schema
        else:
            for ref in schema.refs:
                if ref not in known.refs:
                    known.refs.append(ref)
            if known.subject is None and schema.subject is not None:
                known.subject, known.version = schema.subject, schema.version
            told = {source.split(" (")[0] for source in known.sources}
            for source in schema.sources:  # one mention of each place (the first answer's packet, not every one)
                if source.split(" (")[0] not in told:
                    known.sources.append(source)
        for ref in known.refs:
            self._by_ref.setdefault(ref, known)
        for subject in {known.subject, schema.subject} - {None}:  # a registry gives one schema the same id under every subject
            versions = self._by_subject.setdefault(subject, [])  # type: ignore[arg-type]
            if known not in versions:
                versions.append(known)
        self.generation += 1
        return known
