"""Admin requests: the ones refused because what they ask for is already so, which idempotent tools do on purpose."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import codes
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings
from kdissect.doctor.trail import Scope, plural
from kdissect.events import Exchange
from kdissect.schema import BUILTIN, ApiKey, ErrorCode, error_name

ALREADY: dict[int, frozenset[int]] = {
    ApiKey.CREATE_TOPICS: frozenset({ErrorCode.TOPIC_ALREADY_EXISTS}),
    ApiKey.DELETE_TOPICS: frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID}),
    ApiKey.DELETE_GROUPS: frozenset({ErrorCode.GROUP_ID_NOT_FOUND}),
}
"""API -> the errors that say its request was already done: the topic exists, the topic or group is gone."""

ALREADY_SO = Rule(
    "admin.already-so",
    "info",
    "Admin requests refused because what they ask for is already so.",
    "Creating a topic that exists, or deleting a topic or group that does not, is refused with an error, and "
    "changes nothing. Tools that make a cluster look the way they want (deploy scripts, operators, tests) do this "
    "on purpose and read the error as done.",
    "Nothing to do, unless the tool meant to create or delete something new: then check the names it uses.",
    (),
    expected=True,
)


class Admin(Family):
    RULES = (ALREADY_SO,)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        parts = [
            f"(api == {name} and error in {{{', '.join(error_name(c) for c in sorted(errors))}}})"
            for name, errors in ((BUILTIN.names[k], v) for k, v in ALREADY.items())
        ]
        self.already = self.trail(" or ".join(parts))

    def exchange(self, exchange: Exchange) -> None:
        key = exchange.api_key
        errors = None if key is None else ALREADY.get(key)
        if errors is None:
            return
        found = [c for c in codes(exchange.response) if c in errors]
        if found:
            self.already.add(exchange)
            self.claim(exchange, ALREADY_SO, *(error_name(c) for c in found))

    def findings(self) -> Iterator[Finding]:
        if self.already:
            yield ALREADY_SO.finding(
                f"{plural(self.already.told, 'admin request')} refused as already so (a topic that exists, or gone)",
                self.already.evidence(),
            )
