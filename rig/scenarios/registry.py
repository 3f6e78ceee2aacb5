"""A group that is not a consumer group: Schema Registry's leader election (protocol type "sr"), recorded for real.

Confluent's Schema Registry is Java and is not installed here; its instances elect their leader through an ordinary
Kafka group whose members offer one protocol, "v0", with their identity as JSON, and whose leader answers every member
with the elected leader's member id and identity (its SchemaRegistryProtocol). kafka-python's BaseCoordinator is the
same group machinery as Schema Registry's (Kafka's AbstractCoordinator): subclassed with that protocol type and those
payloads, two instances elect a leader against tansu, the eligible one leaves, and the other rejoins alone, not
eligible, so the group has no leader.
"""

from __future__ import annotations

import json
import time

from rig.clients import kafka_python_name
from rig.manifest import Manifest
from rig.scenarios import Ctx, scenario
from rig.scenarios.common import attempt

GROUP = "schema-registry"


def identity(n: int, eligible: bool) -> dict:
    """An instance's identity as Schema Registry writes it (SchemaRegistryIdentity)."""
    return {"version": 1, "host": f"sr-{n}", "port": 8081, "master_eligibility": eligible, "scheme": "http"}


def election(bootstrap: str, n: int, eligible: bool):
    from kafka.coordinator.base import BaseCoordinator
    from kafka.net.compat import KafkaNetClient

    class Election(BaseCoordinator):
        """A Schema Registry instance in its leader election: protocol type "sr", one protocol "v0"."""

        def __init__(self, client, **configs) -> None:
            super().__init__(client, **configs)
            self.assignment: dict | None = None
            self.generation = -1

        def protocol_type(self) -> str:
            return "sr"

        def group_protocols(self) -> list:
            return [("v0", json.dumps(identity(n, eligible), separators=(",", ":")).encode())]

        def _perform_assignment(self, leader_id, protocol, members) -> dict:
            """As Schema Registry's leader: the first eligible member by id leads; everyone gets the same answer."""
            identities = {m.member_id: json.loads(m.metadata) for m in members}
            eligible_ids = sorted(member for member, found in identities.items() if found.get("master_eligibility"))
            answer: dict = {"version": 1, "error": 0}
            if eligible_ids:
                answer.update(master=eligible_ids[0], master_identity=identities[eligible_ids[0]])
            return {member: json.dumps(answer, separators=(",", ":")).encode() for member in identities}

        async def _on_join_complete_async(self, generation, member_id, protocol, assignment) -> None:
            self.generation, self.assignment = generation, json.loads(assignment)

    client = KafkaNetClient(bootstrap_servers=bootstrap, client_id=f"kdrig-sr-{n}")
    client._manager.bootstrap(10_000)
    coordinator = Election(client, group_id=GROUP, session_timeout_ms=6000, heartbeat_interval_ms=500, rebalance_timeout_ms=6000)
    return client, coordinator


def settle(m: Manifest, instances: dict, seconds: float, told: set) -> None:
    """Keep every instance in the group for `seconds`; record each join's outcome once (`told` holds those recorded)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for name, (_, coordinator) in instances.items():
            coordinator.ensure_active_group(timeout_ms=200)
            key = (name, coordinator.generation)
            if coordinator.assignment is not None and key not in told:
                told.add(key)
                joined = {"group": GROUP, "member": name, "generation": coordinator.generation, "response": coordinator.assignment}
                m.op(kafka_python_name(), "joined", **joined)


@scenario(
    "schema-registry-kafka-python",
    "Schema Registry's leader election (protocol type sr, JSON identities) from kafka-python's BaseCoordinator: two "
    "instances elect the eligible one, it leaves, the other rejoins alone and is answered without a leader",
    expect_apis={10, 11, 12, 13, 14},
)
def schema_registry(ctx: Ctx) -> None:
    m = ctx.manifest
    instances = {"sr-1": election(ctx.bootstrap, 1, True), "sr-2": election(ctx.bootstrap, 2, False)}
    told: set = set()
    settle(m, instances, 12, told)
    client, coordinator = instances.pop("sr-1")
    attempt(m, kafka_python_name(), "close", coordinator.close, group=GROUP, member="sr-1")
    client.close()
    settle(m, instances, 10, told)
    for name, (client, coordinator) in instances.items():
        attempt(m, kafka_python_name(), "close", coordinator.close, group=GROUP, member=name)
        client.close()
