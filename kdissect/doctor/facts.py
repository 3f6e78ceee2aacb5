"""What the rules read of an exchange: its bodies' fields and error codes, whatever the API's version."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kdissect.decode.body import Body
from kdissect.events import Exchange
from kdissect.filter.lexer import quote
from kdissect.schema.tree import Struct


def fields(message: Any) -> Struct | None:
    body = getattr(message, "body", None)
    return body.fields if isinstance(body, Body) else None


def codes(message: Any) -> list[int]:
    """Every non-zero error code in a message's body."""
    body = getattr(message, "body", None)
    return [e.code for e in body.errors] if isinstance(body, Body) else []


def each(struct: Struct | None, *names: str) -> Iterator[Struct]:
    """The structs under `struct` along the arrays `names` (the first name present at each level)."""
    if struct is None:
        return
    if not names:
        yield struct
        return
    head, rest = names[0], names[1:]
    for name in head.split("|"):
        if name in struct:
            for item in struct.get(name) or ():
                if isinstance(item, Struct):
                    if rest:
                        yield from each(item, *rest)
                    else:
                        yield item
            return


def topic_of(struct: Struct) -> str | None:
    """A topic struct's name: stated (Name, Topic) or, for a topic id, the name the decoder learnt for it."""
    for name in ("Name", "Topic"):
        value = struct.get(name)
        if isinstance(value, str):
            return value
    return (struct.annotations or {}).get("TopicId")


def broker(exchange: Exchange) -> str:
    return str(exchange.connection.broker)


def who(client: str) -> str:
    """A filter test for a client as the doctor names it: by its client id, or `connection N` for one without."""
    if client.startswith("connection ") and client[11:].isdigit():
        return f"connection == {client[11:]}"
    return f"client_id == {quote(client)}"


def among(field: str, values: list[str] | tuple[str, ...] | set[str]) -> str:
    """A filter test that `field` is one of `values` (text): `group == "a"`, or `group in {"a", "b"}`."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return f"{field} == {quote(ordered[0])}"
    return f"{field} in {{{', '.join(map(quote, ordered))}}}"
