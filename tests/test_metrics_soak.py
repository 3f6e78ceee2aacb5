"""The soak's short version (benchmarks/soak_metrics.py; the full one runs ten minutes or more): real traffic replayed
onto a veth for `kdissect live --metrics` with a short idle time, so that eviction runs several times in 30 s; the
resident memory after the warm-up stays within 10 % of its median and every packet sent is read or counted as
dropped by the kernel. About 35 seconds; needs root, iproute2, ethtool and tcpreplay.
"""

from __future__ import annotations

import pytest

from rig.replay import missing

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


def test_a_short_soak_is_flat_and_counts_every_packet(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.soak_metrics import main

    status = main(["--minutes", "0.5", "--every", "2", "--idle", "5", "--pps", "2000", "--copies", "20"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "every packet accounted for" in printed
