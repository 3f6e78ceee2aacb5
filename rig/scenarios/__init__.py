"""The registry of capture scenarios.

A scenario is a workload (a function taking a :class:`Ctx`) plus how to capture
it. The workload only talks Kafka to ``ctx.bootstrap`` and writes manifest lines;
starting the broker, tcpdump and the network namespaces is the runner's job
(``rig.run``), so every workload can run on loopback or across a veth pair.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Optional

from rig.manifest import Manifest
from rig.tls import TlsSpec


@dataclass
class Ctx:
    """What a workload gets: where the broker is, and the manifest to write (and for TLS, the key log)."""

    bootstrap: str
    manifest: Manifest
    keylog: Optional[str] = None
    registry: Optional[str] = None  # the schema registry stand-in's URL (rig/registry.py), for scenarios that ask for one

    def ssl_context(self):
        """A TLS client context writing this scenario's key log (rig/tls.py)."""
        from rig.tls import client_context

        assert self.keylog is not None, "not a TLS scenario"
        return client_context(self.keylog)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    workload: Callable[[Ctx], None]
    netns: bool = False  # run across a veth pair with MTU 1500 instead of loopback
    interface: str = "lo"  # "any" gives Linux cooked (SLL2) frames
    nano: bool = False  # nanosecond pcap timestamps
    expect_apis: frozenset = field(default_factory=frozenset)  # api keys that must appear
    tls: Optional[TlsSpec] = None  # clients talk TLS to stunnel in front of the broker (rig/tls.py)
    relay: Optional[Callable[[int, int], float]] = None  # hold responses in rig/relay.py: (api key, nth) -> seconds
    broker: str = "tansu"  # or "noida-db" (rig/noida.py), for what only noida-db does
    wire_counts: Optional[Callable] = None  # Summary -> dict, counted from the capture into a `counted` manifest line
    registry: bool = False  # run the schema registry stand-in (rig/registry.py) on loopback, and capture its port too


REGISTRY: dict[str, Scenario] = {}

MODULES = (
    "admin",
    "produce",
    "consume",
    "legacy",
    "clients",
    "tls",
    "doctor",
    "faults",
    "habits",
    "healthy",
    "hostile",
    "registry",
    "values",
)


def scenario(name: str, title: str, **options) -> Callable:
    """Decorator: register a workload under *name*."""

    def register(fn: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
        if name in REGISTRY:
            raise ValueError(f"duplicate scenario {name}")
        if "expect_apis" in options:
            options["expect_apis"] = frozenset(options["expect_apis"])
        REGISTRY[name] = Scenario(name=name, title=title, workload=fn, **options)
        return fn

    return register


def load_all() -> dict[str, Scenario]:
    for module in MODULES:
        importlib.import_module(f"rig.scenarios.{module}")
    return REGISTRY


def get(name: str) -> Optional[Scenario]:
    return load_all().get(name)
