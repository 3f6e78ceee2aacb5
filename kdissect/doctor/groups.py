"""Classic consumer groups (JoinGroup, SyncGroup, Heartbeat, OffsetCommit) and KIP-848 groups
(ConsumerGroupHeartbeat): how each group's rebalances went, groups that never formed, storms, members the
coordinator removed, slow joins, refused commits, fenced members."""

from __future__ import annotations

from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import among, codes, each, fields, topic_of
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rebalances import MOST_GROUPS, Rebalances
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import KEEP_MANY, Kept, Scope, Trail, Window, made, plural, span
from kdissect.events import Exchange
from kdissect.schema import ApiKey, ErrorCode, error_name
from kdissect.schema.tree import Struct

MINUTE = 60_000_000_000

REBALANCES = Rule(
    "group.rebalances",
    "info",
    "How a group's rebalances went: generations, how long each took, why.",
    "Each time a member joins or leaves, the group rebalances: every member rejoins (JoinGroup), the leader "
    "assigns the partitions (SyncGroup), and consumption stops until it is done. Heartbeats and syncs answered "
    "REBALANCE_IN_PROGRESS are how the coordinator tells members to rejoin: part of the protocol, not failures.",
    "Nothing to do when the reasons are expected (a deploy, scaling); when they are not, see why members left.",
    (),
    expected=True,
)
STORM = Rule(
    "group.rebalance-storm",
    "warning",
    "A member had to rejoin its group too many times in one minute.",
    "Every rebalance stops consumption for every member of the group (eager protocols revoke every partition) "
    "until the new generation's SyncGroup completes. A member forced to rejoin again and again hardly consumes: "
    "other members keep joining and leaving (consumers created per task, a crash loop) or are removed for missing "
    "heartbeats or polls, and each time the group starts over.",
    "Look at why members come and go (the group's rebalances below, group.member-removed): {session_timeout} "
    "and {heartbeat_interval}, {poll_interval} against the processing time per poll, consumers created per "
    "message or task instead of once, deployments that restart members one by one ({static_member} makes members "
    "static), and a cooperative assignor ({assignor}) to keep partitions across rebalances.",
    (Threshold("threshold", 4, "generations per minute", "a member rejoining more generations than this within any 60 s"),),
)
NEVER_FORMS = Rule(
    "group.never-forms",
    "error",
    "A group whose members keep joining and never reach a generation.",
    "A group forms when the coordinator answers JoinGroup with a generation. Members whose every JoinGroup is "
    "refused never get partitions: nothing is consumed, and the members retry forever. MEMBER_ID_REQUIRED in a "
    "loop means a client that does not understand KIP-394 (JoinGroup v4+): it should join again with the member "
    "id the answer carries, and instead joins again without one.",
    "Upgrade the client library (KIP-394 is in the Java client since 2.2, librdkafka 1.4, KafkaJS 2), or pin it to "
    "a JoinGroup version below 4 only if the broker allows it; for another error, its meaning is in the title.",
    (Threshold("threshold", 4, "JoinGroups", "at least this many JoinGroups of a group, none answered with a generation"),),
)
MEMBER_REMOVED = Rule(
    "group.member-removed",
    "warning",
    "The coordinator had removed a member that still thought it belonged to the group.",
    "The coordinator removes a member that sends no heartbeat within the session timeout, or (since KIP-62) "
    "whose client stops calling poll() for longer than the poll interval. Its next request is answered "
    "UNKNOWN_MEMBER_ID (or ILLEGAL_GENERATION after the group moved on): its partitions went to other members, "
    "the work since its last commit is redone, and it has to join again, which rebalances the group once more.",
    "The silence in the title is how long the member went without a good answer: near {session_timeout} it "
    "missed heartbeats (a paused process, GC, a network stall: raise {session_timeout}); a member that kept "
    "heartbeating but was removed exceeded {poll_interval} (process less per poll: {poll_records}, or raise "
    "{poll_interval}).",
    (Threshold("threshold", 1, "removals", "at least this many removals"),),
)
SLOW_JOIN = Rule(
    "group.slow-join",
    "warning",
    "JoinGroup requests that waited out most of the rebalance timeout.",
    "The coordinator answers JoinGroup when every known member has rejoined, or when the rebalance timeout "
    "(the joiners' poll interval) runs out. A JoinGroup held that long means a member did not rejoin in time: it "
    "was stuck processing records, so the whole group stood still for the full timeout.",
    "Find the member that joined late or not at all (the group's other JoinGroups and LeaveGroups): its "
    "processing time per poll, {poll_interval}, and whether it calls poll() during long work.",
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
    "processing per poll well under {poll_interval}, and look at group.member-removed for why it left.",
    (Threshold("threshold", 1, "refused commits", "at least this many OffsetCommit requests refused"),),
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
HANDSHAKE = Rule(
    "group.member-id-required",
    "info",
    "JoinGroup answered MEMBER_ID_REQUIRED: the normal first-join handshake.",
    "Since KIP-394 (JoinGroup v4) a new member's first JoinGroup is answered MEMBER_ID_REQUIRED with the member "
    "id the coordinator made for it, and the member joins again with that id. It is not an error: it keeps the "
    "coordinator from holding state for members that never complete their join.",
    "Nothing to do; many of them in a short time mean many new members (see group.rebalance-storm).",
    (),
    expected=True,
)

REFUSED_COMMIT = frozenset(
    {
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.FENCED_MEMBER_EPOCH,
        ErrorCode.STALE_MEMBER_EPOCH,
    }
)
GONE = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID})
FENCING = frozenset(
    {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNRELEASED_INSTANCE_ID}
)
MEMBER_APIS = frozenset({ApiKey.OFFSET_COMMIT, ApiKey.HEARTBEAT, ApiKey.SYNC_GROUP, ApiKey.JOIN_GROUP, ApiKey.TXN_OFFSET_COMMIT})
SIGNALS = frozenset({ApiKey.HEARTBEAT, ApiKey.SYNC_GROUP})
"""Where REBALANCE_IN_PROGRESS is the coordinator telling a member to rejoin."""


class Groups(Family):
    RULES = (REBALANCES, STORM, NEVER_FORMS, MEMBER_REMOVED, SLOW_JOIN, COMMIT_FAILED, FENCED, HANDSHAKE)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.rebalances = Rebalances()
        self.rounds: dict[str, Trail] = {}
        """Group -> its joins that got a generation and its REBALANCE_IN_PROGRESS signals: the rebalances' evidence."""
        self.signalled: set[str] = set()
        """Groups whose members were told REBALANCE_IN_PROGRESS."""
        self.joins: dict[str, Trail] = {}
        """Group -> its JoinGroups that got a generation: a storm's evidence."""
        self.attempts: dict[str, Trail] = {}
        """Group -> every JoinGroup: a group that never formed's evidence."""
        self.refusals: dict[str, dict[int, int]] = {}
        self.rejoins: dict[tuple[str, str], Window] = {}
        """(group, member) -> the generations it joined, over a minute: how often it had to rejoin."""
        self.storms: dict[str, tuple[str, int]] = {}
        """Group -> (the member that rejoined most within a minute, how many times), once past the threshold."""
        self.handshakes: dict[str, Trail] = {}
        self.last_seen: dict[tuple[str, str], int] = {}
        """(group, member id) -> when the member last got an answer without trouble."""
        self.removed = self.trail()
        self.removals = 0
        self.removed_members: set[tuple[str, str]] = set()
        """Members removed whose next good answer has not come yet: their GONE answers are the removal's."""
        self.ever_removed: set[tuple[str, str]] = set()
        self.longest_silence = 0
        self.slow = self.trail()
        self.slowest = 0
        self.commits = self.trail()
        self.commit_codes: dict[int, int] = {}
        self.fenced = self.trail()
        self.fence_codes: dict[int, int] = {}
        self.members_kept = Kept(KEEP_MANY, "group members: member requests not followed")
        """The (group, member id) `last_seen`, `removed_members`, `ever_removed` and `rejoins` keep."""
        self.kept.append(self.members_kept)

    def exchange(self, exchange: Exchange) -> None:
        followed = self.rebalances.exchange(exchange)
        key = exchange.api_key
        if key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            request = fields(exchange.request)
            group = request.get("GroupId") if request is not None else None
            if isinstance(group, str):
                self._fenced(exchange, group, codes(exchange.response))
            return
        if followed is None:
            return
        group = followed[0]
        request, response = fields(exchange.request), fields(exchange.response)
        assert request is not None
        answer = codes(exchange.response)
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
                self.claim(exchange, COMMIT_FAILED, *(error_name(c) for c in refused))
        elif key in SIGNALS and ErrorCode.REBALANCE_IN_PROGRESS in answer:
            made(self.rounds, group, Trail, self.scope).add(exchange, group)
            self.signalled.add(group)
            self.claim(exchange, REBALANCES, "REBALANCE_IN_PROGRESS")

    def _member(self, exchange: Exchange, group: str, member: str, answer: list[int]) -> None:
        """A member's request: answered as gone after good answers, it had been removed in between."""
        key = (group, member)
        if not self.members_kept.admits(key):
            return
        gone = [c for c in answer if c in GONE]
        if gone:
            last = self.last_seen.pop(key, None)
            if last is not None and key not in self.removed_members:
                self.removed_members.add(key)
                self.ever_removed.add(key)
                self.removals += 1
                self.longest_silence = max(self.longest_silence, exchange.ts - last)
            if key in self.removed_members:
                self.removed.add(exchange, group)
                self.claim(exchange, MEMBER_REMOVED, *(error_name(c) for c in gone))
        elif exchange.response is not None and not answer:
            self.last_seen[key] = exchange.response.ts
            self.removed_members.discard(key)

    def _join(self, exchange: Exchange, group: str, request: Struct, response: Struct | None, answer: list[int]) -> None:
        made(self.attempts, group, Trail, self.scope).add(exchange, group)
        for c in answer:
            counts = made(self.refusals, group, dict)
            counts[c] = counts.get(c, 0) + 1
        if ErrorCode.MEMBER_ID_REQUIRED in answer:
            made(self.handshakes, group, Trail, self.scope).add(exchange, group)
            self.claim(exchange, HANDSHAKE, "MEMBER_ID_REQUIRED")
        self.claim(exchange, NEVER_FORMS)  # its other refusals: explained if the group never forms, else the safety net's
        timeout = request.get("RebalanceTimeoutMs")
        if not isinstance(timeout, int) or timeout <= 0:
            timeout = request.get("SessionTimeoutMs")
        latency = exchange.latency
        if latency is not None and isinstance(timeout, int) and timeout > 0 and latency >= self.threshold(SLOW_JOIN) * timeout * 1e6:
            self.slow.add(exchange, group)
            self.slowest = max(self.slowest, latency)
        if response is None or answer:
            return
        generation = response.get("GenerationId")
        if not isinstance(generation, int):
            return
        made(self.joins, group, Trail, self.scope).add(exchange, group)
        made(self.rounds, group, Trail, self.scope).add(exchange, group)
        member = response.get("MemberId")
        if isinstance(member, str) and member and self.members_kept.admits((group, member)):
            joined = made(self.rejoins, (group, member), Window, MINUTE).add(exchange.ts)
            if joined > self.threshold(STORM) and joined > self.storms.get(group, ("", 0))[1]:
                self.storms[group] = (member, joined)

    def _fenced(self, exchange: Exchange, group: str, answer: list[int]) -> None:
        fencing = [c for c in answer if c in FENCING]
        if fencing:
            for c in fencing:
                self.fence_codes[c] = self.fence_codes.get(c, 0) + 1
            self.fenced.add(exchange, group)
            self.claim(exchange, FENCED, *(error_name(c) for c in fencing))

    def bounds(self) -> list[tuple[int, str]]:
        told = super().bounds()
        if self.rebalances.untracked:
            told.append(
                (self.rebalances.untracked, f"{self.rebalances.untracked} group exchanges not followed past the first {MOST_GROUPS} groups")
            )
        return told

    def findings(self) -> Iterator[Finding]:
        groups = self.rebalances.groups
        formed = {name for name, g in groups.items() if g.generations}
        yield from self._never_formed(formed)
        for name, (member, peak) in sorted(self.storms.items()):
            trail = self.joins[name]
            trail.expr = f"api == JoinGroup and {among('group', [name])} and not error"
            if trail:
                yield STORM.finding(
                    f"{plural(trail.told, 'JoinGroup')} answered with a generation in group {name}: member {member} had to rejoin "
                    f"{peak} generations within a minute",
                    trail.evidence(),
                )
        for name, trail in sorted(self.rounds.items()):
            rows = groups[name].rows(name) if name in groups else []
            if trail and (len(groups[name].generations) > 1 or name in self.signalled):
                trail.expr = (
                    f"{among('group', [name])} and ((api == JoinGroup and not error) or "
                    "(api in {Heartbeat, SyncGroup} and error == REBALANCE_IN_PROGRESS))"
                )
                yield REBALANCES.finding(
                    f"{plural(trail.told, 'exchange')} of group {name}'s rebalances: {_summary(rows)}", trail.evidence()
                )
        if self.removed and self.removals >= self.threshold(MEMBER_REMOVED):
            members = len(self.ever_removed)
            yield MEMBER_REMOVED.finding(
                f"{plural(self.removed.told, 'exchange')} answered as from a removed member: {plural(members, 'member')} removed"
                f"{'' if self.removals == members else f' {self.removals} times'}, silent up to {span(self.longest_silence)} before",
                self.removed.evidence(),
            )
        if self.slow:
            yield SLOW_JOIN.finding(
                f"{plural(self.slow.told, 'JoinGroup')} held near the rebalance timeout (up to {span(self.slowest)})", self.slow.evidence()
            )
        if self.commits and self.commits.count >= self.threshold(COMMIT_FAILED):
            yield COMMIT_FAILED.finding(
                f"{plural(self.commits.told, 'offset commit')} refused ({_codes(self.commit_codes)})", self.commits.evidence()
            )
        if self.fenced and self.fenced.count >= self.threshold(FENCED):
            yield FENCED.finding(f"{plural(self.fenced.told, 'heartbeat')} fenced: {_codes(self.fence_codes)}", self.fenced.evidence())
        yield from self._handshakes(formed)

    def _never_formed(self, formed: set[str]) -> Iterator[Finding]:
        """The groups joined again and again that never got a generation (`formed` are those that did)."""
        never = sorted(name for name, trail in self.attempts.items() if name not in formed and trail.count >= self.threshold(NEVER_FORMS))
        if never:
            self.ledger.transfer(HANDSHAKE, NEVER_FORMS)  # a loop of handshakes is what kept these from forming
        for name in never:
            trail = made(self.attempts, name, Trail, self.scope)
            trail.expr = f"api == JoinGroup and {among('group', [name])}"
            first_ts, last_ts = trail.first_ts or 0, trail.last_ts or 0
            if trail:
                yield NEVER_FORMS.finding(
                    f"{plural(trail.told, 'JoinGroup')} in {span(last_ts - first_ts)} from {plural(len(trail.clients), 'client')} and no "
                    f"generation: group {name} never formed ({_codes(self.refusals.get(name, {}))})",
                    trail.evidence(),
                )

    def _handshakes(self, formed: set[str]) -> Iterator[Finding]:
        """The member-id handshakes of the groups that formed, told as the normal handshake they are."""
        shaken = sorted(name for name in self.handshakes if name in formed and self.handshakes[name])
        if shaken:
            trail = Trail(self.scope, f"api == JoinGroup and error == MEMBER_ID_REQUIRED and {among('group', shaken)}")
            for name in shaken:
                trail.absorb(self.handshakes[name])
            yield HANDSHAKE.finding(
                f"{plural(trail.told, 'first JoinGroup')} answered MEMBER_ID_REQUIRED (the normal handshake)", trail.evidence()
            )


def _codes(counts: dict[int, int]) -> str:
    return ", ".join(f"{error_name(c)}×{n}" for c, n in sorted(counts.items(), key=lambda item: -item[1])) or "no answer"


def _summary(rows: list) -> str:
    """Generations, how long they took, and why."""
    done = [r for r in rows if r.generation is not None]
    if not done:
        return "no generation yet"
    durations = [r.duration for r in done if r.duration is not None]
    took = f", each {span(min(durations))}" if durations and min(durations) == max(durations) else ""
    if durations and min(durations) != max(durations):
        took = f", {span(min(durations))} to {span(max(durations))} each"
    reasons: dict[str, int] = {}
    for r in done:
        for reason, n in r.reasons.items():
            reasons[reason] = reasons.get(reason, 0) + n
    told = ", ".join(f"{reason} ×{n}" for reason, n in sorted(reasons.items(), key=lambda item: -item[1])[:4])
    spread = span((done[-1].end or done[-1].start) - done[0].start)
    return f"{plural(len(done), 'generation')} over {spread}{took}; {told}"
