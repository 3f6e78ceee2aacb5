"""The search past a corrupt pcap record header (issue 36): it asks the plausibility test only where a header's
bytes could be one, finds what the per-offset search found, and stops when the run is asked to stop. Counted in
calls and bytes, never timed."""

from __future__ import annotations

import gzip
import io
import random
import struct

import pytest

from kdissect.capture import sync
from kdissect.capture.pcap import RESYNC_WINDOW, SCAN_STEP
from kdissect.capture.source import CaptureFile
from kdissect.capture.sync import PCAP_HEADER, PcapRules, find_pcap_sync, pcap_chain

PCAP_HEAD = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)


@pytest.fixture
def chain_calls(monkeypatch) -> list[int]:
    """The offsets `pcap_chain` is asked about by the search."""
    asked: list[int] = []

    def counted(rules, buf, pos, eof, need=sync.CHAIN):
        asked.append(pos)
        return pcap_chain(rules, buf, pos, eof, need)

    monkeypatch.setattr(sync, "pcap_chain", counted)
    return asked


def test_zeros_are_passed_over_without_a_test_per_offset(chain_calls):
    """A header followed by zeros, the bomb of a gzip file: the per-offset search asked about each of its 8 MiB."""
    assert find_pcap_sync(PcapRules("<", 1_000_000, 262144), bytes(8 << 20), 1, eof=True) is None
    assert chain_calls == []


@pytest.mark.parametrize("order,frac", [("<", 1_000_000), (">", 1_000_000_000)])
def test_random_bytes_are_asked_about_rarely(chain_calls, order, frac):
    data = random.Random(36).randbytes(4 << 20)
    assert find_pcap_sync(PcapRules(order, frac, 262144, True, 1_700_000_000), data, 1, eof=True) is None
    assert len(chain_calls) < len(data) // 100_000


def records(order: str, count: int, rng: random.Random, frac_scale: int = 1, first: int = 1_700_000_000) -> bytes:
    out = b""
    for i in range(count):
        data = rng.randbytes(rng.randint(1, 300))
        out += struct.pack(order + "IIII", first + i, rng.randint(0, 999_999) * frac_scale, len(data), len(data)) + data
    return out


def per_offset(rules: PcapRules, buf: bytes, start: int, eof: bool, limit: int | None) -> int | None:
    """The search as it was: every offset, the sub-second field first."""
    size = len(buf)
    end = size - PCAP_HEADER + 1 if not eof else size
    for pos in range(start, end if limit is None else min(end, limit)):
        if (
            pos + PCAP_HEADER <= size
            and int.from_bytes(buf[pos + 4 : pos + 8], "little" if rules.order == "<" else "big") >= rules.frac_limit
        ):
            continue
        found = pcap_chain(rules, buf, pos, eof)
        if found or found is None:
            return pos if found else None
    return None


@pytest.mark.parametrize("seed", range(40))
def test_it_finds_what_the_search_per_offset_found(seed):
    """Garbage of every kind (zeros, random bytes, sparse bytes, records cut up) before real records, either byte
    order and time unit, any rules: the same first chain, or the same None."""
    rng = random.Random(seed)
    order, nanoseconds = rng.choice("<>"), rng.random() < 0.5
    rules = PcapRules(
        order,
        1_000_000_000 if nanoseconds else 1_000_000,
        rng.choice([65535, 262144, 1 << 24]),
        rng.random() < 0.5,
        rng.choice([None, 1_700_000_000]),
    )
    garbage = rng.choice(
        [
            bytes(rng.randint(0, 200_000)),
            rng.randbytes(rng.randint(0, 5000)),
            (b"\x01" + bytes(rng.randint(0, 40))) * 500,
            records(order, 3, rng)[:-7] * 3,
        ]
    )
    buf = garbage + records(order, rng.randint(0, 6), rng, 1000 if nanoseconds else 1) + rng.randbytes(rng.randint(0, 50))
    eof, start, limit = rng.random() < 0.5, rng.randint(0, 20), rng.choice([None, len(buf) // 2])
    assert find_pcap_sync(rules, buf, start, eof, limit=limit) == per_offset(rules, buf, start, eof, limit)


def test_a_gzip_bomb_of_zeros_is_searched_once_and_given_up(chain_calls):
    """64 MiB of zeros after the file header, from a file of 64 KiB: the window searched once, step by step (the
    search per offset began again from the corrupt header at every doubling of its window)."""
    compressed = io.BytesIO()
    with gzip.GzipFile(fileobj=compressed, mode="wb", compresslevel=1) as out:
        out.write(PCAP_HEAD)
        for _ in range((RESYNC_WINDOW + (4 << 20)) // (1 << 20)):
            out.write(bytes(1 << 20))
    capture = CaptureFile(io.BytesIO(compressed.getvalue()), "bomb.pcap.gz")
    assert list(capture.packets()) == []
    assert [d.code for d in capture.diagnostics()] == ["pcap.corrupt-record"] and chain_calls == []


def test_a_stop_asked_during_the_search_ends_the_packets():
    """Bytes crafted so that many offsets look like headers (a one-byte length every 64 bytes) are searched slowly:
    asked to stop, the reader ends after the step it is in, quietly (no diagnostic: the run says it was stopped)."""
    capture = CaptureFile(io.BytesIO(PCAP_HEAD + (b"\x01" + bytes(63)) * (RESYNC_WINDOW // 64)), "crafted.pcap")
    asked: list[int] = []
    capture.stops_when(lambda: asked.append(capture.progress()[0]) is None and len(asked) > 2)
    assert list(capture.packets()) == [] and capture.diagnostics() == []
    assert len(asked) == 3 and asked[-1] < 8 * SCAN_STEP  # three steps of the 64 MiB window: read a few MiB, not all


def test_a_record_after_garbage_is_found_across_steps():
    """Real records start 3 MiB into random bytes: found however the window is cut into steps."""
    rng = random.Random(7)
    garbage = rng.randbytes(3 * SCAN_STEP + 12345)
    tail = records("<", 8, rng, first=1_700_000_100)
    capture = CaptureFile(io.BytesIO(PCAP_HEAD + records("<", 2, rng) + b"\xff" * 16 + garbage + tail), "garbage.pcap")
    packets = list(capture.packets())
    assert len(packets) == 2 + 8 and [d.code for d in capture.diagnostics()] == ["pcap.resync"]
