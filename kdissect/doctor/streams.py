"""Kafka Streams applications as their consumer group's user data shows them (decode/streams.py): probing
rebalances that keep coming, task copies far behind the most caught-up one, and errors the assignor tells."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import each, fields
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.readings import integer, reading, text
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import Scope, Trail, made, plural
from kdissect.events import Exchange
from kdissect.schema import ApiKey
from kdissect.schema.streams_assignment import ASSIGNOR_ERRORS
from kdissect.schema.tree import Struct

NEVER = 2**63 - 1
"""AssignmentInfo's nextRebalanceMs when no follow-up rebalance is wanted (Long.MAX_VALUE)."""
RUN_HELD = 64
"""SyncGroups of a probing run held until the run reaches the threshold (a huge threshold holds no more)."""

PROBING = Rule(
    "streams.probing-rebalance",
    "warning",
    "A Kafka Streams application scheduled probing rebalance after probing rebalance.",
    "With KIP-441's high-availability assignor, a task whose state is behind stays with its caught-up owner while "
    "a warm-up replica restores it elsewhere; the assignment then asks for another rebalance after "
    "probing.rebalance.interval.ms (its nextRebalanceMs) to move the task once the warm-up caught up. Probing "
    "rebalances generation after generation mean warm-ups never catch up: the changelogs grow faster than they "
    "restore, or acceptable.recovery.lag is too small for the load.",
    "Compare the task lag the subscriptions report (streams.task-lag) with acceptable.recovery.lag; look at "
    "restore throughput (changelog size, num.standby.replicas, max.warmup.replicas) and at instances that restart "
    "often and lose their state.",
    (Threshold("threshold", 3, "generations", "at least this many generations in a row that schedule a probing rebalance"),),
)
TASK_LAG = Rule(
    "streams.task-lag",
    "warning",
    "Copies of a Kafka Streams task far behind the most caught-up copy.",
    "Each instance subscribes with the offset sum of the state it holds for every task (SubscriptionInfo v7+, the "
    "sum of its changelog offsets; -2 for a task it runs as active). The assignor moves a task only to an "
    "instance within acceptable.recovery.lag (10 000 records by default) of caught-up: a copy further behind "
    "must restore first, as a warm-up replica, and a failover to it replays its whole lag.",
    "Keep standby replicas (num.standby.replicas) on instances that stay up; look at instances that lost their "
    "state directory (a new process id, offset sums of 0) and at restore throughput.",
    (Threshold("threshold", 10_000, "records", "a copy at least this many records behind the most caught-up one reported"),),
)
ASSIGNOR_ERROR = Rule(
    "streams.assignor-error",
    "warning",
    "A Kafka Streams assignment or subscription carried an error code.",
    "The group leader's assignor answers INCOMPLETE_SOURCE_TOPIC_METADATA (a source topic is missing), "
    "ASSIGNMENT_ERROR (it failed), or SHUTDOWN_REQUESTED (an instance asked the whole application to stop, "
    "KIP-671); a subscription's errorCode (v9+) is an instance's shutdown request. VERSION_PROBING marks a rolling "
    "upgrade's version probing.",
    "INCOMPLETE_SOURCE_TOPIC_METADATA: create the source topics before starting; ASSIGNMENT_ERROR and "
    "SHUTDOWN_REQUESTED: read the group leader's (or the requesting instance's) logs at that time.",
    (Threshold("threshold", 1, "payloads", "at least this many assignments or subscriptions with an error code"),),
)


def offset_sums(info: Struct) -> dict[tuple[str | None, int, int], int]:
    """A subscription's offset sum per task (named topology, subtopology, partition): nested by subtopology in
    v7-v9, flat from v10."""
    out = {}
    for entry in each(info, "taskOffsetSums"):
        subtopology = integer(entry, "topicGroupId")
        for partition in each(entry, "partitionToOffsetSum") if "partitionToOffsetSum" in entry else [entry]:
            task, offset = integer(partition, "partition"), integer(partition, "offsetSum")
            if subtopology is not None and task is not None and offset is not None:
                out[(text(entry, "namedTopology"), subtopology, task)] = offset
    return out


def task_name(task: tuple[str | None, int, int]) -> str:
    named, subtopology, partition = task
    return f"{named + '__' if named else ''}{subtopology}_{partition}"


class Streams(Family):
    RULES = (PROBING, TASK_LAG, ASSIGNOR_ERROR)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.probing: dict[str, tuple[int, int, list[Exchange]]] = {}
        """Group -> its run of generations in a row, up to the last one seen, whose assignments schedule a probing
        rebalance: (the last generation, how many, their SyncGroups while fewer than the threshold)."""
        self.probes: dict[str, Trail] = {}
        self.longest_run: dict[str, int] = {}
        self.lagging = self.trail()
        self.worst: tuple[int, str, str] | None = None
        self.errors = self.trail()
        self.error_names: dict[str, int] = {}

    def exchange(self, exchange: Exchange) -> None:
        key = exchange.api_key
        if key != ApiKey.JOIN_GROUP and key != ApiKey.SYNC_GROUP:
            return
        request, response = fields(exchange.request), fields(exchange.response)
        group = text(request, "GroupId")
        if request is None or group is None:
            return
        if key == ApiKey.JOIN_GROUP:
            self._error(exchange, group, [_user_data(protocol, "Metadata") for protocol in each(request, "Protocols")], "errorCode")
            members = [(text(m, "MemberId") or "?", _user_data(m, "Metadata")) for m in each(response, "Members")]
            self._lag(exchange, group, [(member, info) for member, info in members if info is not None])
        else:
            answers = [_user_data(a, "Assignment") for a in each(request, "Assignments")] + [_user_data(response, "Assignment")]
            infos = [info for info in answers if info is not None and "activeTasks" in info]
            self._error(exchange, group, [_user_data(response, "Assignment")], "errCode")  # each member's own answer, once
            generation = integer(request, "GenerationId")
            if infos and generation is not None:
                probing = any((integer(info, "nextRebalanceMs") or NEVER) < NEVER for info in infos)
                self._probe(exchange, group, generation, probing)

    def _error(self, exchange: Exchange, group: str, infos: list[Struct | None], field: str) -> None:
        told = False
        for code in (integer(info, field) for info in infos):
            if code:
                name = ASSIGNOR_ERRORS.get(code, f"UNKNOWN_ASSIGNOR_ERROR_{code}")
                self.error_names[name] = self.error_names.get(name, 0) + 1
                told = True
        if told:
            self.errors.add(exchange, group)

    def _lag(self, exchange: Exchange, group: str, members: list[tuple[str, Struct]]) -> None:
        """The leader's JoinGroup answer holds every member's subscription: each task's copies compared."""
        sums: dict[tuple[str | None, int, int], list[tuple[int, str]]] = {}
        for member, info in members:
            for task, offset in offset_sums(info).items():
                if offset >= 0:  # -2: runs as active (caught up); -3: no state
                    sums.setdefault(task, []).append((offset, member))
        lagging = False
        for task, copies in sums.items():
            best = max(offset for offset, _ in copies)
            for offset, member in copies:
                behind = best - offset
                if behind >= self.threshold(TASK_LAG):
                    lagging = True
                    if self.worst is None or behind > self.worst[0]:
                        self.worst = (behind, task_name(task), member)
        if lagging:
            self.lagging.add(exchange, group)

    def _probe(self, exchange: Exchange, group: str, generation: int, probing: bool) -> None:
        last, length, waiting = self.probing.get(group, (None, 0, []))
        if last == generation:
            return  # another SyncGroup of the same generation
        if not probing:
            self.probing.pop(group, None)
            return
        length += 1
        waiting = [*waiting[-RUN_HELD + 1 :], exchange]
        self.longest_run[group] = max(self.longest_run.get(group, 0), length)
        if length >= self.threshold(PROBING):
            trail = made(self.probes, group, Trail, self.scope)
            for syncs in waiting:
                trail.add(syncs, group)
            waiting = []
        self.probing[group] = (generation, length, waiting)

    def findings(self) -> Iterator[Finding]:
        for group, trail in sorted(self.probes.items()):
            if trail:
                generations = plural(trail.told, "generation")
                run = self.longest_run[group]
                title = f"{generations} of {group} scheduled a probing rebalance, {run} in a row (warm-ups not caught up)"
                yield PROBING.finding(title, trail.evidence())
        if self.lagging and self.worst is not None:
            behind, task, member = self.worst
            title = f"{plural(self.lagging.told, 'join')} with task copies far behind: task {task} on {member} {behind:,} records behind"
            yield TASK_LAG.finding(title, self.lagging.evidence())
        if self.errors and sum(self.error_names.values()) >= self.threshold(ASSIGNOR_ERROR):
            told = ", ".join(f"{name}×{n}" for name, n in sorted(self.error_names.items(), key=lambda item: -item[1]))
            title = f"{plural(self.errors.told, 'exchange')} with an assignor error in Kafka Streams' user data: {told}"
            yield ASSIGNOR_ERROR.finding(title, self.errors.evidence())


def _user_data(struct: Struct | None, field: str) -> Struct | None:
    """Kafka Streams' user data inside the consumer-protocol payload of `struct.field`."""
    return reading(reading(struct, field), "UserData")
