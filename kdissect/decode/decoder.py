"""The body decoder the core calls for every message: bodies, their records, and what they mean."""

from __future__ import annotations

from typing import Any

from kdissect.decode import embedded, meaning
from kdissect.decode.body import Body, CompiledBodies, Direction, new_body, unknown_api
from kdissect.decode.redaction import redact
from kdissect.decode.session import Session
from kdissect.diagnostic import Diagnostic
from kdissect.events import Message, RequestHeader, new_message
from kdissect.limits import DEFAULT_LIMITS, Limits
from kdissect.records.context import Budget
from kdissect.records.decode import decode_records
from kdissect.records.values import RecordSet

FRAME_BYTES_PER_RECORD = 8
"""A capture earns record budget with its frames: real records take more than 8 compressed bytes each, while a
payload of tiny records compressed a thousandfold does not earn what it would cost to build."""


class Decoder:
    """Implements the core's `CompiledBodies` protocol over the compiled schema decoders.

    Records fields are decoded as they are met, all of one message drawing on one decompression budget;
    their diagnostics join the message's, located in the frame.
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS, spans: bool = False, show_secrets: bool = False) -> None:
        self.limits = limits
        self.show_secrets = show_secrets
        self.bodies = CompiledBodies(self._records, spans, limits.max_array_elements, self._cut)
        self._cuts: list[tuple[str, int]] = []
        """Arrays of the body being decoded that had more elements than were kept."""
        self._budget: Budget | None = None
        self._found: list[tuple[int, RecordSet]] = []
        self.records_left = self.limits.max_records_capture
        """Records the rest of the capture may build: `Limits.max_records_capture`, and one more per
        `FRAME_BYTES_PER_RECORD` bytes of every frame decoded."""
        self._granted = 0
        self.topic_names: dict[str, str] = {}
        """Topic id -> name, learnt from every body that states both, on any connection."""
        self._teaching: dict[tuple[int, int], bool] = {}

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
            self._budget = Budget(self.limits.max_decompressed_exchange, min(self.limits.max_records_exchange, self.records_left))
            self._granted = self._budget.records
        records = decode_records(buf[start:end], limits=self.limits, budget=self._budget)
        if records.diagnostics:
            self._found.append((start, records))
        return records

    def _decode(
        self, message: Message, api_key: int, version: int, direction: Direction, session: Session, request: Message | None
    ) -> Message:
        header = message.header
        assert header is not None
        target = self.bodies.target(api_key, version, direction)
        if target is None:
            body, diagnostics = unknown_api(api_key, version, message.frame.data, header.length)
            return new_message(message.frame, header, body, message.diagnostics + tuple(diagnostics))
        self._budget = None
        self.records_left += message.frame.size // FRAME_BYTES_PER_RECORD
        fields, diagnostics = self.bodies.run(target, version, message.frame.data, header.length)
        if self._budget is not None:
            self.records_left -= self._granted - self._budget.records
        if self._cuts:
            diagnostics += self._cut_diagnostics(header.length)
        if self._found:
            diagnostics += self._records_diagnostics()
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
        assert isinstance(header, RequestHeader)
        return self._decode(message, header.api_key, header.api_version, "request", session, None)

    def response(self, message: Message, request: Message, session: Session) -> Message:
        header = request.header
        assert isinstance(header, RequestHeader)
        return self._decode(message, header.api_key, header.api_version, "response", session, request)
