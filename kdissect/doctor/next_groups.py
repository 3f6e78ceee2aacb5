"""The groups of the next rebalance protocols, whose members heartbeat with an epoch: KIP-848 consumer groups
(ConsumerGroupHeartbeat), KIP-1071 streams groups (StreamsGroupHeartbeat) and KIP-932 share groups
(ShareGroupHeartbeat, and their ShareFetch and ShareAcknowledge): members fenced again and again, members whose
epoch the coordinator never takes up, and acknowledgements sent while a fetch is in flight."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import codes, fields
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.readings import integer, text
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import Scope, Trail, made, plural
from kdissect.events import Exchange
from kdissect.schema import ApiKey, ErrorCode, error_name

HEARTBEATS = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT})
FENCING = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.STALE_MEMBER_EPOCH})
MEMBERS_KEPT = 10_000
"""Members followed at once; past it, new ones are not (a capture of a huge fleet still ends)."""
WINDOWS_KEPT = 16
"""ShareFetch windows and ShareAcknowledge requests remembered per member and broker."""
HELD = 16
"""A member's heartbeats held until it has been fenced (or out of step) `threshold` times: then they are evidence."""

FENCED_LOOP = Rule(
    "heartbeat.fenced-loop",
    "warning",
    "Members of KIP-848, KIP-1071 or KIP-932 groups fenced again and again.",
    "In the consumer group protocol (KIP-848), streams groups (KIP-1071) and share groups (KIP-932) the "
    "coordinator fences a member whose epoch it no longer accepts (FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH) or "
    "that it removed (UNKNOWN_MEMBER_ID): the member gives up its partitions or tasks and joins again with epoch "
    "0. Fenced again after each rejoin, it never holds its work long: heartbeats that come too late "
    "(group.consumer.session.timeout.ms, a paused client), or commits and heartbeats sent with an old epoch "
    "after every reassignment.",
    "Compare the member's heartbeat interval with the coordinator's session timeout and look for pauses in its "
    "process; a client that keeps using an old epoch needs an upgrade.",
    (Threshold("threshold", 3, "fencings", "a member fenced at least this many times"),),
)
EPOCH_IGNORED = Rule(
    "heartbeat.epoch-not-adopted",
    "warning",
    "Members heartbeat with an epoch the coordinator never answered.",
    "A member of these groups sends its member epoch in every heartbeat, and the coordinator answers with the "
    "epoch the member is to use next (bumped with each new assignment). A member that keeps sending another "
    "epoch than the coordinator's last answer, heartbeat after heartbeat, is out of step with it: the "
    "coordinator never adopts its epoch, its assignment does not progress, and a fencing follows.",
    "Look at the client's handling of heartbeat responses (a bug that drops the new epoch) and at responses "
    "that are lost or arrive after the next heartbeat was sent.",
    (Threshold("threshold", 3, "heartbeats", "at least this many heartbeats in a row with another epoch than the coordinator's last"),),
)
ACK_IN_FLIGHT = Rule(
    "share.ack-during-fetch",
    "warning",
    "Share consumers sent ShareAcknowledge while a ShareFetch was in flight.",
    "A share-group member (KIP-932) acknowledges records either on its next ShareFetch or with "
    "ShareAcknowledge, both in its share session with the broker, whose epoch each request advances. An "
    "acknowledgement sent while a ShareFetch of the same session waits for records races with it: one of them "
    "carries an epoch the broker no longer expects (INVALID_SHARE_SESSION_EPOCH), the acknowledgements are "
    "lost, and the records' acquisition locks run out: they are delivered again.",
    "Acknowledge with the next ShareFetch (the client's default), or only when no fetch is outstanding to that "
    "broker; look for long MaxWaitMs on the fetches.",
    (Threshold("threshold", 1, "acknowledgements", "at least this many ShareAcknowledge requests during a ShareFetch"),),
)


class Member:
    """One member's heartbeats, as far as the rules need them."""

    __slots__ = ("fenced", "answered", "off_step", "fences", "steps")

    def __init__(self) -> None:
        self.fenced = 0
        self.fences: list[Exchange] = []
        """Its fenced heartbeats, until it has been fenced often enough to tell."""
        self.steps: list[Exchange] = []
        """The heartbeats of its run out of step, until the run is long enough to tell."""
        self.answered: int | None = None
        """The epoch of the coordinator's last answer without an error."""
        self.off_step = 0
        """Heartbeats in a row whose epoch was not that answer's."""


class NextGroups(Family):
    RULES = (FENCED_LOOP, EPOCH_IGNORED, ACK_IN_FLIGHT)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.members: dict[tuple[str, str], Member] = {}
        self.loops = self.trail()
        self.looping: dict[tuple[str, str], int] = {}
        self.ignored = self.trail()
        self.ignored_members: set[tuple[str, str]] = set()
        self.longest: tuple[int, tuple[str, str], int, int] | None = None
        """The longest run of heartbeats out of step: (length, member, epoch sent, the coordinator's)."""
        self.fetches: dict[tuple[str, str, int], deque[tuple[int, int]]] = {}
        """(group, member, connection) -> the last ShareFetch windows (request sent, response arrived)."""
        self.acks: dict[tuple[str, str, int], deque[Exchange]] = {}
        """The same key -> the last ShareAcknowledge exchanges."""
        self.racing = self.trail()
        self.raced: set[int] = set()

    def exchange(self, exchange: Exchange) -> None:
        key = exchange.api_key
        if key in HEARTBEATS:
            self._heartbeat(exchange)
        elif key == ApiKey.SHARE_FETCH or key == ApiKey.SHARE_ACKNOWLEDGE:
            self._share(exchange, key == ApiKey.SHARE_FETCH)

    def _heartbeat(self, exchange: Exchange) -> None:
        request, response = fields(exchange.request), fields(exchange.response)
        group, member_id = text(request, "GroupId"), text(request, "MemberId") or text(response, "MemberId")
        if group is None or not member_id or response is None:
            return
        key = (group, member_id)
        member = self.members.get(key)
        if member is None:
            if len(self.members) >= MEMBERS_KEPT:
                return
            member = self.members[key] = Member()
        answer = codes(exchange.response)
        sent = integer(request, "MemberEpoch")
        if any(code in FENCING for code in answer):
            self._fenced(exchange, key, member, answer)
            return
        if answer:
            return
        if sent is not None and sent > 0 and member.answered is not None and sent != member.answered:
            member.off_step += 1
            told = member.off_step >= self.threshold(EPOCH_IGNORED)
            member.steps = self._hold(member.steps, exchange, group, self.ignored, told)
            if told:
                self.ignored_members.add(key)
                if self.longest is None or member.off_step > self.longest[0]:
                    self.longest = (member.off_step, key, sent, member.answered)
        else:
            member.off_step, member.steps = 0, []
        member.answered = integer(response, "MemberEpoch")

    def _fenced(self, exchange: Exchange, key: tuple[str, str], member: Member, answer: list[int]) -> None:
        """A member told it is fenced: its epochs start again, and its fencings are held while they may loop."""
        if exchange.api_key != ApiKey.CONSUMER_GROUP_HEARTBEAT:  # the consumer group's fencings are group.member-fenced's
            self.claim(exchange, FENCED_LOOP, *(error_name(c) for c in answer if c in FENCING))
        member.fenced += 1
        member.answered, member.off_step, member.steps = None, 0, []
        member.fences = self._hold(member.fences, exchange, key[0], self.loops, member.fenced >= self.threshold(FENCED_LOOP))
        if member.fenced >= self.threshold(FENCED_LOOP):
            self.looping[key] = member.fenced

    @staticmethod
    def _hold(held: list[Exchange], exchange: Exchange, group: str, trail: Trail, told: bool) -> list[Exchange]:
        """One more heartbeat of a member's: held while it has too few to tell, evidence once it has enough."""
        held = [*held[-HELD + 1 :], exchange]
        if not told:
            return held
        for one in held:
            trail.add(one, group)
        return []

    def _share(self, exchange: Exchange, fetch: bool) -> None:
        request = fields(exchange.request)
        group, member_id = text(request, "GroupId"), text(request, "MemberId")
        if group is None or not member_id or exchange.response is None:
            return
        key = (group, member_id, exchange.connection.id)
        if fetch:
            window = (exchange.ts, exchange.response.ts)
            made(self.fetches, key, deque, (), WINDOWS_KEPT).append(window)
            for ack in self.acks.get(key, ()):
                if window[0] < ack.ts < window[1]:
                    self._raced(ack, group)
        else:
            made(self.acks, key, deque, (), WINDOWS_KEPT).append(exchange)
            if any(start < exchange.ts < end for start, end in self.fetches.get(key, ())):
                self._raced(exchange, group)

    def _raced(self, ack: Exchange, group: str) -> None:
        """The ShareAcknowledge is the evidence, whether it or the ShareFetch it raced completed last."""
        if ack.id not in self.raced:
            self.raced.add(ack.id)
            self.racing.add(ack, group)

    def findings(self) -> Iterator[Finding]:
        if self.loops:
            (group, member), times = max(self.looping.items(), key=lambda item: item[1])
            fenced = f"{plural(self.loops.told, 'heartbeat')} fenced {plural(len(self.looping), 'member')} in a loop"
            title = f"{fenced} (member {member} of {group} {plural(times, 'time')})"
            yield FENCED_LOOP.finding(title, self.loops.evidence())
        if self.ignored and self.longest is not None:
            run, (group, member), sent, answered = self.longest
            members = plural(len(self.ignored_members), "member")
            which = f"{member} of {group}: epoch {sent}, {run} in a row, the coordinator's {answered}"
            title = f"{plural(self.ignored.told, 'heartbeat')} from {members} with an epoch the coordinator never adopted ({which})"
            yield EPOCH_IGNORED.finding(title, self.ignored.evidence())
        if self.racing and len(self.raced) >= self.threshold(ACK_IN_FLIGHT):
            yield ACK_IN_FLIGHT.finding(
                f"{plural(len(self.raced), 'ShareAcknowledge')} sent while a ShareFetch of the same member was in flight",
                self.racing.evidence(),
            )
