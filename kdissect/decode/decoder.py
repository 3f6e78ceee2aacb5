"""The body decoder the core calls for every message: bodies, their records, and what they mean."""

from __future__ import annotations

from typing import Any

from kdissect.decode import embedded, meaning
from kdissect.decode.body import Body, CompiledBodies, Direction, Target, new_body, unknown_api
from kdissect.decode.guess import guess_response
from kdissect.decode.redaction import carries_secrets, redact
from kdissect.decode.session import Session
from kdissect.diagnostic import Diagnostic
from kdissect.events import Frame, Message, RequestHeader, SaslTokenHeader, new_message, new_response_header
from kdissect.limits import DEFAULT_LIMITS, Limits
from kdissect.records.context import Budget, earned
from kdissect.records.decode import decode_records
from kdissect.records.values import RecordSet
from kdissect.schema.tree import Struct

API_VERSIONS = 18
UNSUPPORTED_VERSION = b"\x00\x23"
"""Error code 35 as an int16: what a broker says to an ApiVersions request at a version it does not know."""
SASL_TOKEN_SCHEMA = "SaslToken"
"""The schema a raw SASL token is said to be read by: one field, AuthBytes, as in SaslAuthenticate."""

FRAME_BYTES_PER_RECORD = 8
"""A capture earns record budget with its frames: real records take more than 8 compressed bytes each, while a
payload of tiny records compressed a thousandfold does not earn what it would cost to build."""


class Decoder:
    """Implements the core's `CompiledBodies` protocol over the compiled schema decoders.

    Records fields are decoded as they are met, all of one message drawing on one decompression budget;
    their diagnostics join the message's, located in the frame.

    A frame with holes (bytes the capture lost) is decoded with zeros standing in for them, and records fields
    are told where the holes are, so they keep every batch the holes do not touch. Any other field that would
    read a missing byte cannot be trusted: the body is then decoded again, up to the first such byte.
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS, spans: bool = False, show_secrets: bool = False) -> None:
        self.limits = limits
        self.show_secrets = show_secrets
        self.bodies = CompiledBodies(self._records, spans, limits.max_array_elements, self._cut, limits.max_elements_message)
        self._cuts: list[tuple[str, int]] = []
        """Arrays of the body being decoded that had more elements than were kept."""
        self._budget: Budget | None = None
        self._found: list[tuple[int, RecordSet]] = []
        self.records_left = self.limits.max_records_capture
        """Records the rest of the capture may build: `Limits.max_records_capture`, and one more per
        `FRAME_BYTES_PER_RECORD` bytes of every frame decoded."""
        self._granted = 0
        self._frame_size = 0
        """The size of the frame being decoded: what its decompression budget is earned with."""
        self._holes: tuple[tuple[int, int], ...] = ()
        """The holes of the frame being decoded, in frame offsets."""
        self._covered: list[tuple[int, int]] = []
        """Records fields of that frame that held a hole: their readers knew, so those missing bytes were not misread."""
        self.topic_names: dict[str, str] = {}
        """Topic id -> name, learnt from every body that states both, on any connection."""
        self._teaching: dict[tuple[int, int], bool] = {}

    def new_capture(self) -> None:
        """The capture's record budget again, its compiled decoders kept: the Spark job hands one decoder to
        every task a Python worker runs."""
        self.records_left = self.limits.max_records_capture

    def _cut(self, field: str, count: int) -> None:
        self._cuts.append((field, count))

    def _cut_diagnostics(self, start: int) -> list[Diagnostic]:
        keep = self.limits.max_array_elements
        told = f"elements, the first {keep} kept (max_array_elements)"
        out = [Diagnostic("body.array-cut", f"{field}: {count} {told}", "warning", "frame", start) for field, count in self._cuts]
        self._cuts = []
        return out

    def _records(self, buf: Any, start: int, end: int) -> RecordSet:
        if self._budget is None:  # one per message, made when its first records field is met
            self._budget = Budget(earned(self.limits, self._frame_size), min(self.limits.max_records_exchange, self.records_left))
            self._granted = self._budget.records
        holes = ()
        if self._holes:
            holes = tuple((max(lo, start) - start, min(hi, end) - start) for lo, hi in self._holes if lo < end and start < hi)
            if holes:
                self._covered.append((start, end))
        records = decode_records(buf[start:end], limits=self.limits, budget=self._budget, holes=holes)
        if records.diagnostics:
            self._found.append((start, records))
        return records

    def _decode(
        self, message: Message, api_key: int, version: int, direction: Direction, session: Session, request: Message | None
    ) -> Message:
        header = message.header
        assert header is not None
        if api_key == API_VERSIONS and direction == "response" and version > 0:
            fallback = self._api_versions_fallback(message, version, session)
            if fallback is not None:
                return fallback
        target = self.bodies.target(api_key, version, direction)
        if target is None:
            body, diagnostics = unknown_api(api_key, version, message.frame.data, header.length)
            return new_message(message.frame, header, body, message.diagnostics + tuple(diagnostics))
        self.records_left += message.frame.size // FRAME_BYTES_PER_RECORD
        fields, diagnostics = self._run(target, version, message.frame, header.length)
        if self._budget is not None:
            self.records_left -= self._granted - self._budget.records
        if self._cuts:
            diagnostics += self._cut_diagnostics(header.length)
        errors = topics = groups = records = ()
        if fields is not None:
            if api_key in embedded.API_KEYS:
                request_body = request.body if request is not None and isinstance(request.body, Body) else None
                embedded.annotate(api_key, direction, fields, request_body.fields if request_body else None, session, self.show_secrets)
            if target.plan is not None:
                found = meaning.Findings()
                meaning.walk(fields, target.plan, found, self.topic_names)
                if found.topic_ids and direction == "response":
                    self.topic_names.update(found.topic_ids)
                errors, records = tuple(found.errors), tuple(found.records)
                if found.secrets and not self.show_secrets:
                    redact(found.secrets)
                topics, groups = tuple(dict.fromkeys(found.topics)), tuple(dict.fromkeys(found.groups))
        body = new_body(target.definition.name, target.used, fields, target.assumed, None, errors, topics, groups, records)
        return new_message(message.frame, header, body, message.diagnostics + tuple(diagnostics) if diagnostics else message.diagnostics)

    def _run(self, target: Target, version: int, frame: Frame, start: int) -> tuple[Struct | None, list[Diagnostic]]:
        """The body and its diagnostics, records' included; a frame with holes is read as far as it can be trusted."""
        self._budget = None
        self._frame_size = frame.size
        if frame.size == len(frame.data):
            fields, diagnostics = self.bodies.run(target, version, frame.data, start)
            return fields, diagnostics + self._records_diagnostics() if self._found else diagnostics
        self._holes, self._covered = frame.holes(), []
        try:
            full = frame.filled()
            fields, diagnostics = self.bodies.run(target, version, full, start)
            misread = _first_uncovered(self._holes, self._covered)
            if misread is not None and (misread < _stop(diagnostics, len(full)) or any(d.code == "body.malformed" for d in diagnostics)):
                self._found, self._budget, self._cuts = [], None, []
                fields, diagnostics = self.bodies.run(target, version, bytes(full[:misread]), start)
        finally:
            self._holes = ()
        return fields, diagnostics + self._records_diagnostics() if self._found else diagnostics

    def _records_diagnostics(self) -> list[Diagnostic]:
        """The record decoder's diagnostics, located in the frame."""
        out = []
        for start, records in self._found:
            for d in records.diagnostics:
                offset = start + d.offset if d.scope == "batch" and d.offset is not None else d.offset
                scope = "frame" if d.scope == "batch" else d.scope
                out.append(Diagnostic(d.code, d.message, d.severity, scope, offset, d.path))
        self._found = []
        return out

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
        decoded = self._decode(message, API_VERSIONS, 0, "response", session, None)
        if any(d.code in ("body.malformed", "body.trailing-bytes") for d in decoded.diagnostics[len(message.diagnostics) :]):
            return None
        body = decoded.body
        assert isinstance(body, Body) and body.fields is not None
        ranges = [k for k in body.fields.get("ApiKeys") or () if k.get("ApiKey") == API_VERSIONS]
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
        assert header is not None
        raw = bytes(frame.data[header.length :])  # after the correlation id: whether tagged fields follow is unknown
        guess = guess_response(frame.data) if frame.size == len(frame.data) else None
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
        if not self.show_secrets and carries_secrets(api_key):
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
