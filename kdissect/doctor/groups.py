"""Classic consumer groups (JoinGroup, SyncGroup, Heartbeat, OffsetCommit) and KIP-848 groups
(ConsumerGroupHeartbeat): rebalances, members the coordinator removed, slow joins, failing commits."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.facts import codes, each, fields, topic_of
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import Scope, Trail, Window, made, plural, span
from kdissect.events import Exchange
from kdissect.schema import ApiKey, ErrorCode, error_name
from kdissect.schema.tree import Struct

MINUTE = 60_000_000_000

REBALANCE_STORM = Rule(
    "group.rebalance-storm",
    "warning",
    "A group went through too many generations in one minute.",
    "Every rebalance stops consumption in the whole group (eager protocols revoke every partition) until the "
    "new generation's SyncGroup completes. A group that keeps rebalancing hardly consumes: members join and leave, "
    "crash-loop, or are removed for missing heartbeats or polls, and each time the group starts over.",
    "Look at why members leave (the group.member-removed finding, LeaveGroup reasons in `kdissect stats`): "
    "session.timeout.ms and heartbeat.interval.ms, max.poll.interval.ms against the processing time of "
    "max.poll.records, deployments that restart members one by one (group.instance.id makes members static), "
    "and the cooperative-sticky assignor (or KIP-848's consumer protocol) to keep partitions across rebalances.",
    (Threshold("threshold", 4, "generations per minute", "more new generations than this within any 60 s"),),
)
MEMBER_REMOVED = Rule(
    "group.member-removed",
    "warning",
    "The coordinator had removed a member that still thought it belonged to the group.",
    "The coordinator removes a member that sends no heartbeat within session.timeout.ms, or (since KIP-62) "
    "whose client stops calling poll() for longer than max.poll.interval.ms. Its next request is answered "
    "UNKNOWN_MEMBER_ID (or ILLEGAL_GENERATION after the group moved on): its partitions went to other members, "
    "the work since its last commit is redone, and it has to join again, which rebalances the group once more.",
    "The gap in the title is how long the member was silent before that answer: near session.timeout.ms it "
    "missed heartbeats (a paused process, GC, a network stall: raise session.timeout.ms); a member that kept "
    "heartbeating but was removed exceeded max.poll.interval.ms (process less per poll: max.poll.records, or "
    "raise max.poll.interval.ms).",
    (Threshold("threshold", 1, "removals", "at least this many members removed"),),
)
SLOW_JOIN = Rule(
    "group.slow-join",
    "warning",
    "JoinGroup requests that waited out most of the rebalance timeout.",
    "The coordinator answers JoinGroup when every known member has rejoined, or when the rebalance timeout "
    "(the joiners' max.poll.interval.ms) runs out. A JoinGroup held that long means a member did not rejoin in "
    "time: it was stuck processing records, so the whole group stood still for the full timeout.",
    "Find the member that joined late or not at all (the group's other JoinGroups and LeaveGroups): its "
    "processing time per poll, max.poll.interval.ms, and whether it calls poll() during long work.",
    (Threshold("threshold", 0.9, "fraction of the rebalance timeout", "a JoinGroup latency at least this part of its RebalanceTimeoutMs"),),
)
COMMIT_FAILED = Rule(
    "group.commit-failed",
    "warning",
    "Offset commits the coordinator refused.",
    "A commit refused with ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS comes from a member "
    "that is no longer part of the current generation: its partitions may already belong to another member, "
    "and the records it processed since its last good commit will be consumed again (duplicates downstream).",
    "Commit before the member can lose its partitions (in the rebalance listener's onPartitionsRevoked), keep "
    "processing per poll well under max.poll.interval.ms, and look at group.member-removed for why it left.",
    (Threshold("threshold", 1, "refused commits", "at least this many OffsetCommit partitions refused"),),
)
FENCED = Rule(
    "group.member-fenced",
    "warning",
    "KIP-848 group members fenced or with a stale member epoch.",
    "With the consumer group protocol (ConsumerGroupHeartbeat) the coordinator fences a member whose epoch "
    "is behind (FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH) or that it no longer knows (UNKNOWN_MEMBER_ID): the "
    "member loses its partitions and must join again with epoch 0.",
    "Look for heartbeats that stopped (session timeout, group.consumer.session.timeout.ms on the broker), "
    "and for commits sent with an old epoch after a reassignment.",
    (Threshold("threshold", 1, "fenced heartbeats", "at least this many ConsumerGroupHeartbeat responses fenced"),),
)
MEMBER_ID_HANDSHAKE = Rule(
    "group.member-id-required",
    "info",
    "JoinGroup answered MEMBER_ID_REQUIRED: the normal first-join handshake.",
    "Since KIP-394 (JoinGroup v4) a new member's first JoinGroup is answered MEMBER_ID_REQUIRED with the member "
    "id the coordinator made for it, and the member joins again with that id. It is not an error: it keeps the "
    "coordinator from holding state for members that never complete their join.",
    "Nothing to do; many of them in a short time mean many new members (see group.rebalance-storm).",
    (Threshold("threshold", 1, "answers", "at least this many MEMBER_ID_REQUIRED answers"),),
)

REFUSED_COMMIT = {
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.FENCED_MEMBER_EPOCH,
    ErrorCode.STALE_MEMBER_EPOCH,
}
GONE = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID}
FENCING = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNRELEASED_INSTANCE_ID}
MEMBER_APIS = (ApiKey.OFFSET_COMMIT, ApiKey.HEARTBEAT, ApiKey.SYNC_GROUP, ApiKey.JOIN_GROUP, ApiKey.TXN_OFFSET_COMMIT)


class Groups(Family):
    RULES = (REBALANCE_STORM, MEMBER_REMOVED, SLOW_JOIN, COMMIT_FAILED, FENCED, MEMBER_ID_HANDSHAKE)

    def __init__(self, settings: Settings, scope: Scope) -> None:
        super().__init__(settings, scope)
        self.generations: dict[str, Window] = {}
        self.seen: set[tuple[str, int]] = set()
        self.storms: dict[str, Trail] = {}
        self.last_seen: dict[tuple[str, str], int] = {}
        """(group, member id) -> when the member last got an answer without trouble."""
        self.removed = Trail(self.scope)
        self.gaps: list[int] = []
        self.removed_members: set[tuple[str, str]] = set()
        self.slow = Trail(self.scope)
        self.slowest = 0
        self.commits = Trail(self.scope)
        self.commit_codes: dict[int, int] = {}
        self.fenced = Trail(self.scope)
        self.fence_codes: dict[int, int] = {}
        self.handshakes = Trail(self.scope)

    def exchange(self, exchange: Exchange) -> None:
        key = exchange.api_key
        if key not in MEMBER_APIS and key != ApiKey.LEAVE_GROUP and key != ApiKey.CONSUMER_GROUP_HEARTBEAT:
            return
        request, response = fields(exchange.request), fields(exchange.response)
        if request is None:
            return
        group = request.get("GroupId")
        if not isinstance(group, str):
            return
        answer = codes(exchange.response)
        if key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            self._fenced(exchange, group, answer)
            return
        member = request.get("MemberId")
        if key in MEMBER_APIS and isinstance(member, str) and member:
            self._member(exchange, group, member, answer)
        if key == ApiKey.JOIN_GROUP:
            self._join(exchange, group, request, response, answer)
        elif key in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT):
            refused = [c for c in answer if c in REFUSED_COMMIT]
            if refused:
                for c in refused:
                    self.commit_codes[c] = self.commit_codes.get(c, 0) + 1
                first = ((topic_of(t), p.get("PartitionIndex")) for t in each(request, "Topics") for p in each(t, "Partitions"))
                self.commits.add(exchange, group, *next(first, (None, None)))

    def _member(self, exchange: Exchange, group: str, member: str, answer: list[int]) -> None:
        """A member's request: answered as gone, it had been removed since it was last answered well."""
        key = (group, member)
        if any(c in GONE for c in answer):
            last = self.last_seen.pop(key, None)
            if last is not None and key not in self.removed_members:
                self.removed_members.add(key)
                self.gaps.append(exchange.ts - last)
                self.removed.add(exchange, group)
        elif exchange.response is not None and not answer:
            self.last_seen[key] = exchange.response.ts
            self.removed_members.discard(key)

    def _join(self, exchange: Exchange, group: str, request: Struct, response: Struct | None, answer: list[int]) -> None:
        if ErrorCode.MEMBER_ID_REQUIRED in answer:
            self.handshakes.add(exchange, group)
        timeout = request.get("RebalanceTimeoutMs")
        if not isinstance(timeout, int) or timeout <= 0:
            timeout = request.get("SessionTimeoutMs")
        latency = exchange.latency
        if latency is not None and isinstance(timeout, int) and timeout > 0 and latency >= self.threshold(SLOW_JOIN) * timeout * 1e6:
            self.slow.add(exchange, group)
            self.slowest = max(self.slowest, latency)
        generation = response.get("GenerationId") if response is not None and not answer else None
        if isinstance(generation, int) and (group, generation) not in self.seen:
            self.seen.add((group, generation))
            window = made(self.generations, group, Window, MINUTE)
            if window.add(exchange.ts) > self.threshold(REBALANCE_STORM):
                made(self.storms, group, Trail, self.scope).add(exchange, group)

    def _fenced(self, exchange: Exchange, group: str, answer: list[int]) -> None:
        for c in answer:
            if c in FENCING:
                self.fence_codes[c] = self.fence_codes.get(c, 0) + 1
                self.fenced.add(exchange, group)
                return

    def findings(self) -> Iterator[Finding]:
        for group, trail in sorted(self.storms.items()):
            if trail:
                window = self.generations[group]
                yield REBALANCE_STORM.finding(
                    f"group {group}: {window.peak} generations within a minute ({plural(window.count, 'generation')} in the capture)",
                    trail.evidence(),
                )
        if self.removed and self.removed.count >= self.threshold(MEMBER_REMOVED):
            longest = max(self.gaps)
            yield MEMBER_REMOVED.finding(
                f"{plural(self.removed.count, 'member')} removed by the coordinator (silent up to {span(longest)} before the answer)",
                self.removed.evidence(),
            )
        if self.slow:
            yield SLOW_JOIN.finding(
                f"{plural(self.slow.count, 'JoinGroup')} held near the rebalance timeout (up to {span(self.slowest)})", self.slow.evidence()
            )
        if self.commits and self.commits.count >= self.threshold(COMMIT_FAILED):
            yield COMMIT_FAILED.finding(
                f"{plural(self.commits.count, 'offset commit')} refused ({_codes(self.commit_codes)})", self.commits.evidence()
            )
        if self.fenced and self.fenced.count >= self.threshold(FENCED):
            yield FENCED.finding(f"{plural(self.fenced.count, 'heartbeat')} fenced: {_codes(self.fence_codes)}", self.fenced.evidence())
        if self.handshakes and self.handshakes.count >= self.threshold(MEMBER_ID_HANDSHAKE):
            yield MEMBER_ID_HANDSHAKE.finding(
                f"{plural(self.handshakes.count, 'first JoinGroup')} answered MEMBER_ID_REQUIRED (the normal handshake)",
                self.handshakes.evidence(),
            )


def _codes(counts: dict[int, int]) -> str:
    return ", ".join(f"{error_name(c)}×{n}" for c, n in sorted(counts.items(), key=lambda item: -item[1]))
