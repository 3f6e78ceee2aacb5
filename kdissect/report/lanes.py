"""Each consumer group's swim lanes: a lane per member, and on it what the member did and was told (joins with the
generation they got, syncs, leaves with their reasons, the coordinator's "rejoin" and "you were removed").

Generations and rebalances come from `doctor/rebalances.py` (as `stats` tells them); this keeps what happened to
whom, bounded: `MOST_GROUPS` groups, `MOST_LANES` members a group (later members share one lane) and `MOST_MOVES`
moves a group (later ones are counted, not kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kdissect.doctor.facts import codes, fields
from kdissect.doctor.groups import GONE
from kdissect.events import Exchange
from kdissect.schema import ApiKey, ErrorCode, error_name
from kdissect.schema.tree import Struct

MOST_GROUPS = 64
MOST_LANES = 48
MOST_MOVES = 4000
OTHERS = "(other members)"

Kind = Literal["join", "sync", "leave", "rejoin", "removed"]


@dataclass(frozen=True, slots=True)
class Move:
    """One thing a member did or was told."""

    kind: Kind
    lane: int
    ts: int
    """The request."""
    end: int | None
    """Its answer, when there was one."""
    exchange: int
    note: str


@dataclass(slots=True)
class Lanes:
    """One group's members and their moves."""

    members: list[tuple[str, str]] = field(default_factory=list)
    """(member id, client id) per lane, in the order they first showed."""
    lane_of: dict[str, int] = field(default_factory=dict)
    moves: list[Move] = field(default_factory=list)
    dropped: int = 0
    """Moves past MOST_MOVES, counted."""

    def lane(self, member: str, client_id: str) -> int:
        lane = self.lane_of.get(member)
        if lane is None and len(self.members) >= MOST_LANES:  # past the cap: the one lane of the others
            member, client_id = OTHERS, ""
            lane = self.lane_of.get(member)
        if lane is None:
            lane = self.lane_of[member] = len(self.members)
            self.members.append((member, client_id))
        return lane

    def add(self, kind: Kind, member: str, exchange: Exchange, note: str) -> None:
        if len(self.moves) >= MOST_MOVES:
            self.dropped += 1
            return
        response = exchange.response
        end = response.ts if response is not None and exchange.request is not None else None
        lane = self.lane(member, exchange.client_id or "")
        self.moves.append(Move(kind, lane, exchange.ts, end, exchange.id, note))


class GroupLanes:
    """Every group's lanes, from the group exchanges the report shows."""

    def __init__(self) -> None:
        self.groups: dict[str, Lanes] = {}
        self.untracked = 0
        """Group exchanges of groups past MOST_GROUPS."""

    def exchange(self, exchange: Exchange) -> None:
        key = exchange.api_key
        if key not in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.LEAVE_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT):
            return
        request = fields(exchange.request)
        name = request.get("GroupId") if request is not None else None
        if request is None or not isinstance(name, str):
            return
        lanes = self.groups.get(name)
        if lanes is None:
            if len(self.groups) >= MOST_GROUPS:
                self.untracked += 1
                return
            lanes = self.groups[name] = Lanes()
        response = fields(exchange.response)
        member = request.get("MemberId")
        member = member if isinstance(member, str) and member else f"connection {exchange.connection.id}"
        if key == ApiKey.LEAVE_GROUP:
            self._leave(lanes, exchange, request, member)
            return
        told = set(codes(exchange.response))
        gone = told & GONE
        if gone:
            lanes.add("removed", member, exchange, " ".join(sorted(error_name(c) for c in gone)))
        elif ErrorCode.REBALANCE_IN_PROGRESS in told:
            lanes.add("rejoin", member, exchange, "REBALANCE_IN_PROGRESS")
        elif key == ApiKey.JOIN_GROUP:
            self._join(lanes, exchange, request, response, member)
        elif key == ApiKey.SYNC_GROUP:
            generation = request.get("GenerationId")
            outcome = ", ".join(error_name(c) for c in sorted(told)) if told else "assigned"
            lanes.add("sync", member, exchange, f"generation {generation}: {outcome}")

    @staticmethod
    def _join(lanes: Lanes, exchange: Exchange, request: Struct, response: Struct | None, member: str) -> None:
        reason = request.get("Reason")
        said = f" (reason: {reason})" if isinstance(reason, str) and reason else ""
        if response is None:
            lanes.add("join", member, exchange, f"no answer{said}")
            return
        given = response.get("MemberId")
        if isinstance(given, str) and given and member.startswith("connection "):
            member = given  # the first join: the coordinator names the member in its answer
        code = response.get("ErrorCode")
        if code:
            lanes.add("join", member, exchange, f"{error_name(code)}{said}")
            return
        leader = " (leader)" if given and response.get("Leader") == given else ""
        lanes.add("join", member, exchange, f"generation {response.get('GenerationId')}{leader}{said}")

    @staticmethod
    def _leave(lanes: Lanes, exchange: Exchange, request: Struct, member: str) -> None:
        leaving = [m for m in request.get("Members") or () if isinstance(m, Struct)]
        if not leaving:  # v0-v2: the member in the request
            lanes.add("leave", member, exchange, "left")
        for one in leaving:
            who, reason = one.get("MemberId"), one.get("Reason")
            lanes.add("leave", who if isinstance(who, str) and who else member, exchange, f"left: {reason}" if reason else "left")
