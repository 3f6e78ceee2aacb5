"""MessageSpec bodies: pick the schema for (API key, version, direction), run its compiled decoder, name what failed."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Literal

from kdissect.decode.meaning import ErrorAt, PlacedRecords, Plan, plan, plans
from kdissect.diagnostic import Diagnostic, Severity
from kdissect.frozen import fast_constructor
from kdissect.limits import DEFAULT_LIMITS
from kdissect.schema import Catalog, MessageSpec, pick
from kdissect.schema.compiler import Compiler, CutHook, Decode, RecordsHook
from kdissect.schema.model import nearest_version
from kdissect.schema.tree import Partial, Struct

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


@dataclass(frozen=True, slots=True)
class Target:
    """What decoding one (API key, version, direction) needs, resolved once: the compiled function, the
    definition, the version actually used, and the plan of fields that carry meaning."""

    decode: Decode
    definition: MessageSpec
    used: int
    assumed: bool
    plan: Plan | None


new_body = fast_constructor(Body)


class CompiledBodies:
    """Decodes bodies of every API key and version of a catalogue; compiled decoders are made on first use and kept."""

    def __init__(
        self,
        catalog: Catalog,
        records: RecordsHook,
        spans: bool = False,
        keep: int = sys.maxsize,
        cut: CutHook | None = None,
        elements: int = DEFAULT_LIMITS.max_elements_message,
    ) -> None:
        self.catalog = catalog
        self._compiler = Compiler(records, spans, keep, cut, elements) if cut else Compiler(records, spans, keep, elements=elements)
        self._targets: dict[tuple[int, int, str], Target | None] = {}
        self._plans = plans(catalog)

    def target(self, api_key: int, version: int, direction: Direction) -> Target | None:
        """How to decode this body; None for an API key kdissect does not know."""
        key = (api_key, version, direction)
        try:
            return self._targets[key]
        except KeyError:
            pass
        api = self.catalog.apis.get(api_key)
        target = None
        if api is not None:
            used = version if version in api.versions else nearest_version(api.versions, version)
            definition = pick(api.requests if direction == "request" else api.responses, used)
            assert definition is not None
            decode = self._compiler.compile(definition, used)
            target = Target(decode, definition, used, used != version, plan(definition.fields, used, self._plans))
        self._targets[key] = target
        return target

    def source(self, api_key: int, version: int, direction: Direction) -> str | None:
        """The generated Python that decodes this body: `kdissect schema --source` prints it."""
        target = self.target(api_key, version, direction)
        if target is None:
            return None
        return self._compiler.source(target.definition, target.used)

    @staticmethod
    def run(target: Target, version: int, data: Any, start: int) -> tuple[Struct | None, list[Diagnostic]]:
        """Decode the body that starts at `start` in a frame; offsets in diagnostics are frame offsets."""
        diagnostics: list[Diagnostic] = []
        if target.assumed:
            name = target.definition.name.removesuffix("Request").removesuffix("Response")
            diagnostics.append(
                Diagnostic(
                    "body.assumed-version",
                    f"{name} v{version} is unknown to kdissect; decoded as v{target.used} (assumed v{target.used})",
                    "warning",
                    "frame",
                    start,
                )
            )
        try:
            fields, end = target.decode(data, start)
        except Partial as failure:
            severity: Severity = "error" if failure.code == "body.malformed" else "warning"  # a bound kept, not damage
            diagnostics.append(Diagnostic(failure.code, failure.reason, severity, "frame", failure.offset, failure.where()))
            return failure.value, diagnostics
        if end < len(data):
            trailing = f"{len(data) - end} bytes follow the end of the body"
            diagnostics.append(Diagnostic("body.trailing-bytes", trailing, "warning", "frame", end))
        return fields, diagnostics

    def decode(self, api_key: int, version: int, direction: Direction, data: Any, start: int) -> tuple[Body, list[Diagnostic]]:
        """The body alone, without the meaning `Decoder` adds: for tests, benchmarks and tools."""
        target = self.target(api_key, version, direction)
        if target is None:
            return unknown_api(api_key, version, data, start)
        fields, diagnostics = self.run(target, version, data, start)
        return new_body(target.definition.name, target.used, fields, target.assumed, None, (), (), (), ()), diagnostics


def unknown_api(api_key: int, version: int, data: Any, start: int) -> tuple[Body, list[Diagnostic]]:
    """An API key kdissect does not know: the body is kept raw."""
    message = f"API key {api_key} is unknown to kdissect; the body is kept raw"
    diagnostic = Diagnostic("body.unknown-api", message, "warning", "frame", start)
    return Body(f"api {api_key}", version, None, raw=bytes(data[start:])), [diagnostic]
