"""Kafka Connect's workers as their group protocol shows them (decode/connect.py): work revoked generation after
generation, workers that rejoin behind the config topic, assignments refused for it, tasks two workers run at once,
and rebalances the leader holds back for a departed worker."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import each, fields
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.readings import integer, reading, text
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import Scope, Trail, made, plural, span
from kdissect.events import Exchange
from kdissect.schema import ApiKey
from kdissect.schema.connect_protocol import CONFIG_MISMATCH, CONNECTOR_TASK
from kdissect.schema.connect_protocol import PROTOCOL_TYPE as CONNECT
from kdissect.schema.tree import Struct

GENERATIONS_KEPT = 64
"""Generations remembered per group for revocations: a churning group's last ones say enough."""
WORK_KEPT = 4096
"""Connectors and tasks counted per group, revoked or claimed."""

TASK_CHURN = Rule(
    "connect.task-churn",
    "warning",
    "Connect workers had connectors and tasks revoked generation after generation.",
    'With incremental cooperative rebalancing (Connect protocols V1 "compatible" and V2 "sessioned", KIP-415) a '
    "rebalance revokes only the work that moves, so revocations in one generation after another mean the group "
    "keeps reshuffling: each revoked task stops, commits and starts elsewhere. Workers that come and go (restarts, "
    "missed heartbeats), or a worker that rejoins while the leader holds a departed worker's work back "
    "(scheduled.rebalance.max.delay.ms, the storms of KAFKA-12495), keep the group from settling.",
    "Look at which workers join and leave (JoinGroup and LeaveGroup of the group, group.member-removed), their "
    "session.timeout.ms and heartbeat.interval.ms, restarts one by one during deployments, and "
    "scheduled.rebalance.max.delay.ms; the title names the work revoked most often.",
    (Threshold("threshold", 3, "generations", "at least this many generations that revoke connectors or tasks"),),
)
STALE_CONFIG = Rule(
    "connect.stale-config-offset",
    "warning",
    "Connect workers rejoined with a config offset behind the group's.",
    "Each worker joins with the offset of the config topic it has read up to; the leader assigns at its own "
    "offset. A worker behind it has not read the latest connector configurations: the leader answers "
    "CONFIG_MISMATCH when it cannot resolve the difference, or the worker must read to the end of the config "
    "topic before it may start its tasks, and the group rebalances again meanwhile.",
    "Look at how fast workers read the config topic (its replication, the brokers' load, consumer settings of "
    "the workers' config consumer) and at workers that restart with an old state.",
    (Threshold("threshold", 1, "joins", "at least this many JoinGroups with a config offset behind the group's"),),
)
MISMATCH = Rule(
    "connect.config-mismatch",
    "warning",
    "The Connect leader answered CONFIG_MISMATCH.",
    "The leader could not assign because the workers' config offsets differ in a way it cannot resolve: every "
    "worker reads the config topic to its end and joins again. Repeated, no connector or task runs meanwhile.",
    "Find the workers behind (connect.stale-config-offset) and why they read the config topic slowly; a worker "
    "whose config topic read keeps timing out (worker.sync.timeout.ms) leaves the group.",
    (Threshold("threshold", 1, "assignments", "at least this many assignments with CONFIG_MISMATCH"),),
)
DUPLICATE = Rule(
    "connect.duplicate-task",
    "warning",
    "Two Connect workers ran the same connector or task at once.",
    "A worker joins with the work it runs (its allocation, V1+). The same connector or task in two workers' "
    "allocations means one kept running what was given to another: a zombie worker that lost its membership "
    "(a long pause, a network partition) and was not fenced, as in KAFKA-9184. Both write: duplicate records "
    "from a source task, offsets committed by two owners of a sink task.",
    "Find the worker that lost its membership (group.member-removed, its silent period) and restart it; "
    "keep exactly-once source support (exactly.once.source.support) on for source connectors, which fences "
    "zombie tasks.",
    (Threshold("threshold", 1, "connectors or tasks", "at least this many claimed by two workers in one join"),),
)
DELAYED = Rule(
    "connect.scheduled-rebalance",
    "info",
    "The Connect leader held a departed worker's work back before giving it out.",
    "When a worker leaves, the incremental cooperative assignor waits up to scheduled.rebalance.max.delay.ms "
    "(5 minutes by default) for it to come back before it reassigns its connectors and tasks: they run nowhere "
    "meanwhile. Normal after a restart; long or repeated, work stands still.",
    "If workers are gone for good, lower scheduled.rebalance.max.delay.ms; if they restart, keep their restarts shorter than it.",
    (Threshold("threshold", 1, "assignments", "at least this many assignments with a scheduled rebalance delay"),),
)


def work(assignment: Struct | None, field: str) -> list[str]:
    """The connectors and tasks of one of an assignment's lists, named as Connect logs them: sourceA, sourceA-1."""
    out = []
    for item in each(assignment, field):
        connector = text(item, "Connector") or "?"
        for task in item.get("Tasks") or ():
            out.append(connector if task == CONNECTOR_TASK else f"{connector}-{task}")
    return out


class Connect(Family):
    RULES = (TASK_CHURN, STALE_CONFIG, MISMATCH, DUPLICATE, DELAYED)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.assigned: dict[str, OrderedDict[int, dict[str, list[str]]]] = {}
        """Group -> generation -> worker -> what its assignment revoked: each assignment is counted once, though the
        leader's SyncGroup tells it and the worker's own answer again."""
        self.churn: dict[str, Trail] = {}
        """Group -> the SyncGroups that told a revocation first."""
        self.churning: set[str] = set()
        """Groups that revoked work in `threshold` of their kept generations, at some point."""
        self.times_revoked: dict[str, dict[str, int]] = {}
        self.config_offset: dict[str, int] = {}
        """Group -> the config offset of its newest assignment."""
        self.stale = self.trail()
        self.stale_gap: tuple[int, int] | None = None
        self.mismatch = self.trail()
        self.mismatches = 0
        self.duplicate = self.trail()
        self.duplicated: list[str] = []
        self.delayed = self.trail()
        self.delays = 0
        self.longest_delay = 0

    def exchange(self, exchange: Exchange) -> None:
        key = exchange.api_key
        if key != ApiKey.JOIN_GROUP and key != ApiKey.SYNC_GROUP:
            return
        request = fields(exchange.request)
        group = text(request, "GroupId")
        if request is None or group is None:
            return
        if key == ApiKey.JOIN_GROUP:
            if text(request, "ProtocolType") == CONNECT:
                self._join(exchange, group, request, fields(exchange.response))
        else:
            self._sync(exchange, group, request, fields(exchange.response))

    def _join(self, exchange: Exchange, group: str, request: Struct, response: Struct | None) -> None:
        offered = next((m for m in (reading(p, "Metadata") for p in each(request, "Protocols")) if m is not None), None)
        worker_offset, group_offset = integer(offered, "ConfigOffset"), self.config_offset.get(group)
        if worker_offset is not None and group_offset is not None and worker_offset < group_offset:
            self.stale.add(exchange, group)
            if self.stale_gap is None or group_offset - worker_offset > self.stale_gap[1] - self.stale_gap[0]:
                self.stale_gap = (worker_offset, group_offset)
        claims: dict[str, list[str]] = {}
        for member in each(response, "Members"):
            allocation = reading(reading(member, "Metadata"), "Allocation")
            for item in work(allocation, "Assignment")[:WORK_KEPT]:
                claims.setdefault(item, []).append(text(member, "MemberId") or "?")
        doubled = [item for item, members in claims.items() if len(set(members)) > 1]
        if len(doubled) >= self.threshold(DUPLICATE):
            self.duplicate.add(exchange, group)
            self.duplicated += [d for d in doubled if d not in self.duplicated][:WORK_KEPT]

    def _sync(self, exchange: Exchange, group: str, request: Struct, response: Struct | None) -> None:
        answers = [(text(a, "MemberId") or "?", reading(a, "Assignment")) for a in each(request, "Assignments")]
        answers.append((text(request, "MemberId") or "?", reading(response, "Assignment")))
        answers = [(member, a) for member, a in answers if a is not None and "LeaderUrl" in a]  # Connect's assignments
        if not answers:
            return
        generation = integer(request, "GenerationId")
        workers: dict[str, list[str]] = {}
        if generation is not None:
            generations = made(self.assigned, group, OrderedDict)
            workers = generations.setdefault(generation, {})
            while len(generations) > GENERATIONS_KEPT:
                generations.popitem(last=False)
        mismatched = delayed = 0
        revoked: list[str] = []
        for member, assignment in answers:
            if member in workers:
                continue
            workers[member] = work(assignment, "Revoked")
            revoked += workers[member]
            offset = integer(assignment, "ConfigOffset")
            if offset is not None:
                self.config_offset[group] = max(offset, self.config_offset.get(group, offset))
            mismatched += integer(assignment, "Error") == CONFIG_MISMATCH
            delay = integer(assignment, "ScheduledDelay") or 0
            delayed += delay > 0
            self.longest_delay = max(self.longest_delay, delay)
        if mismatched:
            self.mismatches += mismatched
            self.mismatch.add(exchange, group)
        if delayed:
            self.delays += delayed
            self.delayed.add(exchange, group)
        if revoked:
            self._revoked(exchange, group, revoked)

    def _revoked(self, exchange: Exchange, group: str, revoked: list[str]) -> None:
        counts = made(self.times_revoked, group, dict)
        for item in revoked:
            if item in counts or len(counts) < WORK_KEPT:
                counts[item] = counts.get(item, 0) + 1
        made(self.churn, group, Trail, self.scope).add(exchange, group)
        if self._revoking(group) >= self.threshold(TASK_CHURN):
            self.churning.add(group)

    def _revoking(self, group: str) -> int:
        """How many of the group's generations (of the last GENERATIONS_KEPT) revoked work."""
        return sum(1 for workers in self.assigned[group].values() if any(workers.values()))

    def findings(self) -> Iterator[Finding]:
        for group in sorted(self.churning):
            trail = self.churn[group]
            if not trail:
                continue
            total = sum(len(items) for workers in self.assigned[group].values() for items in workers.values())
            item, times = max(self.times_revoked[group].items(), key=lambda kv: kv[1])
            revoked = plural(total, "connector or task", "connectors and tasks")
            generations = plural(self._revoking(group), "generation")
            most = f"{item} {plural(times, 'time')}"
            title = f"{plural(trail.told, 'SyncGroup')} of group {group} revoked work in {generations} ({revoked} revoked; {most})"
            yield TASK_CHURN.finding(title, trail.evidence())
        if self.stale and self.stale.count >= self.threshold(STALE_CONFIG):
            behind = "" if self.stale_gap is None else f" (a worker at {self.stale_gap[0]}, the group's assignment at {self.stale_gap[1]})"
            yield STALE_CONFIG.finding(
                f"{plural(self.stale.told, 'JoinGroup')} from workers behind the config topic{behind}", self.stale.evidence()
            )
        if self.mismatch and self.mismatches >= self.threshold(MISMATCH):
            told = f"{plural(self.mismatch.told, 'SyncGroup')} told CONFIG_MISMATCH ({plural(self.mismatches, 'assignment')})"
            yield MISMATCH.finding(told, self.mismatch.evidence())
        if self.duplicate:
            shown = ", ".join(self.duplicated[:5]) + (", ..." if len(self.duplicated) > 5 else "")
            yield DUPLICATE.finding(
                f"{plural(self.duplicate.told, 'JoinGroup')} showed "
                f"{plural(len(self.duplicated), 'connector or task', 'connectors and tasks')} run by two workers at once: {shown}",
                self.duplicate.evidence(),
            )
        if self.delayed and self.delays >= self.threshold(DELAYED):
            yield DELAYED.finding(
                f"{plural(self.delayed.told, 'SyncGroup')} told a scheduled rebalance "
                f"({plural(self.delays, 'assignment')}, up to {span(self.longest_delay * 1e6)} held back)",
                self.delayed.evidence(),
            )
