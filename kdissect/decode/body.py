"""Message bodies: pick the schema for (API key, version, direction), run its compiled decoder, name what failed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TYPE_CHECKING

from kdissect.decode.compiler import Compiler, Decode, RecordsHook
from kdissect.decode.tree import Partial, Struct
from kdissect.diagnostic import Diagnostic
from kdissect.schema import APIS, Message, pick

if TYPE_CHECKING:
    from kdissect.decode.meaning import ErrorAt, PlacedRecords

Direction = Literal["request", "response"]


@dataclass(frozen=True, slots=True)
class Body:
    """A decoded body: its fields as far as they could be read, and which schema read them."""

    schema: str
    """The definition used, e.g. "FetchResponse"."""
    version: int
    """The version whose schema was used: the message's own, or the nearest known one."""
    fields: Struct | None
    assumed: bool = False
    """True when the message's version is unknown and `version` is the nearest one kdissect knows."""
    raw: bytes | None = None
    """The undecoded body, for API keys the schema does not know."""
    errors: tuple[ErrorAt, ...] = ()
    """Every non-zero error code in the body, with its field path."""
    topics: tuple[str, ...] = ()
    """Topics the body names (or names by an id learnt earlier), each once, in order."""
    groups: tuple[str, ...] = ()
    records: tuple[PlacedRecords, ...] = ()
    """Every records field, with the topic and partition it belongs to."""


def path_text(parts: list[str]) -> str:
    out = ""
    for part in parts:
        out += part if part.startswith("[") or not out else "." + part
    return out


def nearest_version(known: tuple[int, ...], version: int) -> int:
    """The closest known version: the newest for a future client, the oldest for anything older."""
    if version > known[-1]:
        return known[-1]
    if version < known[0]:
        return known[0]
    return max(v for v in known if v <= version)


class BodyDecoder:
    """Decodes bodies of every API key and version; compiled decoders are made on first use and kept."""

    def __init__(self, records: RecordsHook, spans: bool = False) -> None:
        self._compiler = Compiler(records, spans)
        self._decoders: dict[tuple[int, int, str], tuple[Decode, Message]] = {}

    def decoder(self, api_key: int, version: int, direction: Direction) -> tuple[Decode, Message] | None:
        key = (api_key, version, direction)
        entry = self._decoders.get(key)
        if entry is None:
            api = APIS.get(api_key)
            definition = api and pick(api.requests if direction == "request" else api.responses, version)
            if definition is None:
                return None
            entry = (self._compiler.compile(definition.fields, version, version in definition.flexible), definition)
            self._decoders[key] = entry
        return entry

    def source(self, api_key: int, version: int, direction: Direction) -> str | None:
        """The generated Python that decodes this body: `kdissect schema --source` prints it."""
        api = APIS.get(api_key)
        definition = api and pick(api.requests if direction == "request" else api.responses, version)
        if definition is None:
            return None
        return self._compiler.source(definition.fields, version, version in definition.flexible)

    def decode(self, api_key: int, version: int, direction: Direction, data: Any, start: int) -> tuple[Body, list[Diagnostic]]:
        """Decode the body that starts at `start` in a frame; offsets in diagnostics are frame offsets."""
        diagnostics: list[Diagnostic] = []
        api = APIS.get(api_key)
        if api is None:
            diagnostics.append(
                Diagnostic("body.unknown-api", f"API key {api_key} is unknown to kdissect; the body is kept raw", "warning", "frame", start)
            )
            return Body(f"api {api_key}", version, None, raw=bytes(data[start:])), diagnostics
        used, assumed = version, False
        if version not in api.versions:
            used, assumed = nearest_version(api.versions, version), True
            diagnostics.append(
                Diagnostic(
                    "body.assumed-version",
                    f"{api.name} v{version} is unknown to kdissect; decoded as v{used} (assumed v{used})",
                    "warning",
                    "frame",
                    start,
                )
            )
        entry = self.decoder(api_key, used, direction)
        assert entry is not None
        decode, definition = entry
        try:
            fields, end = decode(data, start)
        except Partial as failure:
            diagnostics.append(
                Diagnostic("body.malformed", failure.reason, "error", "frame", failure.offset, path_text(failure.path))
            )
            return Body(definition.name, used, failure.value, assumed), diagnostics
        if end < len(data):
            diagnostics.append(
                Diagnostic("body.trailing-bytes", f"{len(data) - end} bytes follow the end of the body", "warning", "frame", end)
            )
        return Body(definition.name, used, fields, assumed), diagnostics
