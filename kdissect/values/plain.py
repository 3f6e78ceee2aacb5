"""What tells a key or value that is plainly text or bytes, without the reader: its first and last bytes, and whether
a header names a schema. Imported by the JSON encoder for every run, so it imports nothing (values/reader.py, which
decides what the rest say, is loaded only when a value may be more)."""

from __future__ import annotations

SCHEMAS_TOPIC = "_schemas"
"""The registry's own topic, whose records are schemas."""
MAGIC = frozenset({0, 3})
"""First bytes of a registry's framing: Confluent's and Apicurio's 0, Glue's header version 3."""
JSON_START = frozenset(b"{[")
JSON_END = frozenset(b"}] \t\r\n")
"""The last byte of JSON text that is an object or an array, or the whitespace after it."""
CANDIDATES = frozenset(b"\x00\x03{[ \t\r\n")
"""First bytes of a key or value that may be more than text or bytes: framing's magic bytes, JSON."""
HEADERS = {role: (f"__{role}_schema_id", f"apicurio.{role}.globalId") for role in ("key", "value")}
"""The headers that name a key's or value's schema: Confluent's, Apicurio's (values/framing.py reads them)."""
SCHEMA_HEADERS = frozenset(name for names in HEADERS.values() for name in names)
"""Any of them: a record without one reads as without headers."""


def maybe_more(data: bytes) -> bool:
    """Whether a non-empty key or value without schema headers may be more than text or bytes: it starts with a
    framing's magic byte, or starts and ends as JSON may (anything else is plainly text or bytes, told without looking
    further)."""
    return data[0] in MAGIC or (data[0] in CANDIDATES and data[-1] in JSON_END)


def named_by_header(headers: tuple[tuple[str | bytes, bytes | None], ...]) -> bool:
    """Whether a header names a key's or value's schema."""
    for name, _ in headers:
        if name in SCHEMA_HEADERS:
            return True
    return False
