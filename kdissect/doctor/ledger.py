"""The doctor's accounting: every exchange `read` shows as not ok is explained, by a finding that warns about it or
by a rule that says why it is expected, and what no rule explains is told by the safety net.

An exchange's troubles are each of its error codes and, when its status is not ok or error, its status
(unanswered, malformed, orphan-response, unreadable). While the families look at an exchange, a rule that
explains a trouble claims it; what is left unclaimed goes to the safety net at once, and at the end the claims of a
rule that told nothing (its threshold not met, or an info rule that is not an `expected` one) go there too. The
safety net tells each (API, trouble) with the error's meaning and whether clients retry it.
"""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.decode.body import Body
from kdissect.doctor.finding import Evidence, Finding
from kdissect.doctor.rule import Rule
from kdissect.doctor.trail import Scope, Trail, made, plural
from kdissect.events import Exchange
from kdissect.schema import ERRORS, error_name

TROUBLE_STATUSES = frozenset({"unanswered", "malformed", "orphan-response", "unreadable"})
MEANINGS = {
    "unanswered": "no response in the capture",
    "malformed": "a side whose bytes could not be read whole",
    "orphan-response": "a response whose request is not in the capture",
    "unreadable": "a request whose header cannot be read",
}
MOST_KEYS = 1000
"""Distinct (API, trouble) kept by the safety net and by each rule's claims; more are counted, told once."""

RETRIABLE = Rule(
    "errors.retriable",
    "warning",
    "Errors clients retry by themselves that no other finding explains.",
    "The broker answered with an error that Kafka's clients treat as retriable: they wait and send the request "
    "again, so the application sees only a delay, unless the retries run out. Many of them mean something keeps "
    "failing (a leader moving, a coordinator loading, a replica out of sync).",
    "The error's meaning is in the title; look at the broker's log at those times, and at the client's retry and "
    "timeout settings ({retries}, {request_timeout}).",
    (),
)
UNEXPLAINED = Rule(
    "errors.unexplained",
    "error",
    "Errors and failed exchanges that no other finding explains.",
    "The broker refused a request with an error clients do not retry, or an exchange failed in a way no other rule "
    "recognises: the request's work was not done, and the application was told (or its records were lost).",
    "The error's meaning is in the title; the exchanges themselves (`kdissect show FILE --exchange N`) say what was "
    "asked. Look at the broker's log at those times.",
    (),
)
RULES = (RETRIABLE, UNEXPLAINED)

Key = tuple[str, str]
"""(API, trouble)."""


def troubles(exchange: Exchange) -> list[str]:
    """What `read` shows as not ok about an exchange: its status when that is a failure, each error code by name."""
    out: list[str] = [exchange.status] if exchange.status in TROUBLE_STATUSES else []
    for message in (exchange.request, exchange.response):
        body = message.body if message is not None else None
        if isinstance(body, Body):
            for error in body.errors:
                name = error_name(error.code)
                if name not in out:
                    out.append(name)
    return out


def retriable(trouble: str) -> bool:
    code = next((c for c, e in ERRORS.items() if e.name == trouble), None)
    return code is not None and ERRORS[code].retriable


def meaning(trouble: str) -> str:
    if trouble in MEANINGS:
        return MEANINGS[trouble]
    code = next((c for c, e in ERRORS.items() if e.name == trouble), None)
    return ERRORS[code].meaning if code is not None else "an error code Kafka's table does not have"


class Ledger:
    """Who explains what: the troubles of the exchange being looked at, the claims every rule made, and the safety
    net's trails."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.pending: list[str] = []
        """The troubles of the exchange the families are looking at, not claimed yet."""
        self.claims: dict[str, dict[Key, Trail]] = {}
        """Rule id -> what it claimed, by key: given to the safety net if the rule tells nothing."""
        self.unclaimed: dict[Key, Trail] = {}
        self.deferred: dict[int, tuple[Exchange, list[str]]] = {}
        """Exchange id -> its troubles a family will say who explains once it knows (a request outstanding when its
        connection closed: the side that closed it decides)."""
        self.dropped = 0
        """Troubles past `MOST_KEYS` distinct keys: counted, not kept."""

    def open(self, exchange: Exchange) -> None:
        self.pending = troubles(exchange) if exchange.status != "ok" else []

    def claim(self, exchange: Exchange, rule: Rule, *which: str) -> None:
        """`rule` explains these troubles of the exchange (all of them without `which`)."""
        if not self.pending:
            return
        taken = [t for t in self.pending if not which or t in which]
        if not taken:
            return
        self.pending = [t for t in self.pending if t not in taken]
        claimed = made(self.claims, rule.id, dict)
        for trouble in taken:
            self._trail(claimed, exchange, trouble)

    def defer(self, exchange: Exchange, *which: str) -> None:
        """These troubles of the exchange (all without `which`) wait for `settle`: the family that defers them keeps
        the exchange until it knows (its own bookkeeping bounds how many wait)."""
        taken = [t for t in self.pending if not which or t in which]
        if taken:
            self.pending = [t for t in self.pending if t not in taken]
            self.deferred[exchange.id] = (exchange, taken)

    def settle(self, exchange: Exchange, rule: Rule | None) -> None:
        """A deferred exchange's troubles are `rule`'s (None: nobody's, the safety net's)."""
        held = self.deferred.pop(exchange.id, None)
        if held is None:
            return
        table = self.unclaimed if rule is None else made(self.claims, rule.id, dict)
        for trouble in held[1]:
            self._trail(table, exchange, trouble)

    def transfer(self, source: Rule, target: Rule) -> None:
        """What `source` claimed is `target`'s to explain (a loop of first-join handshakes is a group that never formed)."""
        moved = self.claims.pop(source.id, {})
        claimed = made(self.claims, target.id, dict)
        for key, trail in moved.items():
            made(claimed, key, Trail, self.scope).absorb(trail)

    def close(self, exchange: Exchange) -> None:
        """What no rule claimed of the exchange goes to the safety net."""
        for trouble in self.pending:
            self._trail(self.unclaimed, exchange, trouble)
        self.pending = []

    def _trail(self, table: dict[Key, Trail], exchange: Exchange, trouble: str) -> None:
        key = (exchange.api_name or "?", trouble)
        trail = table.get(key)
        if trail is None:
            if len(table) >= MOST_KEYS:
                self.dropped += 1
                return
            trail = table[key] = Trail(self.scope)
        trail.add(exchange)

    def findings(self, told: set[str]) -> Iterator[Finding]:
        """The safety net's findings: what was never claimed, and what rules that told nothing (`told` are the rules
        that told a warning or an error, or are `expected` info rules) had claimed."""
        for exchange, _ in list(self.deferred.values()):
            self.settle(exchange, None)
        for rule_id, claimed in self.claims.items():
            if rule_id not in told:
                for key, trail in claimed.items():
                    made(self.unclaimed, key, Trail, self.scope).absorb(trail)
        for (api, trouble), trail in sorted(self.unclaimed.items()):
            if not trail:
                continue
            rule = RETRIABLE if retriable(trouble) else UNEXPLAINED
            clients = trail.clients
            who = f" from {clients[0]}" if len(clients) == 1 else f" from {plural(len(clients), 'client id')}" if clients else ""
            kind = "retriable" if rule is RETRIABLE else "not retriable" if trouble not in MEANINGS else "failed"
            yield rule.finding(
                f"{plural(trail.told, api + ' exchange')}{who}: {trouble} ({kind}: {meaning(trouble)})",
                trail.evidence(),
            )
        if self.dropped:  # no filter tells these apart from the kinds kept: the count is all there is
            yield UNEXPLAINED.finding(
                f"{plural(self.dropped, 'more trouble')} past {MOST_KEYS} kinds (API, error): counted, not kept",
                Evidence(count=self.dropped),
            )
