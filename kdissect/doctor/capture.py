"""The capture itself: what it lost, what it saw only one side of, what started before it did. A finding
near these may be an artefact of the capture rather than of Kafka."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import Scope, Trail, plural
from kdissect.events import ConnectionEnd

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
    "SASL, group membership) is unknown: findings that depend on it start late.",
    "Start the capture before the clients connect when the start matters.",
    (Threshold("threshold", 1, "connections", "at least this many connections"),),
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

    def __init__(self, settings: Settings, scope: Scope) -> None:
        super().__init__(settings, scope)
        self.lost = Trail(self.scope)
        self.lost_bytes = 0
        self.one_sided = Trail(self.scope)
        self.mid_stream = Trail(self.scope)
        self.tls_hidden = Trail(self.scope)
        self.hidden = 0
        self.begun_before = 0

    def ended(self, end: ConnectionEnd) -> None:
        if end.gap_bytes >= self.threshold(LOST):
            self.lost.connection(end.connection, end.first_ts, end.last_ts)
            self.lost.count += 1
            self.lost_bytes += end.gap_bytes
        if max(end.requests, end.responses) >= self.threshold(ONE_SIDED) and not min(end.requests, end.responses):
            self.one_sided.connection(end.connection, end.first_ts, end.last_ts)
            self.one_sided.count += 1
        if end.mid_stream:
            self.mid_stream.connection(end.connection, end.first_ts, end.last_ts)
            self.mid_stream.count += 1
        if end.tls is not None and end.tls.exchanges_hidden:
            self.tls_hidden.connection(end.connection, end.first_ts, end.last_ts)
            self.tls_hidden.count += 1
            self.hidden += end.tls.exchanges_hidden
            self.begun_before += end.mid_stream  # without its client hello no key log line can match it

    def findings(self) -> Iterator[Finding]:
        if self.lost:
            yield LOST.finding(f"{self.lost_bytes} bytes missing in {plural(self.lost.count, 'connection')}", self.lost.evidence())
        if self.one_sided:
            yield ONE_SIDED.finding(f"{plural(self.one_sided.count, 'connection')} seen one way only", self.one_sided.evidence())
        if self.mid_stream and self.mid_stream.count >= self.threshold(MID_STREAM):
            yield MID_STREAM.finding(
                f"{plural(self.mid_stream.count, 'connection')} already open when the capture started", self.mid_stream.evidence()
            )
        if self.tls_hidden and self.hidden >= self.threshold(TLS_HIDDEN):
            why = f", {self.begun_before} of them begun before the capture" if self.begun_before else ""
            yield TLS_HIDDEN.finding(
                f"about {plural(self.hidden, 'exchange')} hidden in {plural(self.tls_hidden.count, 'TLS connection')}{why}: "
                "give --tls-keylog",
                self.tls_hidden.evidence(),
            )
