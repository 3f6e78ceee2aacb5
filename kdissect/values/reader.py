"""A record's key or value read for what it says: its framing detected and named, its schema found, its bytes decoded.

`ValueReader.read` gives a `Decoded` for what is more than text or bytes (framed by a registry's wire format, or JSON)
and None for the rest, quickly: a capture of plain values pays one look at each value's first byte and its headers.

Nothing is guessed silently. Framing named by a header is framing. A prefix that spells a registry's framing is
taken as framing when its schema is known, when a schema is known for the record's topic (subject `TOPIC-key` or
`TOPIC-value`), when another record of its batch starts with the same framing, or when the capture talks to a
registry (its HTTP, its `_schemas` topic); only then does the reader ask its `learn` hook (once: a file's pass over
the registry's answers and `_schemas` records, commands/value_sources.py) and its registry client for an unknown
schema. Otherwise the value stays text or bytes, with a note (`value.ambiguous`) saying what it looked like: a
binary value that happens to start with a zero byte costs no pass over the file.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kdissect.diagnostic import Diagnostic
from kdissect.values.decoders import Decode, Failure, LibraryMissing, Result, SchemaInvalid
from kdissect.values.framing import APICURIO, CONFLUENT, GLUE, Framing, SchemaRef, from_headers, from_prefix, prefix_size
from kdissect.values.json_values import compile_json_schema, parse_json
from kdissect.values.plain import CANDIDATES as _CANDIDATES
from kdissect.values.plain import JSON_END as _JSON_END
from kdissect.values.plain import JSON_START as _JSON_START
from kdissect.values.plain import MAGIC as _MAGIC
from kdissect.values.plain import SCHEMAS_TOPIC as SCHEMAS_TOPIC
from kdissect.values.plain import maybe_more as _maybe_more
from kdissect.values.plain import named_by_header
from kdissect.values.schemas import AVRO, JSON, PROTOBUF, Book, Schema

Header = tuple[str | bytes, bytes | None]
NONE = "none"
"""The framing of a value that carries no schema reference (plain JSON, or text that only looked framed)."""
UNKNOWN = "unknown"
"""The format of a framed value whose schema no source knows."""
TEXT, BYTES = "text", "bytes"
MAX_INFLATED = 16 << 20
"""The most bytes a Glue zlib value may inflate to."""
_CONTROL = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])


@dataclass(frozen=True, slots=True)
class Decoded:
    """What a key or value says, and how kdissect knows."""

    framing: str
    """A framing of values/framing.py, or "none"."""
    format: str
    """avro, protobuf or json; "unknown" when framed with a schema no source knows; "text" when it only looked framed."""
    why: str
    """What was seen, for people: the framing's bytes or header, the schema and where it was learnt."""
    start: int = 0
    """Where the encoded value starts in the key or value (after the framing)."""
    ref: SchemaRef | None = None
    schema: Schema | None = None
    value: Any = None
    ok: bool = False
    """`value` holds the decoded value (a JSON null decodes to None too)."""
    name: str | None = None
    """The type read: a Protobuf message's full name, an Avro record's or a JSON Schema's title."""
    diagnostics: tuple[Diagnostic, ...] = ()
    subject: str | None = None
    """The schema's subject: the topic's own (TOPIC-value, TOPIC-key) when the schema is registered under it too."""

    @property
    def plain(self) -> bool:
        """Nothing more than text or bytes after all (a prefix that only looked like framing): JSON and tables leave it
        out, `show` tells why."""
        return self.framing == NONE and self.format in (TEXT, BYTES)

    @property
    def schema_id(self) -> int | str | None:
        """The schema as the framing names it: a Confluent id, a GUID, an Apicurio global id, a Glue version id."""
        return None if self.ref is None else self.ref.id


class ValueReader:
    """Reads keys and values with the schemas of a `Book`; compiled decoders are made once per schema and kept."""

    def __init__(
        self, book: Book | None = None, learn: Callable[[], None] | None = None, fetch: Callable[[SchemaRef], Schema | None] | None = None
    ) -> None:
        self.book = book if book is not None else Book()
        self.learn = learn
        """Called once, the first time a value names a schema no source knows: a file's pass that learns every schema it
        holds (commands/value_sources.py)."""
        self._fetch = fetch
        self.registry_url: str | None = getattr(fetch, "url", None)
        """The registry `fetch` asks, to hand to another process (Spark's executors)."""
        self.registry_seen: Callable[[], bool] = lambda: self.schemas_seen
        """Whether the capture talks to a registry (its HTTP, its _schemas topic): a prefix that spells framing is then
        framing. Without that, only a header, the topic's subject or the other records of its batch say so, and only
        then does the reader learn or ask (a random binary value must not cost a pass over the file)."""
        self.schemas_seen = False
        self.learns = True
        """Whether `_schemas` records teach the book (not on a Spark executor, whose connections are dealt among tasks:
        what a record says must not depend on which task read which connection first)."""
        self._decoders: dict[int, Decode | Failure] = {}
        self._asked: set[SchemaRef] = set()
        self._agreement: tuple[object, tuple[str, int], frozenset[bytes]] = (None, ("", 0), frozenset())
        """The framing prefixes (of one length) that several keys or values of the last records field asked about share
        (the field itself is kept, not its id: a freed field's id is soon another's)."""
        self._whys: dict[tuple[Any, ...], str] = {}
        """A framed value's `why`, made once per framing and schema."""

    def read(
        self,
        role: str,
        data: bytes | None,
        headers: tuple[Header, ...] = (),
        topic: str | None = None,
        field: Any = None,
        explain: bool = False,
    ) -> Decoded | None:
        """What a record's key (`role` "key") or value says beyond its bytes; None when it is plain text or bytes.
        `field` is the records field (a `records.RecordSet`) the record came in: its other records may agree that a
        prefix is framing. With `explain`, a value that only looks framed is a plain `Decoded` with a note saying so
        (`show` tells it; the other views have nothing more to say of it than its bytes)."""
        if not data:
            return None
        first = data[0]
        if not headers and first not in _MAGIC and (first not in _CANDIDATES or data[-1] not in _JSON_END):
            return None  # plainly text or bytes (`_maybe_more`, written out: this is the path of most values)
        if topic is not None and topic.startswith("__") and _kafkas_own(topic):
            return None  # Kafka's own records, read by their own schemas (records/internal.py): no registry frames them
        framing = from_headers(role, headers) if headers else None
        if framing is None and first in _MAGIC:
            size = prefix_size(data)
            if size and not (explain or self.book.generation or self.registry_seen() or self._agreed(role, data[:size], field)):
                return None  # the book has learnt nothing, no registry seen, alone in its batch: `_framed`'s verdict, sooner
            framing = from_prefix(data, size) if size else None
        if framing is None:
            if data[-1] in _JSON_END and (first in _JSON_START or data.lstrip()[:1] in (b"{", b"[")):
                return self._json(role, data, topic)
            return None
        return self._framed(role, data, framing, topic, field, explain)

    def learn_now(self) -> None:
        """Run the learning pass if nobody asked for it yet (`kdissect schemas` lists every schema the file holds)."""
        if self.learn is not None:
            learn, self.learn = self.learn, None
            learn()

    def record(
        self,
        topic: str | None,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...],
        field: Any = None,
        explain: bool = False,
    ) -> tuple[Decoded | None, Decoded | None]:
        """A record's key and value; a record of the `_schemas` topic also teaches the book its schema."""
        if topic == SCHEMAS_TOPIC and self.learns:
            from kdissect.values.answers import from_schemas_record

            self.schemas_seen = True
            learnt = from_schemas_record(key, value, "capture: _schemas record")
            if learnt is not None:
                self.book.add(learnt)
        if headers and named_by_header(headers):
            read = self.read
            return read("key", key, headers, topic, field, explain), read("value", value, headers, topic, field, explain)
        # No header names a schema (from_headers would find none): a key or value that is plainly text or bytes is
        # told here, as `read` would tell it, without calling it.
        return (
            self.read("key", key, (), topic, field, explain) if key and _maybe_more(key) else None,
            self.read("value", value, (), topic, field, explain) if value and _maybe_more(value) else None,
        )

    def _agreed(self, role: str, prefix: bytes, field: Any) -> bool:
        """Whether another key (or value) of the same records field starts with the same framing: a producer's batch."""
        if field is None:
            return False
        if self._agreement[0] is not field or self._agreement[1] != (role, len(prefix)):
            counts: dict[bytes, int] = {}
            for record in field.records():
                data = record.key if role == "key" else record.value
                if data and data[0] in _MAGIC:
                    counts[data[: len(prefix)]] = counts.get(data[: len(prefix)], 0) + 1
            self._agreement = (field, (role, len(prefix)), frozenset(p for p, n in counts.items() if n > 1))
        return prefix in self._agreement[2]

    # -- plain JSON ------------------------------------------------------------------------------------------------

    def _json(self, role: str, data: bytes, topic: str | None) -> Decoded | None:
        parsed = parse_json(data, 0)
        if parsed.failure is not None:
            return None  # text that starts with a brace
        schema = self._topic_schema(topic, role, JSON)
        if schema is None:
            return Decoded(NONE, JSON, "JSON text without framing", 0, None, None, parsed.value, True)
        return self._decode(role, data, 0, None, schema, NONE, f"JSON text without framing; checked with {_named(schema)}", None, topic)

    # -- framed ---------------------------------------------------------------------------------------------------

    def _framed(self, role: str, data: bytes, framing: Framing, topic: str | None, field: Any, explain: bool) -> Decoded | None:
        schema = self.book.find(framing.ref)
        by_topic = self._topic_schema(topic, role, None) if schema is None else None
        prefix = framing.kind in (CONFLUENT, APICURIO, GLUE)
        if schema is None and (
            not prefix or by_topic is not None or self.registry_seen() or self._agreed(role, data[: framing.start], field)
        ):
            schema = self._find(framing.ref)  # framing beyond doubt: worth a learning pass, a registry's answer
        if schema is None:
            if prefix and by_topic is None and not self._agreed(role, data[: framing.start], field):
                if not explain:
                    return None
                plain = plain_format(data)
                note = Diagnostic(
                    "value.ambiguous",
                    f"{role} starts like {framing.kind} framing ({framing.why}), but no source knows that schema, none is known "
                    f"for topic {topic!r}, and no other record of its batch starts so: read as {plain}",
                    "note",
                    "value",
                    0,
                    role,
                )
                return Decoded(NONE, plain, f"{plain} (it only looks like {framing.kind} framing)", diagnostics=(note,))
            if by_topic is not None and by_topic.id is None:  # a folder's schema tied to the topic's subject, without ids
                why = f"{framing.why}; schema {framing.ref} is not known: read with {_named(by_topic)}"
                return self._decode(role, data, framing.start, framing.indexes, by_topic, framing.kind, why, framing, topic)
            unknown = Diagnostic(
                "value.schema-unknown",
                f"schema {framing.ref} ({framing.why}) is known to no source: give --schemas DIR or --schema-registry URL, "
                "or capture the registry's port too",
                "warning",
                "value",
                framing.start,
                role,
            )
            return Decoded(framing.kind, UNKNOWN, framing.why, framing.start, framing.ref, diagnostics=(unknown,))
        key = (framing.kind, framing.ref, framing.header, id(schema))
        told = self._whys.get(key)
        if told is None:
            told = self._whys[key] = f"{framing.why}: {_named(schema)}"
        return self._decode(role, data, framing.start, framing.indexes, schema, framing.kind, told, framing, topic)

    def _find(self, ref: SchemaRef) -> Schema | None:
        book = self.book
        found = book.find(ref)
        if found is not None or ref in self._asked:
            return found
        self._asked.add(ref)
        if self.learn is not None:
            learn, self.learn = self.learn, None
            learn()
            found = book.find(ref)
        if found is None and self._fetch is not None:
            fetched = self._fetch(ref)
            if fetched is not None:
                found = book.add(fetched)
        return found

    def _topic_schema(self, topic: str | None, role: str, fmt: str | None) -> Schema | None:
        """The latest schema of subject TOPIC-key or TOPIC-value (Confluent's default naming), of format `fmt`."""
        if topic is None:
            return None
        versions = self.book.subject(f"{topic}-{role}")
        if fmt is not None:
            versions = [s for s in versions if s.format == fmt]
        return versions[-1] if versions else None

    def _decode(
        self,
        role: str,
        data: bytes,
        start: int,
        indexes: tuple[int, ...] | None,
        schema: Schema,
        framing: str,
        why: str,
        given: Framing | None,
        topic: str | None,
    ) -> Decoded:
        ref = given.ref if given is not None else None
        topic_subject = f"{topic}-{role}" if topic is not None else None
        decode = self._decoder(schema)
        if isinstance(decode, Failure):
            problem = Diagnostic(
                decode.code,
                f"{_named(schema)}: {decode.message}",
                "error" if decode.code == "value.schema-invalid" else "warning",
                "value",
                start,
                role,
            )
            return Decoded(framing, schema.format, why, start, ref, schema, diagnostics=(problem,), subject=schema.subject)
        payload = data
        if given is not None and given.compression == "zlib":
            try:
                inflater = zlib.decompressobj()
                payload = data[:start] + inflater.decompress(data[start:], MAX_INFLATED)
            except zlib.error as exc:
                problem = Diagnostic("value.malformed", f"Glue zlib: {exc}", "error", "value", start, role)
                return Decoded(framing, schema.format, why, start, ref, schema, diagnostics=(problem,), subject=schema.subject)
        result: Result = decode(payload, start, indexes)
        failures = ([result.failure] if result.failure else []) + list(result.problems) if result.failure or result.problems else ()
        diagnostics = tuple(
            Diagnostic(
                f.code,
                f.message,
                "warning" if f.code == "value.trailing-bytes" else "error",
                "value",
                start if f.offset is None else f.offset,
                role,
            )
            for f in failures
        )
        subject = topic_subject if topic_subject is not None and schema in self.book.subject(topic_subject) else schema.subject
        return Decoded(
            framing, schema.format, why, start, ref, schema, result.value, result.failure is None, result.name, diagnostics, subject
        )

    def _decoder(self, schema: Schema) -> Decode | Failure:
        key = id(schema)
        known = self._decoders.get(key)
        if known is None:
            try:
                if schema.format == AVRO:
                    from kdissect.values.avro import compile_avro

                    known = compile_avro(schema, self.book)
                elif schema.format == PROTOBUF:
                    from kdissect.values.protobuf import compile_protobuf

                    known = compile_protobuf(schema, self.book)
                else:
                    known = compile_json_schema(schema)
            except SchemaInvalid as exc:
                known = Failure("value.schema-invalid", str(exc))
            except LibraryMissing as exc:
                known = Failure("value.decoder-missing", str(exc))
            self._decoders[key] = known
        return known


def _named(schema: Schema) -> str:
    """A schema as `why` names it: its format, and its subject and version or its ref (where it was learnt is for
    `kdissect schemas` to say: the first source to tell it depends on what a command reads first)."""
    if schema.subject and schema.version:
        return f"{schema.format} schema {schema.subject} v{schema.version}"
    return f"{schema.format} schema {schema.subject or schema.refs[0]}"


def plain_format(data: bytes) -> str:
    """A key or value the reader has nothing to say of: "text" (UTF-8 without control characters) or "bytes"."""
    return TEXT if _is_text(data, 0) or not data else BYTES


def _is_text(data: bytes, start: int) -> bool:
    """What follows a would-be framing is UTF-8 text without control characters (the JSON layout's rule for text)."""
    rest = data[start:]
    if not rest or len(rest.translate(None, _CONTROL)) != len(rest):
        return False
    try:
        rest.decode()
    except UnicodeDecodeError:
        return False
    return True


def _kafkas_own(topic: str) -> bool:
    """Whether `topic` is one Kafka writes itself (`__consumer_offsets`, ...): its records are read by their own
    schemas (records/internal.py), and a leading zero byte there is a record version, not a registry's magic byte."""
    from kdissect.schema.generated_extras import INTERNAL_TOPICS  # loaded when such a topic is met

    return topic in INTERNAL_TOPICS
