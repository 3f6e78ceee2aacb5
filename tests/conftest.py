"""Fixtures several test files share."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

if "KDISSECT_CACHE" not in os.environ:  # the compiled decoders the tests' runs keep (schema/code_cache.py): not the user's
    os.environ["KDISSECT_CACHE"] = tempfile.mkdtemp(prefix="kdissect-test-cache-")
    atexit.register(shutil.rmtree, os.environ["KDISSECT_CACHE"], True)


@pytest.fixture(scope="session")
def many_connections(tmp_path_factory) -> Path:
    """A capture long enough to interrupt and to draw a progress bar: 300 copies of a real consumer-group
    conversation (captures/consumer-group-kafka-python.pcap), each from its own client address, 20 s apart."""
    from kdissect.capture import open_capture
    from kdissect.capture.writer import PcapWriter
    from kdissect.testing.craft import conversation_copy

    with open_capture(ROOT / "captures" / "consumer-group-kafka-python.pcap") as source:
        packets = list(source.packets())
    path = tmp_path_factory.mktemp("big") / "many-connections.pcap"
    with open(path, "wb") as out:
        writer = PcapWriter(out, 1, nanosecond=True)
        for k in range(300):
            writer.write_all(conversation_copy(packets, k, bytes([10, 99, 0, 1]), packets[0].ts, packets[0].ts + k * 20_000_000_000))
    return path


@pytest.fixture(scope="session")
def spark_ready() -> None:
    """Skips, saying why, when pyspark or Java is missing."""
    from kdissect.pipeline.session import SparkUnavailable, check_java, check_pyspark

    try:
        check_pyspark()
        check_java()
    except SparkUnavailable as exc:
        pytest.skip(f"Spark tests skipped: {exc}")
