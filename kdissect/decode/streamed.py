"""The data records an exchange carries, as a producer sent them or a consumer got them: each with the topic and
partition it went to, its offset as the broker assigned it, and what its key and value say (docs/values.md).

`kdissect records` lists them, the doctor's value rules read them; control records (transaction markers) are left out,
as a consumer never sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from kdissect.decode.body import Body
from kdissect.events import Exchange
from kdissect.records.values import LegacyMessage, Record

DIRECTIONS = ("produce", "fetch")


@dataclass(frozen=True, slots=True)
class StreamedRecord:
    """One record of an exchange, with where it was going: produced to, or fetched from, a topic's partition."""

    exchange: Exchange
    direction: str
    topic: str | None
    partition: int | None
    record: Record | LegacyMessage
    decoded: tuple[Any, Any] = (None, None)
    """What its key and value say (`values.reader.Decoded` or None each), when the run reads values."""


def exchange_records(
    exchange: Exchange,
    directions: frozenset[str] = frozenset(DIRECTIONS),
    values: Any = None,
    skip: Callable[[str | None, int | None, int, bytes | None], bool] | None = None,
) -> Iterator[StreamedRecord]:
    """The data records an exchange carries: a Produce request's, a Fetch (or ShareFetch) response's, each with what its
    key and value say when `values` (a `values.reader.ValueReader`) reads them.

    A produced record's offset is the one the broker assigned (its response's BaseOffset plus the record's place
    in the request), as a producer's delivery report tells it; -1 when the capture holds no such answer (acks=0,
    an error, a lost response).

    `skip(topic, partition, offset, value)`, asked of each record as it comes (after the caller saw those before
    it), passes over the records it names before their values are read: the doctor's, already counted (a caller
    whose reader learns from the `_schemas` topic's records skips none of them)."""
    read = values.record if values is not None else None  # once: a run's reader is made at its first use
    for direction, message in (("produce", exchange.request), ("fetch", exchange.response)):
        if direction not in directions or message is None or not isinstance(message.body, Body):
            continue
        assigned = _assigned_offsets(exchange) if direction == "produce" else {}
        for placed in message.body.records:
            topic, partition = placed.topic, placed.partition
            base = assigned.get(placed.path, -1) if direction == "produce" else None
            first = None
            for record in placed.records.data_records():
                offset = record.offset
                if base is not None:
                    first = offset if first is None else first
                    offset = base + offset - first if base >= 0 else -1
                if skip is not None and skip(topic, partition, offset, record.value):
                    continue
                if base is not None:
                    record = replace(record, offset=offset)
                decoded = read(topic, record.key, record.value, record.headers, placed.records) if read else (None, None)
                yield StreamedRecord(exchange, direction, topic, partition, record, decoded)


def _assigned_offsets(exchange: Exchange) -> dict[str, int]:
    """The base offset the broker gave each records field of a Produce request, by the field's path."""
    response = exchange.response.body if exchange.response is not None else None
    if not isinstance(response, Body) or response.fields is None or not isinstance(exchange.request.body, Body):  # type: ignore[union-attr]
        return {}
    bases = {}
    for topic in response.fields.get("Responses") or ():
        name = topic.get("Name") or topic.get("TopicId")
        for partition in topic.get("PartitionResponses") or ():
            base = partition.get("BaseOffset")
            if partition.get("ErrorCode") == 0 and isinstance(base, int) and base >= 0:
                bases[(name, partition.get("Index"))] = base
    paths = {}
    for i, topic in enumerate(exchange.request.body.fields.get("TopicData") or ()):  # type: ignore[union-attr]
        name = topic.get("Name") or topic.get("TopicId")
        for j, partition in enumerate(topic.get("PartitionData") or ()):
            base = bases.get((name, partition.get("Index")))
            if base is not None:
                paths[f"TopicData[{i}].PartitionData[{j}].Records"] = base
    return paths
