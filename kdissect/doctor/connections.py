"""Requests left without an answer, and why (a later answer skipped them, the broker closed the connection, the
client did, the capture ended); frames whose bytes were all captured but did not decode, named by who sent them."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import fields
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import KEEP_WAITING_ALL, Scope, Trail, made, plural, span
from kdissect.events import ConnectionEnd, Exchange
from kdissect.events.exchange import MALFORMED
from kdissect.schema import ApiKey

SECOND = 1_000_000_000
MOST_WAITING = 1000
"""Unanswered requests one connection keeps until it knows why; past it they are told as skipped."""
UNDECODED = frozenset({"header.unreadable", "body.malformed", "decode.internal-error"})
"""A frame whose bytes are all there, and still does not decode: the peer's fault, not the capture's."""

UNANSWERED = Rule(
    "protocol.unanswered",
    "warning",
    "Requests never answered while later requests on the same connection were.",
    "A broker answers one connection's requests in order, so a request without a response before later ones "
    "were answered lost its response: in the network, or in the capture (see capture.lost-segments).",
    "If the capture lost nothing, look at the client's {request_timeout} and retries in the same window, and at "
    "anything between the client and the broker (a proxy, a load balancer) that may drop responses.",
    (),
)
BROKER_CLOSED = Rule(
    "protocol.broker-closed",
    "error",
    "Requests the broker never answered because it closed the connection.",
    "The broker closed the connection (a FIN or a reset) with these requests still waiting for an answer: it "
    "refused them the hard way. A broker does this when it cannot read a request (a version it does not support, "
    "a malformed one), when it crashes on it, or when it shuts down; the client sees a disconnect and retries, "
    "often with the same request.",
    "The API and version in the title are the lead: check the broker's log for the moment the connection closed, "
    "and whether the broker supports that version (some requests are broker-to-broker only, such as "
    "AddPartitionsToTxn v4+ since KIP-890).",
    (),
)
CLIENT_CLOSED = Rule(
    "protocol.client-closed",
    "info",
    "Requests still waiting when the client closed its connection.",
    "A client that shuts down (or drops an idle connection) closes it with whatever is in flight: a consumer's "
    "long-poll Fetch, a background metadata refresh. Their answers were never going to be read.",
    "Nothing to do, unless the client was not meant to close: then look at why it did.",
    (),
    expected=True,
)
GAVE_UP = Rule(
    "protocol.client-gave-up",
    "warning",
    "Requests a client gave up on: it closed the connection after waiting long for their answers.",
    "A client that waits longer than its request timeout for an answer takes the connection for dead: it closes it "
    "and sends the requests again on a new one. The broker may still have done the work, so the same records can "
    "arrive twice (producer.duplicate-send), and the client waited the whole timeout.",
    "Compare {request_timeout} with what the broker takes (latency.outliers, the Produce and Fetch latencies): "
    "a broker that is slow at times needs a longer timeout, a network that drops answers needs fixing.",
    (Threshold("threshold", 1, "seconds", "a request (other than a long-poll Fetch) waiting at least this long when the client closed"),),
)
CAPTURE_ENDED = Rule(
    "capture.ended-first",
    "info",
    "Requests whose answers the capture ended (or gave up on the connection) before.",
    "The capture stopped, or kdissect let go of the connection under its memory bounds, while these requests were "
    "in flight: their answers may well have come.",
    "Capture for longer when the last requests matter.",
    (),
    expected=True,
)
MALFORMED_FRAME = Rule(
    "protocol.malformed",
    "error",
    "Messages whose bytes were all captured, and still do not decode as their API says.",
    "The capture holds every byte of these frames, so they are as their sender wrote them: a field ends past the "
    "frame, or bytes are left over. Either the sender wrote a wrong message (a broker answering in a layout the "
    "request's version does not have, a client bug) or the two disagree on the version. Clients fail such "
    "responses and usually retry; brokers close the connection on such requests.",
    "Report it to whoever wrote the sender (the title names it, the API and the version); meanwhile pin the "
    "client to a version the sender gets right ({version_pin}).",
    (),
)
RULES = (UNANSWERED, BROKER_CLOSED, GAVE_UP, CLIENT_CLOSED, CAPTURE_ENDED, MALFORMED_FRAME)


class Connections(Family):
    RULES = RULES

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.waiting: dict[int, list[Exchange]] = {}
        """Connection id -> its unanswered requests, until a later answer or its end says why: `MOST_WAITING` per
        connection, `KEEP_WAITING_ALL` in all (`held`); the others are told skipped at once, and counted (`past`)."""
        self.held = 0
        self.past = 0
        self.told: dict[str, Trail] = {rule.id: self.trail() for rule in (UNANSWERED, BROKER_CLOSED, GAVE_UP, CLIENT_CLOSED, CAPTURE_ENDED)}
        self.closed: dict[str, dict[str, int]] = {rule.id: {} for rule in (BROKER_CLOSED, GAVE_UP, CLIENT_CLOSED, CAPTURE_ENDED)}
        self.longest = 0
        """The longest a request given up on had waited."""
        """Rule id -> "API vN" -> requests, for the titles."""
        self.closers: dict[str, set[str]] = {BROKER_CLOSED.id: set()}
        self.malformed: dict[tuple[str, str, str], Trail] = {}
        """(sender, "API vN", side) -> the exchanges whose message from it did not decode."""
        self.why: dict[tuple[str, str, str], str] = {}

    def exchange(self, exchange: Exchange) -> None:
        connection = exchange.connection.id
        if exchange.status == "unanswered":
            waiting = made(self.waiting, connection, list)
            if len(waiting) < MOST_WAITING and self.held < KEEP_WAITING_ALL:
                waiting.append(exchange)
                self.held += 1
                self.defer(exchange, "unanswered")
            else:
                self.past += 1
                self._tell(UNANSWERED, exchange)
        elif exchange.response is not None and exchange.request is not None and connection in self.waiting:
            for skipped in self._forget(connection):
                self._tell(UNANSWERED, skipped)
        if exchange.status in ("malformed", "unreadable"):
            self._malformed(exchange)

    def _malformed(self, exchange: Exchange) -> None:
        for side, message in (("request", exchange.request), ("response", exchange.response)):
            if message is None:
                continue
            codes = {d.code for d in message.diagnostics}
            if codes & MALFORMED and not codes & UNDECODED:
                return  # bytes the capture lost: the capture family tells them
            found = next((d for d in message.diagnostics if d.code in UNDECODED), None)
            if found is None:
                continue
            sender = f"client {exchange.client_id}" if side == "request" else f"broker {exchange.connection.broker}"
            what = f"{exchange.api_name or '?'} v{exchange.api_version}" if exchange.api_version is not None else "an unknown API"
            key = (sender, what, side)
            made(self.malformed, key, Trail, self.scope).add(exchange)
            self.why.setdefault(key, found.message)
            self.claim(exchange, MALFORMED_FRAME, exchange.status)
            return

    def _tell(self, rule: Rule, exchange: Exchange) -> None:
        self.told[rule.id].add(exchange)
        self.settle(exchange, rule)
        if rule.id in self.closed:
            what = f"{exchange.api_name or '?'} v{exchange.api_version}"
            self.closed[rule.id][what] = self.closed[rule.id].get(what, 0) + 1

    def _forget(self, connection: int) -> list[Exchange]:
        """The unanswered requests held for a connection, no longer held."""
        waiting = self.waiting.pop(connection, [])
        self.held -= len(waiting)
        return waiting

    def bounds(self) -> list[tuple[int, str]]:
        told = super().bounds()
        if self.past:
            past = f"past {MOST_WAITING} per connection or {KEEP_WAITING_ALL} in all"
            told.append((self.past, f"{self.past} unanswered requests told skipped at once, not held, {past}"))
        return told

    def ended(self, end: ConnectionEnd) -> None:
        waiting = self._forget(end.connection.id)
        if not waiting:
            return
        rule = BROKER_CLOSED if end.closed_by == "broker" else CLIENT_CLOSED if end.closed_by == "client" else CAPTURE_ENDED
        if rule is BROKER_CLOSED:
            self.closers[rule.id].add(f"{'a reset' if end.ended == 'reset' else 'a FIN'} from {end.connection.broker}")
        for exchange in waiting:
            waited = end.last_ts - exchange.ts
            if rule is CLIENT_CLOSED and waited >= self.threshold(GAVE_UP) * SECOND + _held(exchange):
                self.longest = max(self.longest, waited)
                self._tell(GAVE_UP, exchange)
            else:
                self._tell(rule, exchange)

    def findings(self) -> Iterator[Finding]:
        for connection in list(self.waiting):  # the capture ended with these waiting and the connection open
            for exchange in self._forget(connection):
                self._tell(CAPTURE_ENDED, exchange)
        for (sender, what, side), trail in sorted(self.malformed.items()):
            if trail:
                yield MALFORMED_FRAME.finding(
                    f"{plural(trail.told, what + ' ' + side)} from {sender} {'does' if trail.told == 1 else 'do'} not decode: "
                    f"{self.why[(sender, what, side)]}",
                    trail.evidence(),
                )
        trail = self.told[UNANSWERED.id]
        if trail:
            yield UNANSWERED.finding(
                f"{plural(trail.told, 'request')} skipped: later requests on their connections were answered", trail.evidence()
            )
        for rule, words in (
            (BROKER_CLOSED, "outstanding when the broker closed their connection"),
            (GAVE_UP, f"given up on: the client closed their connection after waiting up to {span(self.longest)}"),
            (CLIENT_CLOSED, "outstanding when the client closed its connection"),
            (CAPTURE_ENDED, "in flight when the capture ended"),
        ):
            trail = self.told[rule.id]
            if trail:
                apis = ", ".join(f"{what} ×{n}" for what, n in sorted(self.closed[rule.id].items(), key=lambda item: -item[1]))
                closers = f" ({'; '.join(sorted(self.closers[rule.id]))})" if rule.id in self.closers else ""
                yield rule.finding(f"{plural(trail.told, 'request')} {words}{closers}: {apis}", trail.evidence())


def _held(exchange: Exchange) -> int:
    """How long the broker may hold a request by design: a Fetch, up to its MaxWaitMs (a long poll)."""
    if exchange.api_key != ApiKey.FETCH:
        return 0
    request = fields(exchange.request)
    wait = request.get("MaxWaitMs") if request is not None else None
    return max(0, wait) * 1_000_000 if isinstance(wait, int) else 0
