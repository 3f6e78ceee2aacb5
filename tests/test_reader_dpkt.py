"""dpkt, an independent pcap and pcapng reader, reads every capture the tests have: kdissect's reader must find
the same packets, with the same bytes and times (to dpkt's precision: a float loses nanoseconds)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

dpkt = pytest.importorskip("dpkt", reason="the cross-check needs dpkt: pip install dpkt")

from kdissect.capture import open_capture
from kdissect.capture.pcapng import MAGIC as PCAPNG_MAGIC

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT.parent / "shared" / "captures-public"
CAPTURES = sorted((ROOT / "captures").glob("*.pcap")) + sorted(p for p in PUBLIC.glob("*.pcap*") if PUBLIC.is_dir())


def dpkt_packets(path: Path) -> list[tuple[float | Decimal, bytes]]:
    with open(path, "rb") as f:
        pcapng = f.read(4) == PCAPNG_MAGIC
        f.seek(0)
        reader = dpkt.pcapng.Reader(f) if pcapng else dpkt.pcap.Reader(f)
        return [(ts, bytes(buf)) for ts, buf in reader]


DPKT_TIMES_WRONG = {"ndpi__kafka_merged.pcapng": "dpkt applies the first interface's timestamp resolution (µs) to every interface"}
"""Captures whose times dpkt misreads: their packet bytes are compared, their times checked another way."""


def same_time(ns: int, theirs: float | Decimal) -> bool:
    if isinstance(theirs, Decimal):  # dpkt's nanosecond pcap: exact
        return int(theirs * 1_000_000_000) == ns
    return abs(ns / 1e9 - theirs) < 1e-6


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_every_packet_is_the_one_dpkt_reads(path):
    theirs = dpkt_packets(path)
    with open_capture(path) as source:
        ours = list(source.packets())
    assert len(ours) == len(theirs) > 0
    for number, (packet, (ts, data)) in enumerate(zip(ours, theirs), 1):
        assert packet.index == number
        assert packet.data == data, f"packet {number}"
        assert path.name in DPKT_TIMES_WRONG or same_time(packet.ts, ts), f"packet {number}: {packet.ts} ns, dpkt {ts}"


@pytest.mark.skipif(not (PUBLIC / "ndpi__kafka_merged.pcapng").exists(), reason="the public captures are not here")
def test_a_merged_capture_keeps_each_interface_s_resolution():
    """ndpi's merged capture is its 2024 capture (µs, interface 0) followed by its 2023 one (ns, interface 1):
    the packets of the second read as dpkt reads them in the 2023 capture alone."""
    with open_capture(PUBLIC / "ndpi__kafka_merged.pcapng") as source:
        merged = list(source.packets())
    alone = dpkt_packets(PUBLIC / "ndpi__kafka_2023.pcapng")
    tail = merged[len(merged) - len(alone) :]
    assert [p.data for p in tail] == [data for _, data in alone]
    assert all(same_time(p.ts, ts) for p, (ts, _) in zip(tail, alone))
