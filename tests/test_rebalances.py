"""`stats` on consumer groups (issue 14, S5): one rebalance row per generation, starting at what triggered it.

The captures in captures/ hold groups of two members. A group of three is written here as Kafka's group
coordinator plays it (JoinGroup v5, SyncGroup v3, Heartbeat v3, LeaveGroup v3, encoded by the schema-driven
encoder), each member on its own connection, with JoinGroup held until the rebalance completes: exchanges
complete in another order than they start, which is what the reconstruction must see through.
"""

from __future__ import annotations

from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.schema import BUILTIN
from kdissect.testing import craft
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER
from kdissect.views.stats import Stats

GROUP = "trio"
JOIN, HEARTBEAT, LEAVE, SYNC = 11, 12, 13, 14
VERSIONS = {JOIN: 5, HEARTBEAT: 3, LEAVE: 3, SYNC: 3}
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 79, 27
MS = 1_000_000
BASE = 1_700_000_000_000 * MS


class Coordinator:
    """Exchanges of the members with the group coordinator, as (request ms, response ms, member, API, bodies)."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[int, int, str, int, dict, dict]] = []
        self.ids = {"A": "A-1", "B": "B-1", "C": "C-1"}

    def add(self, at: int, done: int, member: str, api: int, request: dict, response: dict) -> None:
        self.exchanges.append((at, done, member, api, {"GroupId": GROUP, **request}, response))

    def first_join(self, at: int, member: str) -> None:
        self.add(
            at, at + 1, member, JOIN, {"MemberId": ""}, {"ErrorCode": MEMBER_ID_REQUIRED, "GenerationId": -1, "MemberId": self.ids[member]}
        )

    def join(self, at: int, done: int, member: str, generation: int, members: list[str]) -> None:
        response = {"GenerationId": generation, "ProtocolName": "range", "Leader": self.ids[members[0]], "MemberId": self.ids[member]}
        if member == members[0]:
            response["Members"] = [{"MemberId": self.ids[m]} for m in members]
        self.add(at, done, member, JOIN, {"MemberId": self.ids[member], "ProtocolType": "consumer"}, response)

    def sync(self, at: int, member: str, generation: int, error: int = 0) -> None:
        self.add(at, at + 1, member, SYNC, {"GenerationId": generation, "MemberId": self.ids[member]}, {"ErrorCode": error})

    def heartbeat(self, at: int, member: str, generation: int, error: int = REBALANCE_IN_PROGRESS) -> None:
        self.add(at, at + 1, member, HEARTBEAT, {"GenerationId": generation, "MemberId": self.ids[member]}, {"ErrorCode": error})

    def leave(self, at: int, member: str) -> None:
        self.add(at, at + 1, member, LEAVE, {"Members": [{"MemberId": self.ids[member]}]}, {"Members": [{"MemberId": self.ids[member]}]})

    def packets(self) -> list:
        """Each member on its own connection; every packet at its own time, the capture in time order."""
        clock = craft.Clock()
        conversations = {m: craft.Conversation(client_port=40000 + i, clock=clock) for i, m in enumerate("ABC")}
        timed = []
        for i, conv in enumerate(conversations.values()):
            timed += [(i, p) for p in conv.handshake()]
        frames = []
        for correlation, (at, done, member, api, request, response) in enumerate(self.exchanges, 1):
            version = VERSIONS[api]
            frames.append(
                (at, member, CLIENT, craft.request(api, version, correlation, encode_body(api, version, "request", request), member))
            )
            body = encode_body(api, version, "response", response)
            frames.append((done, member, SERVER, craft.response(correlation, body, BUILTIN.response_header_version(api, version))))
        for ms, member, side, frame in sorted(frames, key=lambda f: f[0]):
            clock.ts = BASE + ms * MS - clock.step
            timed += [(ms, p) for p in conversations[member].send(side, frame)]
        return [p for _, p in timed]


def rebalances(coordinator: Coordinator) -> list[dict]:
    stats = Stats()
    for event in make_dissector(Options()).run(coordinator.packets()):
        if isinstance(event, Exchange):
            stats.add(event)
    return dict(stats.tables())["rebalances"]


def at(ms: int) -> str:
    from kdissect.views.terminal import stamp

    return stamp(BASE + ms * MS)


def three_members() -> Coordinator:
    """A joins (generation 1), B joins (2), C joins (3), C leaves (4), B leaves (5), A leaves: no rebalance."""
    c = Coordinator()
    c.first_join(10, "A")
    c.join(12, 3012, "A", 1, ["A"])
    c.sync(3013, "A", 1)
    c.first_join(5000, "B")
    c.join(5002, 8003, "B", 2, ["A", "B"])
    c.heartbeat(6000, "A", 1)
    c.join(6002, 8003, "A", 2, ["A", "B"])
    c.sync(8004, "A", 2)
    c.sync(8005, "B", 2)
    c.first_join(10000, "C")
    c.join(10002, 13003, "C", 3, ["A", "B", "C"])
    c.heartbeat(11000, "A", 2)
    c.join(11002, 13003, "A", 3, ["A", "B", "C"])
    c.heartbeat(11500, "B", 2)
    c.join(11502, 13003, "B", 3, ["A", "B", "C"])
    for member in "ABC":
        c.sync(13004, member, 3)
    c.leave(15000, "C")
    c.heartbeat(16000, "A", 3)
    c.join(16002, 18003, "A", 4, ["A", "B"])
    c.heartbeat(16500, "B", 3)
    c.join(16502, 18003, "B", 4, ["A", "B"])
    c.sync(18004, "A", 4)
    c.sync(18004, "B", 4)
    c.leave(20000, "B")
    c.heartbeat(21000, "A", 4)
    c.join(21002, 24003, "A", 5, ["A"])
    c.sync(24004, "A", 5)
    c.leave(26000, "A")
    return c


def test_one_row_per_generation_each_from_its_trigger_with_its_own_reasons() -> None:
    rows = rebalances(three_members())
    assert [(r["generation"], r["start"], r["members"], r["completed"]) for r in rows] == [
        (1, at(10), 1, True),
        (2, at(5000), 2, True),
        (3, at(10000), 3, True),
        (4, at(15000), 2, True),
        (5, at(20000), 1, True),
    ]
    assert [r["reasons"] for r in rows] == [
        {"a new member joined": 1, "a member rejoined": 1},
        {"a new member joined": 1, "a member rejoined": 2, "heartbeat told REBALANCE_IN_PROGRESS": 1},
        {"a new member joined": 1, "a member rejoined": 3, "heartbeat told REBALANCE_IN_PROGRESS": 2},
        {"LeaveGroup: a member left": 1, "heartbeat told REBALANCE_IN_PROGRESS": 2, "a member rejoined": 2},
        {"LeaveGroup: a member left": 1, "heartbeat told REBALANCE_IN_PROGRESS": 1, "a member rejoined": 1},
    ]
    assert [r["duration_ms"] for r in rows] == [3014 - 10, 8006 - 5000, 13005 - 10000, 18005 - 15000, 24005 - 20000]


def test_a_generation_overtaken_before_its_syncs_keeps_its_own_row() -> None:
    """C joins while generation 2 is being synced: its SyncGroups are told REBALANCE_IN_PROGRESS, generation 3
    follows. Generation 2 is a rebalance of its own, never completed."""
    c = Coordinator()
    c.first_join(10, "A")
    c.join(12, 3012, "A", 1, ["A"])
    c.sync(3013, "A", 1)
    c.first_join(5000, "B")
    c.join(5002, 8003, "B", 2, ["A", "B"])
    c.heartbeat(6000, "A", 1)
    c.join(6002, 8003, "A", 2, ["A", "B"])
    c.first_join(8003, "C")
    c.sync(8004, "A", 2, REBALANCE_IN_PROGRESS)
    c.sync(8005, "B", 2, REBALANCE_IN_PROGRESS)
    c.join(8006, 11007, "C", 3, ["A", "B", "C"])
    c.join(8007, 11007, "A", 3, ["A", "B", "C"])
    c.join(8008, 11007, "B", 3, ["A", "B", "C"])
    for member in "ABC":
        c.sync(11008, member, 3)
    rows = rebalances(c)
    assert [(r["generation"], r["start"], r["completed"]) for r in rows] == [(1, at(10), True), (2, at(5000), False), (3, at(8003), True)]
    assert rows[2]["reasons"] == {"a new member joined": 1, "a member rejoined": 3}


def test_generations_that_never_complete_stay_apart_and_the_last_leave_is_none() -> None:
    """tansu after its leader leaves (shared/rig-notes.md): JoinGroup responses still name the gone leader, nobody
    assigns, every SyncGroup is told REBALANCE_IN_PROGRESS. Each generation is still a row of its own, from its
    trigger, and the last member's LeaveGroup belongs to none."""
    c = three_members_until(13004)
    c.leave(15000, "A")
    c.heartbeat(16000, "B", 3)
    c.join(16002, 18003, "B", 4, ["A", "B", "C"])
    c.join(16502, 18003, "C", 4, ["A", "B", "C"])
    c.sync(18004, "B", 4, REBALANCE_IN_PROGRESS)
    c.sync(18004, "C", 4, REBALANCE_IN_PROGRESS)
    c.leave(20000, "B")
    c.join(20002, 23003, "C", 5, ["A", "C"])
    c.sync(23004, "C", 5, REBALANCE_IN_PROGRESS)
    c.leave(25000, "C")
    rows = rebalances(c)
    assert [(r["generation"], r["start"], r["completed"]) for r in rows][3:] == [(4, at(15000), False), (5, at(20000), False)]
    assert rows[3]["reasons"] == {"LeaveGroup: a member left": 1, "heartbeat told REBALANCE_IN_PROGRESS": 1, "a member rejoined": 2}
    assert rows[4]["reasons"] == {"LeaveGroup: a member left": 1, "a member rejoined": 1}


def three_members_until(ms: int) -> Coordinator:
    """`three_members`' exchanges that start before `ms`."""
    c = three_members()
    c.exchanges = [e for e in c.exchanges if e[0] < ms]
    return c
