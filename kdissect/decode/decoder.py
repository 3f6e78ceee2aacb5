"""The body decoder the core calls for every message: bodies, their records, and what they mean."""

from __future__ import annotations

import struct
from typing import Any

from kdissect.decode import embedded, meaning
from kdissect.decode.body import Body, CompiledBodies, Direction, Target, new_body, unknown_api
from kdissect.decode.body_run import BodyRun, Holes, in_frame
from kdissect.decode.guess import guess_response
from kdissect.decode.redaction import carries_secrets, redact
from kdissect.decode.session import Session
from kdissect.diagnostic import Diagnostic
from kdissect.events import Frame, Message, RequestHeader, ResponseHeader, SaslTokenHeader, new_message, new_response_header
from kdissect.limits import DEFAULT_LIMITS, Limits
from kdissect.records.internal import internal_topic, read_records
from kdissect.records.values import RecordSet
from kdissect.schema import ApiKey, Catalog, ErrorCode
from kdissect.schema.tree import Partial, Struct

UNSUPPORTED_VERSION = struct.pack(">h", ErrorCode.UNSUPPORTED_VERSION)
"""What a broker says first to an ApiVersions request at a version it does not know, as it is on the wire."""
SASL_TOKEN_SCHEMA = "SaslToken"
"""The schema a raw SASL token is said to be read by: one field, AuthBytes, as in SaslAuthenticate."""

FRAME_BYTES_PER_RECORD = 8
"""A capture earns record budget with its frames: real records take more than 8 compressed bytes each, while a
payload of tiny records compressed a thousandfold does not earn what it would cost to build."""


class Decoder:
    """The core's `BodyDecoder` (kafka/shared.py) over the compiled schema decoders of one catalogue.

    Records fields are decoded as they are met, all of one message drawing on one decompression budget;
    their diagnostics join the message's, located in the frame. What one message's decoding collects is a
    `BodyRun` of its own; the decoder keeps only what outlives a message: the compiled decoders, the topic names
    learnt, the capture's record allowance.

    A frame with holes (bytes the capture lost) is decoded with zeros standing in for them, and records fields
    are told where the holes are, so they keep every batch the holes do not touch. Any other field that would
    read a missing byte cannot be trusted: the body is then decoded again, up to the first such byte.
    """

    def __init__(self, catalog: Catalog, limits: Limits = DEFAULT_LIMITS, spans: bool = False, show_secrets: bool = False) -> None:
        self.catalog = catalog
        self.limits = limits
        self.show_secrets = show_secrets
        self.bodies = CompiledBodies(catalog, self._records, spans, limits.max_array_elements, self._cut, limits.max_elements_message)
        self._run: BodyRun | None = None
        """The run of a compiled decoder going on now, which the hooks report to."""
        self.records_left = self.limits.max_records_capture
        """Records the rest of the capture may build: `Limits.max_records_capture`, and one more per
        `FRAME_BYTES_PER_RECORD` bytes of every frame decoded."""
        self.topic_names: dict[str, str] = {}
        """Topic id -> name, learnt from every body that states both, on any connection."""
        self._teaching: dict[tuple[int, int], bool] = {}
        self._located: CompiledBodies | None = None
        """Bodies decoded again with spans, to say where a payload inside them could not be read: made when first needed."""

    def new_capture(self) -> None:
        """The capture's record budget again, its compiled decoders kept: the Spark job hands one decoder to
        every task a Python worker runs."""
        self.records_left = self.limits.max_records_capture

    def _records(self, buf: Any, start: int, end: int) -> RecordSet:
        assert self._run is not None, "the compiled decoders call their hooks only while a run goes on"
        return self._run.records(buf, start, end)

    def _cut(self, field: str, count: int) -> None:
        assert self._run is not None, "the compiled decoders call their hooks only while a run goes on"
        self._run.cut(field, count)

    def _decode(
        self, message: Message, api_key: int, version: int, direction: Direction, session: Session, request: Message | None
    ) -> Message:
        header = message.header
        assert header is not None
        if api_key == ApiKey.API_VERSIONS and direction == "response" and version > 0:
            fallback = self._api_versions_fallback(message, version, session)
            if fallback is not None:
                return fallback
        target = self.bodies.target(api_key, version, direction)
        if target is None:
            body, diagnostics = unknown_api(api_key, version, message.frame.data, header.length)
            return new_message(message.frame, header, body, message.diagnostics + tuple(diagnostics))
        self.records_left += message.frame.size // FRAME_BYTES_PER_RECORD
        fields, run, diagnostics = self._body(target, version, message.frame, header.length)
        self.records_left -= run.records_built
        if run.cuts:
            diagnostics += run.cut_diagnostics(header.length)
        errors: tuple[meaning.ErrorAt, ...] = ()
        records: tuple[meaning.PlacedRecords, ...] = ()
        topics: tuple[str, ...] = ()
        groups: tuple[str, ...] = ()
        if fields is not None:
            if api_key in embedded.API_KEYS:
                request_body = request.body if request is not None and isinstance(request.body, Body) else None
                locate = self._locator(fields, api_key, version, direction, message.frame, header.length)
                request_fields = request_body.fields if request_body else None
                diagnostics += embedded.annotate(api_key, direction, fields, request_fields, session, self.show_secrets, locate)
            if target.plan is not None:
                errors, records, topics, groups = self._meaning(fields, target.plan, direction, run, diagnostics)
        body = new_body(target.definition.name, target.used, fields, target.assumed, None, errors, topics, groups, records)
        return new_message(message.frame, header, body, message.diagnostics + tuple(diagnostics) if diagnostics else message.diagnostics)

    def _meaning(
        self, fields: Struct, plan: meaning.Plan, direction: Direction, run: BodyRun, diagnostics: list[Diagnostic]
    ) -> tuple[tuple[meaning.ErrorAt, ...], tuple[meaning.PlacedRecords, ...], tuple[str, ...], tuple[str, ...]]:
        """What a decoded body says by `plan`: its errors, records, topics and groups; a response's topic ids are
        learnt, secrets redacted unless shown, and the diagnostics of records read in Kafka's own topics added to
        `diagnostics`."""
        found = meaning.Findings()
        meaning.walk(fields, plan, found, self.topic_names)
        if found.topic_ids and direction == "response":
            self.topic_names.update(found.topic_ids)
        if found.records:
            diagnostics += _read_internal(found, run)
        if found.secrets and not self.show_secrets:
            redact(found.secrets)
        return tuple(found.errors), tuple(found.records), tuple(dict.fromkeys(found.topics)), tuple(dict.fromkeys(found.groups))

    def _body(self, target: Target, version: int, frame: Frame, start: int) -> tuple[Struct | None, BodyRun, list[Diagnostic]]:
        """The body, the run that read it, and its diagnostics, records' included; a frame with holes is read as far
        as it can be trusted."""
        if frame.size == len(frame.data):
            return self._run_on(target, version, frame.data, start, (), frame.size)
        holes = frame.holes()
        full = frame.filled()
        fields, run, diagnostics = self._run_on(target, version, full, start, holes, frame.size)
        misread = _first_uncovered(holes, run.covered)
        if misread is not None and (misread < _stop(diagnostics, len(full)) or any(d.code == "body.malformed" for d in diagnostics)):
            fields, run, diagnostics = self._run_on(target, version, bytes(full[:misread]), start, holes, frame.size)
        return fields, run, diagnostics

    def _run_on(
        self, target: Target, version: int, data: Any, start: int, holes: Holes, size: int
    ) -> tuple[Struct | None, BodyRun, list[Diagnostic]]:
        """One run of the compiled decoder over `data` (of a frame of `size` bytes), with a `BodyRun` of its own for
        the hooks."""
        run, outer = BodyRun(self.limits, self.records_left, size, holes), self._run
        self._run = run
        try:
            fields, diagnostics = self.bodies.run(target, version, data, start)
        finally:
            self._run = outer
        if run.found:
            diagnostics += run.records_diagnostics()
        return fields, run, diagnostics

    def _locator(self, fields: Struct, api_key: int, version: int, direction: Direction, frame: Frame, start: int) -> embedded.Locate:
        """Where a bytes field of this body starts in the frame, for what its payload's reader could not read: from
        the body's spans, or (decoded without them) from decoding it again with spans, once, only when asked."""
        spanned: list[Struct | None] = [fields] if fields.spans is not None else []

        def locate(path: str, field: str) -> int | None:
            if not spanned:
                spanned.append(self._spanned(api_key, version, direction, frame, start))
            holder = _follow(spanned[0], path)
            span = holder.span(field) if holder is not None else None
            value = holder.get(field) if holder is not None else None
            return None if span is None or not isinstance(value, bytes) else span[1] - len(value)

        return locate

    def _spanned(self, api_key: int, version: int, direction: Direction, frame: Frame, start: int) -> Struct | None:
        if self._located is None:
            self._located = CompiledBodies(self.catalog, lambda buf, lo, hi: None, True, self.limits.max_array_elements)
        target = self._located.target(api_key, version, direction)
        if target is None:
            return None
        try:
            return target.decode(frame.data if frame.size == len(frame.data) else frame.filled(), start)[0]
        except Partial as failure:
            return failure.value

    def carries_state(self, api_key: int, version: int, direction: str) -> bool:
        """Requests that set the session (JoinGroup, SaslHandshake) and responses that can state topic ids
        beside their names (the only ones `topic_names` learns from)."""
        if direction == "request":
            return api_key in embedded.TEACHING_REQUESTS
        key = (api_key, version)
        teaches = self._teaching.get(key)
        if teaches is None:
            target = self.bodies.target(api_key, version, "response")
            teaches = self._teaching[key] = target is not None and meaning.names_topic_ids(target.plan)
        return teaches

    @staticmethod
    def new_session() -> Session:
        return Session()

    def request(self, message: Message, session: Session) -> Message:
        header = message.header
        if isinstance(header, SaslTokenHeader):
            return self._token(message, session, True)
        assert isinstance(header, RequestHeader)
        return self._decode(message, header.api_key, header.api_version, "request", session, None)

    def response(self, message: Message, request: Message | None, session: Session) -> Message:
        if request is None:
            return self._orphan(message, session)
        header = request.header
        if isinstance(header, SaslTokenHeader):
            return self._token(message, session, False)
        assert isinstance(header, RequestHeader)
        return self._decode(message, header.api_key, header.api_version, "response", session, request)

    def _api_versions_fallback(self, message: Message, version: int, session: Session) -> Message | None:
        """Kafka answers an ApiVersions request at a version it does not support in the v0 layout, with
        UNSUPPORTED_VERSION and the range it does support: read it so, when it reads whole that way."""
        header = message.header
        assert header is not None
        if message.frame.data[header.length : header.length + 2] != UNSUPPORTED_VERSION:
            return None
        decoded = self._decode(message, ApiKey.API_VERSIONS, 0, "response", session, None)
        if any(d.code in ("body.malformed", "body.trailing-bytes") for d in decoded.diagnostics[len(message.diagnostics) :]):
            return None
        body = decoded.body
        assert isinstance(body, Body) and body.fields is not None
        ranges = [k for k in body.fields.get("ApiKeys") or () if k.get("ApiKey") == ApiKey.API_VERSIONS]
        supported = f"; it supports ApiVersions v{ranges[0]['MinVersion']}-v{ranges[0]['MaxVersion']}" if ranges else ""
        note = Diagnostic(
            "body.version-fallback",
            f"UNSUPPORTED_VERSION: the broker answered ApiVersions v{version} in the v0 layout, as Kafka does{supported}",
            "note",
            "frame",
            header.length,
        )
        return new_message(decoded.frame, header, body, decoded.diagnostics + (note,))

    def _orphan(self, message: Message, session: Session) -> Message:
        """A response whose request the capture does not hold: its bytes kept raw, and read as well when they tell
        which API they answer."""
        frame, header = message.frame, message.header
        assert isinstance(header, ResponseHeader)  # an orphan is a response whose header was read
        raw: bytes | None = bytes(frame.data[header.length :])  # after the correlation id: whether tagged fields follow is unknown
        guess = guess_response(frame.data, self.catalog) if frame.size == len(frame.data) else None
        if guess is None:
            body = Body("", -1, None, raw=raw)  # no schema: nothing tells which API it answers
            return new_message(frame, header, body, message.diagnostics)
        api_key, version, start, versions = guess
        raw = bytes(frame.data[start:])
        header = new_response_header(header.correlation_id, 0 if start == 4 else 1, start, header.tagged)
        decoded = self._decode(new_message(frame, header, None, message.diagnostics), api_key, version, "response", session, None)
        body = decoded.body
        assert isinstance(body, Body)
        name = body.schema.removesuffix("Response")
        told = f"v{versions[0]}" if len(versions) == 1 else f"v{versions[0]}-v{versions[-1]}"
        note = Diagnostic(
            "body.guessed",
            f"the request is not in the capture; the body reads whole only as {name} ({told}), so it was read as {name} v{version}",
            "note",
            "frame",
            start,
        )
        if not self.show_secrets and carries_secrets(api_key, self.catalog):
            raw = None  # the body's secrets are redacted in `fields`; its bytes would tell them
        body = new_body(body.schema, body.version, body.fields, True, raw, body.errors, body.topics, body.groups, body.records)
        return new_message(frame, header, body, decoded.diagnostics + (note,))

    def _token(self, message: Message, session: Session, from_client: bool) -> Message:
        """A raw SASL token after SaslHandshake v0: read like SaslAuthenticate's AuthBytes, which is what it carries."""
        data = message.frame.data
        fields = Struct(("AuthBytes",), [data], [0, len(data)])
        embedded.auth_bytes(fields, session, from_client, self.show_secrets)
        return new_message(
            message.frame, message.header, new_body(SASL_TOKEN_SCHEMA, 0, fields, False, None, (), (), (), ()), message.diagnostics
        )


def _read_internal(found: meaning.Findings, run: BodyRun) -> list[Diagnostic]:
    """The records fields of Kafka's own topics read again, their records holding what their keys and values say, put
    in place of the fields' first reading; what does not read, as diagnostics located in the frame."""
    told = []
    for i, placed in enumerate(found.records):
        topic = internal_topic(placed.topic)
        if topic is None:
            continue
        records, said = read_records(topic, placed.records)
        holder, index = found.holders[i]
        holder.values[index] = records
        found.records[i] = meaning.PlacedRecords(placed.path, placed.topic, placed.partition, records)
        told += in_frame(run.starts.get(id(placed.records), 0), said)
    return told


def _follow(struct: Struct | None, path: str) -> Struct | None:
    """The struct at a path such as "Groups[0].Members[1]" ("" for the body itself)."""
    for part in path.split(".") if path else ():
        name, _, index = part.partition("[")
        value = struct.get(name) if struct is not None else None
        struct = None
        if isinstance(value, list) and index:
            i = int(index.rstrip("]"))
            struct = value[i] if i < len(value) and isinstance(value[i], Struct) else None
        elif isinstance(value, Struct):
            struct = value
    return struct


def _first_uncovered(holes: tuple[tuple[int, int], ...], covered: list[tuple[int, int]]) -> int | None:
    """The first missing byte that lies in no records field told of its holes; None if there is none."""
    for lo, hi in holes:
        at = lo
        while at < hi:
            span = next(((s, e) for s, e in covered if s <= at < e), None)
            if span is None:
                return at
            at = span[1]
    return None


def _stop(diagnostics: list[Diagnostic], size: int) -> int:
    """Where the body decoder stopped reading: at a failure, before trailing bytes, or at the end."""
    for d in diagnostics:
        if d.code in ("body.malformed", "body.trailing-bytes") and d.offset is not None:
            return d.offset
    return size
