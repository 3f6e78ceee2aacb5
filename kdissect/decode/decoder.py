"""The body decoder the core calls for every message: bodies, their records, and what they mean."""

from __future__ import annotations

import dataclasses
from typing import Any

from kdissect.decode import embedded, meaning
from kdissect.decode.body import Body, BodyDecoder, Direction
from kdissect.diagnostic import Diagnostic
from kdissect.kafka.exchange import Message
from kdissect.kafka.headers import RequestHeader
from kdissect.kafka.session import Session
from kdissect.limits import DEFAULT_LIMITS, Limits
from kdissect.records.context import Budget
from kdissect.records.decode import decode_records
from kdissect.records.values import RecordSet


class Decoder:
    """Implements the core's `BodyDecoder` protocol over the compiled schema decoders.

    Records fields are decoded as they are met, all of one message drawing on one decompression budget;
    their diagnostics join the message's, located in the frame.
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS, spans: bool = False, show_secrets: bool = False) -> None:
        self.limits = limits
        self.show_secrets = show_secrets
        self.bodies = BodyDecoder(self._records, spans)
        self._budget = Budget(limits.max_decompressed_exchange)
        self._found: list[tuple[int, RecordSet]] = []
        self.topic_names: dict[str, str] = {}
        """Topic id -> name, learnt from every body that states both, on any connection."""

    def _records(self, buf: Any, start: int, end: int) -> RecordSet:
        records = decode_records(buf[start:end], limits=self.limits, budget=self._budget)
        if records.diagnostics:
            self._found.append((start, records))
        return records

    def _decode(
        self, message: Message, api_key: int, version: int, direction: Direction, session: Session, request: Message | None
    ) -> Message:
        header = message.header
        assert header is not None
        self._budget = Budget(self.limits.max_decompressed_exchange)
        self._found = []
        body, diagnostics = self.bodies.decode(api_key, version, direction, message.frame.data, header.length)
        for start, records in self._found:
            for d in records.diagnostics:
                offset = start + d.offset if d.scope == "batch" and d.offset is not None else d.offset
                scope = "frame" if d.scope == "batch" else d.scope
                diagnostics.append(Diagnostic(d.code, d.message, d.severity, scope, offset, d.path))
        if body.fields is not None:
            request_body = request.body if request is not None and isinstance(request.body, Body) else None
            embedded.annotate(
                api_key, direction, body.fields, request_body.fields if request_body else None,
                session, self.show_secrets,
            )
            body = self._meaning(body, api_key, direction)
        return Message(message.frame, header, body, message.diagnostics + tuple(diagnostics))

    def _meaning(self, body: Body, api_key: int, direction: Direction) -> Body:
        definition = self.bodies.decoder(api_key, body.version, direction)
        assert definition is not None and body.fields is not None
        found = meaning.Findings()
        meaning.walk(body.fields, meaning.plan(definition[1].fields, body.version), found, self.topic_names)
        if direction == "response":
            self.topic_names.update(found.topic_ids)
        return dataclasses.replace(
            body,
            errors=tuple(found.errors),
            topics=tuple(dict.fromkeys(found.topics)),
            groups=tuple(dict.fromkeys(found.groups)),
            records=tuple(found.records),
        )

    def request(self, message: Message, session: Session) -> Message:
        header = message.header
        assert isinstance(header, RequestHeader)
        return self._decode(message, header.api_key, header.api_version, "request", session, None)

    def response(self, message: Message, request: Message, session: Session) -> Message:
        header = request.header
        assert isinstance(header, RequestHeader)
        return self._decode(message, header.api_key, header.api_version, "response", session, request)
