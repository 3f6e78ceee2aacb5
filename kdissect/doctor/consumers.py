"""Consumers as Fetch shows them: lag from the high watermark, offsets out of range, fetch sessions, empty
fetches in a tight loop, and long polls told apart from slow fetches."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kdissect.decode.body import Body
from kdissect.doctor.clients import Clients
from kdissect.doctor.facts import among, codes, each, fields, topic_of, who
from kdissect.doctor.family import Family
from kdissect.doctor.finding import Finding
from kdissect.doctor.ledger import Ledger
from kdissect.doctor.rule import Rule, Settings, Threshold
from kdissect.doctor.trail import KEEP_MANY, Kept, Scope, Trail, Window, made, plural, where
from kdissect.events import Exchange
from kdissect.records.values import RecordBatch
from kdissect.schema import ApiKey, ErrorCode
from kdissect.schema.tree import Struct

SECOND = 1_000_000_000

LAG = Rule(
    "consumer.lag",
    "warning",
    "A consumer falls behind: the high watermark runs away from its fetch offset.",
    "Every Fetch response tells the partition's high watermark (the end of the committed log); the request "
    "tells where the consumer reads. The difference is the lag, measured on the wire without the group's "
    "commits. Lag that grows over the capture means the consumer is slower than its producers: records get "
    "older before they are processed, and retention may delete them first.",
    "Find what limits the consumer: processing time per record (the gap between its fetches), too few "
    "consumers for the partitions (add members, up to one per partition), {poll_records} too small for the rate.",
    (Threshold("threshold", 100, "records", "lag at the last fetch at least this, and more than at the first"),),
)
OUT_OF_RANGE = Rule(
    "consumer.offset-out-of-range",
    "warning",
    "Fetches or offset lookups answered OFFSET_OUT_OF_RANGE.",
    "The consumer asked for an offset the log no longer (retention deleted it) or not yet (past the end, "
    "after a truncation or a wrong seek) holds. The client then resets by auto.offset.reset: to the earliest "
    "offset (records consumed again) or the latest (records skipped), silently.",
    "Compare the fetch offset with the partition's log start and high watermark in the response; check "
    "retention.ms / retention.bytes against the consumer's lag, seeks in the application, and the consumer's "
    "offset reset policy (auto.offset.reset and its equivalents).",
    (Threshold("threshold", 1, "answers", "at least this many partitions answered OFFSET_OUT_OF_RANGE"),),
)
FETCH_SESSION = Rule(
    "consumer.fetch-session-error",
    "warning",
    "Incremental fetch sessions (KIP-227) were lost or out of step.",
    "A consumer keeps a fetch session so that each Fetch lists only partitions that changed. "
    "FETCH_SESSION_ID_NOT_FOUND means the broker evicted the session (its cache, "
    "max.incremental.fetch.session.cache.slots, is full); INVALID_FETCH_SESSION_EPOCH means a request was "
    "lost or reordered. Either way the client starts a full fetch again: more bytes, more latency.",
    "Raise max.incremental.fetch.session.cache.slots on the brokers when many consumers share them; look "
    "for request timeouts and reconnects on the same connections.",
    (Threshold("threshold", 1, "answers", "at least this many Fetch responses with a session error"),),
)
EMPTY_SPIN = Rule(
    "consumer.empty-fetch-spin",
    "warning",
    "A consumer sends empty fetches in a tight loop, asking the broker not to wait.",
    "A Fetch with a small MaxWaitMs on an idle partition comes back empty at once, and the client asks again: "
    "thousands of requests a second that carry nothing, cost the broker CPU and the network packets, and hide the "
    "real traffic.",
    "Raise {fetch_wait} to a few hundred ms, with {fetch_min} at least 1, so that the broker holds the request until there is data.",
    (
        Threshold("threshold", 50, "empty fetches per second", "more empty fetches than this within a second, from one client"),
        Threshold("wait_ms", 100, "ms", "asking a MaxWaitMs below this: the client's own setting spins"),
    ),
)
WAIT_IGNORED = Rule(
    "broker.fetch-wait-ignored",
    "warning",
    "A broker answers fetches at once, though they ask it to wait for data.",
    "A consumer's Fetch on an idle partition asks the broker to hold it up to MaxWaitMs until data comes. These "
    "fetches asked for that wait, and the broker answered them empty right away: the consumers spin, thousands of "
    "requests that carry nothing. The client's settings are right; the broker does not honour the wait.",
    "This is the broker's doing: check its version and its fetch purgatory (Apache Kafka holds such fetches; "
    "some Kafka-compatible brokers do not). Raising {fetch_wait} on the client changes nothing here.",
    (Threshold("fraction", 0.1, "fraction of MaxWaitMs", "an empty Fetch answered within this part of the MaxWaitMs it asked"),),
)
LONG_POLL = Rule(
    "consumer.long-poll",
    "info",
    "Fetches that waited out their MaxWaitMs: long polls, not slow responses.",
    "A consumer's Fetch says how long the broker may hold it (MaxWaitMs) when there is less data than "
    "MinBytes. A response that came back empty after that wait is the broker doing as asked, not latency: "
    "these fetches are left out of the latency findings.",
    "Nothing to do. If consumers need records sooner, lower {fetch_wait}; if they fetch too often, raise {fetch_min}.",
    (Threshold("threshold", 0.9, "fraction of MaxWaitMs", "an empty Fetch that took at least this part of its MaxWaitMs"),),
    expected=True,
)
NEVER_COMMITS = Rule(
    "consumer.never-commits",
    "warning",
    "Group members that fetched records but never committed an offset.",
    "A member of a consumer group that reads records and commits nothing leaves the group's committed "
    "offsets where they were: when it restarts, or its partitions move to another member in a rebalance, "
    "consumption starts again from the old offsets (or auto.offset.reset) and everything since is read twice.",
    "Enable auto commit ({auto_commit}) or commit after processing. If offsets are kept outside Kafka on purpose, ignore this.",
    (
        Threshold("threshold", 1, "records", "a member that fetched at least this many records and committed none"),
        Threshold("seconds", 10, "seconds", "and was seen that long after its first records (auto commit runs every 5 s by default)"),
    ),
)


@dataclass(slots=True)
class Lag:
    """One consumer's lag on one partition: at its first fetch, its last, and the most."""

    first: int
    last: int
    most: int
    first_ts: int
    last_ts: int


def long_poll(exchange: Exchange, fraction: float) -> bool:
    """Whether a Fetch came back without records after waiting most of its MaxWaitMs."""
    request, response = fields(exchange.request), exchange.response
    latency = exchange.latency
    if request is None or response is None or latency is None:
        return False
    wait = request.get("MaxWaitMs")
    if not isinstance(wait, int) or wait <= 0 or latency < fraction * wait * 1e6:
        return False
    body = getattr(response, "body", None)
    return not any(placed.records.batches for placed in getattr(body, "records", ()))


def fetched(request: Struct, response: Struct) -> Iterator[tuple[str | None, int | None, Struct, object]]:
    """Each partition of a Fetch response: its topic, its index, its struct, and the offset the request fetched it from."""
    offsets = {
        (topic_of(topic), partition.get("Partition")): partition.get("FetchOffset")
        for topic in each(request, "Topics")
        for partition in each(topic, "Partitions")
    }
    for topic in each(response, "Responses"):
        name = topic_of(topic)
        for partition in each(topic, "Partitions"):
            index = partition.get("PartitionIndex")
            yield name, index, partition, offsets.get((name, index))


def records_behind(offset: object, high: object) -> int | None:
    """Records between a fetch offset and the high watermark; None unless both are offsets."""
    if not isinstance(offset, int) or not isinstance(high, int) or offset < 0 or high < 0:
        return None
    return max(0, high - offset)


def follower(request: Struct) -> bool:
    """Whether a Fetch comes from a broker replicating (ReplicaId, or v15's ReplicaState), not a consumer."""
    state = request.get("ReplicaState")
    replica = state.get("ReplicaId") if isinstance(state, Struct) else request.get("ReplicaId")
    return isinstance(replica, int) and replica >= 0


class Consumers(Family):
    RULES = (LAG, OUT_OF_RANGE, FETCH_SESSION, EMPTY_SPIN, WAIT_IGNORED, LONG_POLL, NEVER_COMMITS)

    def __init__(self, settings: Settings, scope: Scope, ledger: Ledger, clients: Clients) -> None:
        super().__init__(settings, scope, ledger, clients)
        self.lags: dict[tuple[str, str | None, int | None], Lag] = {}
        self.lag_trails: dict[tuple[str, str | None], Trail] = {}
        """(client, topic) -> its fetches of the topic: a lag finding's evidence."""
        self.out_of_range = self.trail("error == OFFSET_OUT_OF_RANGE")
        self.sessions = self.trail("api == Fetch and error in {FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH}")
        self.spins: dict[str, Window] = {}
        self.peaks: dict[str, int] = {}
        """Client -> the most empty fetches it sent within a second, once past the threshold."""
        self.empty: dict[str, Trail] = {}
        """Client -> its empty fetches answered early (not long polls)."""
        self.asked: dict[str, list[int]] = {}
        """Client -> [empty fetches answered early, of them asking at least `wait_ms`]."""
        self.polls = self.trail()
        self.fetches = 0
        self.groups: dict[str, str] = {}
        """Client id -> the group it last joined, fetched or committed offsets for: whose lag it is."""
        self.members: set[str] = set()
        """Client ids that joined a group (JoinGroup): consumers that should commit."""
        self.committers: set[str] = set()
        self.fetched: dict[str, int] = {}
        self.seen: dict[str, list[int]] = {}
        """Client id -> [when its first records came, its latest exchange]."""
        self.fetch_trails: dict[str, Trail] = {}
        self.partitions_kept = Kept(KEEP_MANY, "partitions fetched by a client: fetched partitions whose lag was not followed")
        self.kept.append(self.partitions_kept)

    def exchange(self, exchange: Exchange) -> None:
        header = exchange.request_header
        key, client_id = (header.api_key, header.client_id) if header else (None, None)
        if client_id in self.seen:
            self.seen[client_id][1] = exchange.ts
        if key in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT) and client_id:
            self.committers.add(client_id)
        if key == ApiKey.JOIN_GROUP and client_id:
            self.members.add(client_id)
        if key in (ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.JOIN_GROUP) and client_id:
            request = fields(exchange.request)
            for named in (request, *each(request, "Groups")):  # OffsetFetch v8+ lists groups
                if named is not None and isinstance(named.get("GroupId"), str):
                    self.groups[client_id] = named.get("GroupId")
            return
        if key == ApiKey.LIST_OFFSETS:
            if ErrorCode.OFFSET_OUT_OF_RANGE in codes(exchange.response):
                self.out_of_range.add(exchange)
                self.claim(exchange, OUT_OF_RANGE, "OFFSET_OUT_OF_RANGE")
            return
        if key != ApiKey.FETCH:
            return
        request, response = fields(exchange.request), fields(exchange.response)
        if request is None or response is None or follower(request):
            return
        self.fetches += 1
        if response.get("ErrorCode") in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
            self.sessions.add(exchange)
            self.claim(exchange, FETCH_SESSION, "FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH")
        client = client_id or f"connection {exchange.connection.id}"
        for name, index, partition, offset in fetched(request, response):
            if partition.get("ErrorCode") == ErrorCode.OFFSET_OUT_OF_RANGE:
                self.out_of_range.add(exchange, None, name, index)
                self.claim(exchange, OUT_OF_RANGE, "OFFSET_OUT_OF_RANGE")
            self._lag(exchange, client, name, index, records_behind(offset, partition.get("HighWatermark")))
        body = getattr(exchange.response, "body", None)
        placements = body.records if isinstance(body, Body) else ()  # a Body: its fields were read above
        batches = sum(len(placed.records.batches) for placed in placements)
        if batches and client_id:
            records = sum(b.record_count if isinstance(b, RecordBatch) else 1 for placed in placements for b in placed.records.batches)
            self.fetched[client_id] = self.fetched.get(client_id, 0) + records
            if client_id not in self.seen:
                self.seen[client_id] = [exchange.ts, exchange.ts]
            made(self.fetch_trails, client_id, Trail, self.scope).add(exchange, self.groups.get(client_id))
        if long_poll(exchange, self.threshold(LONG_POLL)):
            self.polls.add(exchange)
        elif not batches and exchange.latency is not None:
            made(self.empty, client, Trail, self.scope).add(exchange)
            wait = request.get("MaxWaitMs")
            asked = made(self.asked, client, list, [0, 0])
            asked[0] += 1
            asked[1] += (
                isinstance(wait, int)
                and wait >= self.threshold(EMPTY_SPIN, "wait_ms")
                and exchange.latency < (self.threshold(WAIT_IGNORED, "fraction") * wait * 1e6)
            )
            per_second = made(self.spins, client, Window, SECOND).add(exchange.ts)
            if per_second > self.threshold(EMPTY_SPIN) and per_second > self.peaks.get(client, 0):
                self.peaks[client] = per_second

    def _lag(self, exchange: Exchange, client: str, topic: str | None, partition: int | None, behind: int | None) -> None:
        if behind is None:
            return
        key = (client, topic, partition)
        kept = self.partitions_kept.admits(key)
        if kept:
            seen = self.lags.get(key)
            if seen is None:
                self.lags[key] = Lag(behind, behind, behind, exchange.ts, exchange.ts)
            else:
                seen.last, seen.last_ts, seen.most = behind, exchange.ts, max(seen.most, behind)
        if kept or (client, topic) in self.lag_trails:  # a topic's trail counts every Fetch of it its filter selects
            group = self.groups.get(exchange.client_id or "")
            made(self.lag_trails, (client, topic), Trail, self.scope).add(exchange, group, topic, partition)

    def findings(self) -> Iterator[Finding]:
        worst: dict[tuple[str, str | None], tuple[int | None, Lag]] = {}
        for (client, topic, partition), lag in self.lags.items():
            if (
                lag.last >= self.threshold(LAG)
                and lag.last > lag.first
                and lag.last > worst.get((client, topic), (None, Lag(0, -1, 0, 0, 0)))[1].last
            ):
                worst[(client, topic)] = (partition, lag)
        for (client, topic), (partition, lag) in sorted(worst.items(), key=lambda item: -item[1][1].last):
            trail = self.lag_trails[(client, topic)]
            trail.expr = f"api == Fetch and {who(client)} and {among('topic', [topic or ''])}"
            if trail:
                yield LAG.finding(
                    f"{plural(trail.told, 'Fetch', 'Fetches')} by {client} of {topic}: lag on {where(topic, partition)} grew from "
                    f"{lag.first} to {lag.last} records (most {lag.most}) over {(lag.last_ts - lag.first_ts) / SECOND:.1f} s",
                    trail.evidence(),
                )
        if self.out_of_range and self.out_of_range.count >= self.threshold(OUT_OF_RANGE):
            yield OUT_OF_RANGE.finding(
                f"{plural(self.out_of_range.told, 'exchange')} answered OFFSET_OUT_OF_RANGE: the consumer resets its position",
                self.out_of_range.evidence(),
            )
        if self.sessions and self.sessions.count >= self.threshold(FETCH_SESSION):
            yield FETCH_SESSION.finding(
                f"{plural(self.sessions.told, 'Fetch', 'Fetches')} lost their session: full fetches follow", self.sessions.evidence()
            )
        for client, peak in sorted(self.peaks.items()):
            trail = self.empty[client]  # its filter lists them: long polls are empty fetches too, told apart by their wait
            early, waited = self.asked[client]
            if not trail:
                continue
            if waited * 2 > early:  # most asked the broker to wait, and it did not
                yield WAIT_IGNORED.finding(
                    f"{plural(trail.told, 'empty Fetch', 'empty Fetches')} by {client}, up to {peak} a second: {waited} of them asked "
                    f"the broker to wait and were answered at once",
                    trail.evidence(),
                )
            else:
                yield EMPTY_SPIN.finding(
                    f"{plural(trail.told, 'empty Fetch', 'empty Fetches')} by {client}, up to {peak} a second, asking the broker "
                    "not to wait",
                    trail.evidence(),
                )
        for client, records in sorted(self.fetched.items()):
            trail = self.fetch_trails[client]
            first, last = self.seen[client]
            long_enough = last - first >= self.threshold(NEVER_COMMITS, "seconds") * SECOND
            if (
                client in self.members
                and client not in self.committers
                and records >= self.threshold(NEVER_COMMITS)
                and long_enough
                and trail
            ):
                group = self.groups.get(client, "?")
                trail.expr = f"api == Fetch and {who(client)} and response.Responses.Partitions.Records.batches"
                yield NEVER_COMMITS.finding(
                    f"{plural(trail.told, 'Fetch', 'Fetches')} by {client} brought {plural(records, 'record')} in group {group}, and "
                    f"it committed no offset in {(last - first) / SECOND:.0f} s",
                    trail.evidence(),
                )
        if self.polls:
            yield LONG_POLL.finding(
                f"{plural(self.polls.told, 'Fetch', 'Fetches')} of {self.fetches} were long polls (empty after MaxWaitMs): not latency",
                self.polls.evidence(),
            )
