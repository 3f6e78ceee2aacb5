"""Messages for tests, benchmarks and synthetic captures, written by `kdissect.schema.encoder` from a few values.

`build` fills in every field not given with a zero-like default, so a test names only what it is about.
"""

from __future__ import annotations

from typing import Any

from kdissect.schema.encoder import Encoder, RecordsEncoder
from kdissect.schema.model import Field
from kdissect.schema.tree import Struct

DEFAULTS = {"bool": False, "string": "", "bytes": b"", "records": None, "uuid": "00000000-0000-0000-0000-000000000000"}


def build(fields: tuple[Field, ...], version: int, values: dict[str, Any]) -> Struct:
    """A struct for `fields` at `version`: the values given by name (nested as dicts and lists of dicts),
    zero-like defaults for the rest. How tests and benchmarks write messages without spelling every field."""
    names, out = [], []
    for f in fields:
        if version not in f.versions or version in f.tagged:
            continue
        value = values.get(f.name)
        if f.is_struct:
            if f.array:
                value = None if f.name in values and value is None else [build(f.fields, version, item) for item in (value or ())]
            elif not (f.name in values and value is None):
                value = build(f.fields, version, value or {})
        elif value is None and f.name not in values:
            value = [] if f.array else DEFAULTS.get(f.type, 0)
        names.append(f.name)
        out.append(value)
    return Struct(tuple(names), out)


def encode_body(api_key: int, version: int, direction: str, values: dict[str, Any], records: RecordsEncoder = bytes) -> bytes:
    """The body of a request or response of this API and version, from `build`'s values."""
    from kdissect.schema import BUILTIN

    api = BUILTIN.apis[api_key]
    definition = api.request(version) if direction == "request" else api.response(version)
    if definition is None:
        raise ValueError(f"API key {api_key} has no version {version}")
    return Encoder(records).encode(definition.fields, version, version in definition.flexible, build(definition.fields, version, values))
