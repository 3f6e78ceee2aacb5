"""Episodes for the report's ladder diagram: the messages between clients and brokers in time order, as Wireshark's
flow graph draws them, with Kafka's names.

An episode is the exchanges a display filter selects (`--ladder`, or the report's `-Y`), or, without one, a
consumer group's rebalance: which rebalance is known only at the end, so the exchanges of group APIs are kept as
they come (ok Heartbeats left out: they are the noise between rebalances), at most `MOST_KEPT`, and the longest
rebalances become episodes. Each episode draws at most `MOST_STEPS` exchanges and says how many it left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.doctor.facts import fields
from kdissect.doctor.rebalances import Round
from kdissect.events import Exchange
from kdissect.filter import Filter
from kdissect.schema import ApiKey, error_name
from kdissect.views.summary import api_label

MOST_STEPS = 300
"""Exchanges an episode draws (two arrows each)."""
MOST_KEPT = 20_000
"""Group exchanges kept for the rebalance episodes."""
EPISODES = 6
"""Rebalances offered as episodes, the longest first."""
GROUP_APIS = frozenset(
    {ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.LEAVE_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH}
)
SAID = ("GroupId", "MemberId", "GenerationId", "GroupInstanceId", "Reason", "ProtocolName", "Leader")
"""Fields an arrow's label names when its message has them."""
TOPICS_SAID = 3


@dataclass(frozen=True, slots=True)
class Step:
    """One exchange of an episode: its request's arrow, client to broker, and its response's, back."""

    id: int
    client: str
    """The client's address and port."""
    client_id: str
    broker: str
    api: str
    correlation_id: int | None
    ts: int
    """The request (for an orphan response, the response)."""
    end: int | None
    """The response, when there is one."""
    asked: str
    answered: str
    status: str


@dataclass(frozen=True, slots=True)
class Episode:
    title: str
    steps: tuple[Step, ...]
    left_out: int
    """Exchanges of the episode past MOST_STEPS."""


def said(message: object) -> str:
    """What an arrow's label adds to the API's name: the group, member and generation, a reason, the topics."""
    struct = fields(message)
    parts = []
    if struct is not None:
        for name in SAID:
            value = struct.get(name)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
                parts.append(f"{name}={value}")
    topics = getattr(getattr(message, "body", None), "topics", ())
    if topics:
        more = f" +{len(topics) - TOPICS_SAID}" if len(topics) > TOPICS_SAID else ""
        parts.append("topics " + ", ".join(topics[:TOPICS_SAID]) + more)
    return " ".join(parts)


def step(exchange: Exchange) -> Step:
    response = exchange.response
    errors = sorted({e.code for e in getattr(getattr(response, "body", None), "errors", ())})
    if errors:
        answer = ", ".join(error_name(code) for code in errors)
    elif response is None:
        answer = exchange.status
    else:
        answer = said(response) or exchange.status
    info = exchange.connection
    return Step(
        exchange.id,
        str(info.client),
        exchange.client_id or "",
        str(info.broker),
        api_label(exchange),
        exchange.correlation_id,
        exchange.ts,
        response.ts if response is not None and exchange.request is not None else None,
        said(exchange.request),
        answer,
        exchange.status,
    )


class Ladder:
    """The exchanges of the chosen episode, or those of group APIs for the rebalance episodes."""

    def __init__(self, chosen: Filter) -> None:
        self.chosen = chosen
        self.steps: list[Step] = []
        self.groups: list[tuple[str, Step]] = []
        """(group, step) of group exchanges, without a chosen filter."""
        self.left_out = 0
        """Exchanges the chosen filter selected past MOST_STEPS."""
        self.unkept = 0
        """Group exchanges past MOST_KEPT: the rebalances after them may lack some."""

    def exchange(self, exchange: Exchange) -> None:
        if self.chosen.active:
            if self.chosen.matches(exchange):
                if len(self.steps) < MOST_STEPS:
                    self.steps.append(step(exchange))
                else:
                    self.left_out += 1
            return
        key = exchange.api_key
        if key not in GROUP_APIS or (key == ApiKey.HEARTBEAT and exchange.status == "ok"):
            return
        request = fields(exchange.request)
        group = request.get("GroupId") if request is not None else None
        if not isinstance(group, str):
            return
        if len(self.groups) < MOST_KEPT:
            self.groups.append((group, step(exchange)))
        else:
            self.unkept += 1

    def episodes(self, rounds: list[Round]) -> list[Episode]:
        """The chosen filter's episode, or the longest rebalances' (a rebalance the capture ended in lasts to the
        group's last exchange)."""
        if self.chosen.active:
            return [Episode(f"-Y {self.chosen.text}", tuple(self.steps), self.left_out)] if self.steps else []
        last: dict[str, int] = {}
        for group, kept in self.groups:
            last[group] = max(last.get(group, kept.ts), kept.end or kept.ts)
        spans = [(r, (r.end if r.end is not None else last.get(r.group, r.start)) - r.start) for r in rounds]
        spans.sort(key=lambda item: (-item[1], item[0].start))
        out = []
        for rebalance, took in spans[:EPISODES]:
            end = rebalance.start + took
            steps = [s for group, s in self.groups if group == rebalance.group and s.ts <= end and (s.end or s.ts) >= rebalance.start]
            steps.sort(key=lambda s: s.ts)
            generation = "(none: the capture ended in it)" if rebalance.generation is None else rebalance.generation
            title = f"group {rebalance.group}, generation {generation}: {took / 1e9:.3f} s, {len(rebalance.members)} members"
            out.append(Episode(title, tuple(steps[:MOST_STEPS]), max(0, len(steps) - MOST_STEPS)))
        return out
