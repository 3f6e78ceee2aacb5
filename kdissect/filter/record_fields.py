"""Fields of the records an exchange carries, and of what their keys and values say (docs/filters.md, docs/values.md).

`record.key`, `record.value`, `record.header.NAME`, `record.topic`, `record.offset`, `record.schema_id`,
`record.format`, `record.framing` and `record.value.FIELD.PATH` (a path through the decoded value: object fields by
name, arrays flattened) read the data records of a Produce request and of a Fetch (or ShareFetch) response alike;
`key` and `value` are the same as `record.key` and `record.value`. Over an exchange a field gives the values of all
its records, so an exchange matches when one of its records does. Over `InRecord`, one record seen with its
exchange, record fields read that record alone and exchange fields its exchange: how `records -Y` keeps only the
records that match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kdissect.decode.body import Body
from kdissect.events import Exchange
from kdissect.filter.errors import FilterError, did_you_mean
from kdissect.filter.fields import BOOL, BYTES, INT, STRUCT, TEXT, Resolved
from kdissect.filter.lexer import Token
from kdissect.records.values import LegacyMessage, Record
from kdissect.values.reader import plain_format


class InRecord:
    """One record of an exchange, as a filter reads it: record fields this record, exchange fields its exchange."""

    __slots__ = ("exchange", "topic", "record", "decoded")

    def __init__(
        self, exchange: Exchange, topic: str | None, record: Record | LegacyMessage, decoded: tuple[Any, Any] | None = None
    ) -> None:
        self.exchange = exchange
        self.topic = topic
        self.record = record
        self.decoded = decoded
        """What its key and value say, when already read (`records` reads them for its output)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.exchange, name)


Seen = tuple[Exchange | InRecord, str | None, "Record | LegacyMessage"]


def _records(exchange: Any) -> Iterator[tuple[str | None, Record | LegacyMessage, Any]]:
    """(topic, record, the InRecord or the records field it came in)."""
    if type(exchange) is InRecord:
        yield exchange.topic, exchange.record, exchange
        return
    for message in (exchange.request, exchange.response):
        body = message.body if message is not None and type(message.body) is Body else None
        if body is None or not body.records or body.schema not in DATA_BODIES:
            continue
        for placed in body.records:
            for record in placed.records.data_records():
                yield placed.topic, record, placed.records


DATA_BODIES = frozenset({"ProduceRequest", "FetchResponse", "ShareFetchResponse"})
"""The bodies whose records a consumer or producer sees (what `records` lists)."""


def _decoded(values: Any, topic: str | None, record: Record | LegacyMessage, seen: Any) -> tuple[Any, Any]:
    if type(seen) is InRecord:
        if seen.decoded is not None:
            return seen.decoded
        seen = None
    return values.record(topic, record.key, record.value, record.headers, seen)


PLAIN: dict[str, tuple[str, str, Callable[[str | None, Any], list]]] = {
    "key": (BYTES, "a record's key (null keys have no value)", lambda topic, r: [] if r.key is None else [r.key]),
    "value": (BYTES, "a record's value, its bytes as sent", lambda topic, r: [] if r.value is None else [r.value]),
    "topic": (TEXT, "the topic a record was produced to or fetched from", lambda topic, r: [] if topic is None else [topic]),
    "offset": (INT, "a record's offset (as the message states it)", lambda topic, r: [r.offset]),
    "timestamp": (INT, "a record's timestamp, ms since the epoch", lambda topic, r: [] if r.timestamp is None else [r.timestamp]),
}
DECODED: dict[str, tuple[str, str, Callable[[Any], list]]] = {
    "schema_id": (INT, "the schema id its value's framing names (an id, or a GUID or Glue version id as text)", lambda d: [d.schema_id]),
    "format": (TEXT, "how its value reads: avro, protobuf, json, unknown (a schema nobody knows), text or bytes", lambda d: [d.format]),
    "framing": (
        TEXT,
        "its value's framing: confluent, confluent-header, confluent-header-guid, apicurio, glue, none",
        lambda d: [d.framing],
    ),
}
FIELDS = {**{name: about for name, (_, about, _) in PLAIN.items()}, **{name: about for name, (_, about, _) in DECODED.items()}}
FIELDS["header.NAME"] = "the value of a record's header NAME (bytes), one per such header"
FIELDS["value.PATH"] = "a field of its decoded value, by the names of its schema or JSON (record.value.customer.name)"


def resolve_record(token: Token, name: str, values: Any) -> Resolved:
    """A `record.` field; a FilterError naming what exists."""
    if values is None:
        from kdissect.values.reader import ValueReader

        values = ValueReader()
    rest = name[len("record.") :] if name.startswith("record.") else ""
    if not rest:
        raise FilterError(f"record is not a field: name one of {', '.join('record.' + f for f in FIELDS)}", token.column)
    head, _, path = rest.partition(".")
    if head in PLAIN and not path:
        kind, _, read = PLAIN[head]
        return Resolved(token.text, frozenset({kind, TEXT} if kind == BYTES else {kind}), _over_records(lambda t, r, s: read(t, r)), None)
    if head in DECODED and not path:
        kind, _, pick = DECODED[head]
        return Resolved(token.text, frozenset({kind, TEXT}), _over_records(_decoded_field(values, pick, head == "format")), None)
    if head == "header" and path:
        return Resolved(token.text, frozenset({BYTES, TEXT}), _over_records(_header(path)), None)
    if head == "value" and path:
        return Resolved(token.text, frozenset({INT, TEXT, BOOL, STRUCT}), _over_records(_value_path(values, path.split("."))), None)
    suggestion = did_you_mean(head, [*FIELDS, "header", "value"])
    raise FilterError(f"unknown record field {head!r}{suggestion}", token.column + len("record."))


def _over_records(read: Callable[[str | None, Any, Any], list]) -> Callable[[Any], list]:
    def values(exchange: Any) -> list:
        out: list = []
        for topic, record, seen in _records(exchange):
            out.extend(read(topic, record, seen))
        return out

    return values


def _decoded_field(values: Any, pick: Callable[[Any], list], format_: bool) -> Callable[[str | None, Any, Any], list]:
    def read(topic: str | None, record: Any, seen: Any) -> list:
        decoded = _decoded(values, topic, record, seen)[1]
        if decoded is None:
            return [plain_format(record.value)] if format_ and record.value is not None else []
        return [v for v in pick(decoded) if v is not None]

    return read


def _header(name: str) -> Callable[[str | None, Any, Any], list]:
    return lambda topic, record, seen: [v for k, v in record.headers if k == name and v is not None]


def _value_path(values: Any, names: list[str]) -> Callable[[str | None, Any, Any], list]:
    def read(topic: str | None, record: Any, seen: Any) -> list:
        decoded = _decoded(values, topic, record, seen)[1]
        if decoded is None or not decoded.ok:
            return []
        nodes = [decoded.value]
        for name in names:
            found: list = []
            for node in nodes:
                if type(node) is dict and name in node:
                    item = node[name]
                    found.extend(item if type(item) is list else [item])
                elif type(node) is list:
                    found.extend(n[name] for n in node if type(n) is dict and name in n)
            nodes = [n for n in found if n is not None]
        return nodes

    return read
