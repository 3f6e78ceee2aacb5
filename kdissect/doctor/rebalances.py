"""Consumer groups' rebalances, reconstructed per generation: what `stats` tables and the doctor's groups family tell.

Each generation a JoinGroup response announces is one rebalance, and every event that asked for one (a JoinGroup
request, a LeaveGroup, a heartbeat told REBALANCE_IN_PROGRESS) belongs to the first generation announced after it
was sent. So a rebalance starts at the event that triggered it and closes with the SyncGroup responses of its
generation, whatever order the exchanges complete in (a JoinGroup completes only when the rebalance does); events
after the last generation (the last member leaving) are no rebalance. Reasons come from JoinGroup (v8+) and
LeaveGroup (v5+) reason fields too.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field

from kdissect.doctor.facts import fields
from kdissect.events import Exchange
from kdissect.schema import ApiKey, ErrorCode
from kdissect.schema.tree import Struct

GROUP_APIS = frozenset(
    {ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP}
)
MOST_GROUPS = 10_000
"""Groups followed; past it, newer groups are counted, not followed."""


@dataclass
class Round:
    """One rebalance of one group: the events that asked for it, to the SyncGroup responses of the generation it made."""

    group: str
    start: int
    end: int | None = None
    generation: int | None = None
    protocol: str | None = None
    leader: str | None = None
    members: set[str] = field(default_factory=set)
    reasons: Counter[str] = field(default_factory=Counter)
    synced: bool = False
    joins: int = 0
    """JoinGroup requests in this round; events without any (the last member leaving) are no rebalance."""

    def add(self, ts: int, reason: str, join: bool) -> None:
        self.start = min(self.start, ts)
        self.reasons[reason] += 1
        self.joins += join

    @property
    def duration(self) -> int | None:
        return None if self.end is None else self.end - self.start


@dataclass
class Group:
    members: set[str] = field(default_factory=set)
    generations: set[int] = field(default_factory=set)
    rounds: dict[int, Round] = field(default_factory=dict)
    """Generation -> its rebalance."""
    announced: list[tuple[int, int]] = field(default_factory=list)
    """(when its first JoinGroup response came, generation), in that order."""
    waiting: list[tuple[int, str, bool]] = field(default_factory=list)
    """(ts, reason, whether a JoinGroup) of events no generation was announced after yet."""
    commits: int = 0
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    """(topic, partition) -> the last offset committed."""

    def event(self, ts: int, reason: str, join: bool) -> None:
        """An event that asks for a rebalance: it belongs to the first generation announced after it."""
        at = bisect.bisect_right(self.announced, (ts, 1 << 62))
        if at < len(self.announced):
            self.rounds[self.announced[at][1]].add(ts, reason, join)
        else:
            self.waiting.append((ts, reason, join))

    def announce(self, name: str, generation: int, ts: int, request_ts: int) -> Round:
        """A JoinGroup response announced `generation` at `ts`: its round, made when first told."""
        current = self.rounds.get(generation)
        if current is None:
            current = self.rounds[generation] = Round(name, request_ts, generation=generation)
            bisect.insort(self.announced, (ts, generation))
            for waiting in self.waiting:
                current.add(*waiting)
            self.waiting.clear()
            self.generations.add(generation)
        return current

    def rows(self, name: str) -> list[Round]:
        """Every rebalance, by generation; one the capture ended inside (JoinGroups sent, no generation) last."""
        rounds = [r for _, r in sorted(self.rounds.items()) if r.joins]
        if any(join for _, _, join in self.waiting):
            pending = Round(name, min(ts for ts, _, _ in self.waiting))
            for waiting in self.waiting:
                pending.add(*waiting)
            rounds.append(pending)
        return rounds


class Rebalances:
    """Every group's members, generations, rebalances and commits, from the exchanges that name the group."""

    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}
        self.untracked = 0
        """Group exchanges of groups past `MOST_GROUPS`."""

    def exchange(self, exchange: Exchange) -> tuple[str, Group] | None:
        """Follow a group exchange; the group it names, when it is one."""
        key = exchange.api_key
        if key not in GROUP_APIS:
            return None
        request, response = fields(exchange.request), fields(exchange.response)
        if request is None:
            return None
        name = request.get("GroupId")
        if not isinstance(name, str):
            return None
        group = self.groups.get(name)
        if group is None:
            if len(self.groups) >= MOST_GROUPS:
                self.untracked += 1
                return None
            group = self.groups[name] = Group()
        member = request.get("MemberId")
        if isinstance(member, str) and member:
            group.members.add(member)
        if key in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT):
            group.commits += 1
            for topic in request.get("Topics") or ():
                for partition in topic.get("Partitions") or ():
                    group.committed[(topic.get("Name"), partition.get("PartitionIndex"))] = partition.get("CommittedOffset")
        elif key == ApiKey.JOIN_GROUP:
            self._join(name, group, exchange, request, response)
        elif key == ApiKey.SYNC_GROUP and response is not None:
            generation = request.get("GenerationId")
            current = group.rounds.get(generation) if isinstance(generation, int) else None
            if current is not None and response.get("ErrorCode") == 0:  # the last member's sync ends it
                current.synced = True
                current.end = exchange.response.ts  # type: ignore[union-attr]  # its fields were read: it is there
        elif key == ApiKey.HEARTBEAT and response is not None and response.get("ErrorCode") == ErrorCode.REBALANCE_IN_PROGRESS:
            group.event(exchange.ts, "heartbeat told REBALANCE_IN_PROGRESS", False)
        elif key == ApiKey.LEAVE_GROUP:
            reasons = [m.get("Reason") for m in request.get("Members") or () if isinstance(m, Struct)]
            label = next((r for r in reasons if r), None) or "a member left"
            group.event(exchange.ts, f"LeaveGroup: {label}", False)
        return name, group

    @staticmethod
    def _join(name: str, group: Group, exchange: Exchange, request: Struct, response: Struct | None) -> None:
        reason = request.get("Reason")
        member = request.get("MemberId")
        label = f"JoinGroup: {reason}" if reason else ("a new member joined" if not member else "a member rejoined")
        generation = response.get("GenerationId") if response is not None and response.get("ErrorCode") == 0 else None
        if not isinstance(generation, int):
            group.event(exchange.ts, label, True)
            return
        current = group.announce(name, generation, exchange.response.ts, exchange.ts)  # type: ignore[union-attr]  # it told the generation
        current.add(exchange.ts, label, True)
        assert response is not None
        joined = response.get("MemberId")
        if isinstance(joined, str) and joined:
            current.members.add(joined)
            group.members.add(joined)
        current.protocol = response.get("ProtocolName")
        current.leader = response.get("Leader")
