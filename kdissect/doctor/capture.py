"""The capture itself: what it lost, what it saw only one side of, what started before it did. A finding
near these may be an artefact of the capture rather than of Kafka."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import Scope, made, numbers, plural
from kdissect.events import ConnectionEnd, Exchange

MOST_ORPHANS = 1000
"""Responses without a request one connection keeps until its end says why; past it they go to the safety net."""

LOST = Rule(
    "capture.lost-segments",
    "warning",
    "The capture lost TCP segments (sequence gaps).",
    "Bytes missing from a stream are bytes kdissect could not decode: the frames around a gap are lost or "
    "resynchronised, and the requests or responses in them missing. Findings about unanswered requests, "
    "latency or lag near a gap may be artefacts of the capture, not of Kafka.",
    "Capture with a bigger buffer (tcpdump -B), on the host rather than a mirror port, with a filter on the "
    "Kafka ports only, and check tcpdump's 'dropped by kernel' count.",
    (Threshold("threshold", 1, "bytes", "at least this many bytes missing"),),
)
ONE_SIDED = Rule(
    "capture.one-sided",
    "warning",
    "Connections seen in one direction only.",
    "A connection whose requests were captured but none of its responses (or the reverse) was captured "
    "where only one direction passes (asymmetric routing, a one-way mirror port): latency and errors cannot "
    "be known for it, and its requests all look unanswered.",
    "Capture where both directions pass: on the client or the broker host, or mirror both directions.",
    (Threshold("threshold", 3, "messages", "a connection with at least this many messages and none the other way"),),
)
MID_STREAM = Rule(
    "capture.mid-stream",
    "info",
    "Connections that started before the capture did.",
    "Without their start, a connection's first frames may be cut, and what was negotiated before (ApiVersions, "
    "SASL, group membership) is unknown: findings that depend on it start late. The responses to requests sent "
    "before the capture began are there without their requests.",
    "Start the capture before the clients connect when the start matters.",
    (Threshold("threshold", 1, "connections", "at least this many connections"),),
    expected=True,
)
TLS_HIDDEN = Rule(
    "capture.tls-hidden",
    "warning",
    "TLS connections whose Kafka exchanges stayed encrypted.",
    "kdissect reads Kafka inside TLS only with the session's secrets. Without them the connection is named (its "
    "version, cipher suite, server name) but its requests and responses are not decoded: every other finding "
    "is blind to them.",
    "Give the clients' key log with --tls-keylog (SSLKEYLOGFILE, Python's SSLContext.keylog_filename, a Java "
    "agent), or inject it into the pcapng (editcap --inject-secrets tls,KEYLOG); a capture that starts after the "
    "handshake cannot be decrypted: start it before the clients connect.",
    (Threshold("threshold", 1, "exchanges", "at least this many exchanges hidden"),),
)


class Capture(Family):
    RULES = (LOST, ONE_SIDED, MID_STREAM, TLS_HIDDEN)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.lost = self.trail()
        self.lost_bytes = 0
        self.lost_connections = 0
        self.one_sided = self.trail()
        self.mid_stream = self.trail()
        self.tls_hidden = self.trail()
        self.hidden = 0
        self.begun_before = 0
        self.orphans: dict[int, list[Exchange]] = {}
        """Connection id -> its responses without a request, until its end tells whether it began before the capture."""

    def exchange(self, exchange: Exchange) -> None:
        if exchange.status == "malformed" and any(d.code == "frame.incomplete" for d in exchange.diagnostics):
            self.lost.add(exchange)
            self.claim(exchange, LOST, "malformed")
        elif exchange.status == "orphan-response":
            orphans = made(self.orphans, exchange.connection.id, list)
            if len(orphans) < MOST_ORPHANS:
                orphans.append(exchange)
                self.defer(exchange, "orphan-response")

    def ended(self, end: ConnectionEnd) -> None:
        orphans = self.orphans.pop(end.connection.id, ())
        if end.mid_stream:
            for exchange in orphans:
                self.mid_stream.add(exchange)
                self.settle(exchange, MID_STREAM)
            self.mid_stream.connection(end.connection, end.first_ts, end.last_ts)
        else:
            for exchange in orphans:  # their requests were lost (a gap) or never sent: nothing here explains them
                self.settle(exchange, LOST if end.gap_bytes else None)
                if end.gap_bytes:
                    self.lost.add(exchange)
        if end.gap_bytes >= self.threshold(LOST):
            self.lost.connection(end.connection, end.first_ts, end.last_ts)
            self.lost_bytes += end.gap_bytes
            self.lost_connections += 1
        if max(end.requests, end.responses) >= self.threshold(ONE_SIDED) and not min(end.requests, end.responses):
            self.one_sided.connection(end.connection, end.first_ts, end.last_ts)
        if end.tls is not None and end.tls.exchanges_hidden:
            self.tls_hidden.connection(end.connection, end.first_ts, end.last_ts)
            self.hidden += end.tls.exchanges_hidden
            self.begun_before += end.mid_stream  # without its client hello no key log line can match it

    def findings(self) -> Iterator[Finding]:
        if self.lost:
            self.lost.expr = f"connection in {{{numbers(self.lost.connections)}}}"
            yield LOST.finding(
                f"{plural(len(self.lost.connections), 'connection')} lost {self.lost_bytes} bytes in the capture",
                self.lost.evidence(connections=True),
            )
        if self.one_sided:
            yield ONE_SIDED.finding(f"{plural(self.one_sided.told, 'connection')} seen one way only", self.one_sided.evidence())
        if self.mid_stream and len(self.mid_stream.connections) >= self.threshold(MID_STREAM):
            self.mid_stream.expr = f"connection in {{{numbers(self.mid_stream.connections)}}}"
            yield MID_STREAM.finding(
                f"{plural(len(self.mid_stream.connections), 'connection')} already open when the capture started",
                self.mid_stream.evidence(connections=True),
            )
        if self.tls_hidden and self.hidden >= self.threshold(TLS_HIDDEN):
            why = f", {self.begun_before} of them begun before the capture" if self.begun_before else ""
            yield TLS_HIDDEN.finding(
                f"{plural(self.tls_hidden.told, 'TLS connection')} hid about {plural(self.hidden, 'exchange')}{why}: give --tls-keylog",
                self.tls_hidden.evidence(),
            )
