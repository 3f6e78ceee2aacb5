"""The job's planning stage on Spark: every capture's byte ranges, probed on the driver, indexed by tasks.

The rules (what a file's head says, where a range's first record is, whether the ranges tile the file) are
the capture stage's own, in capture/ranges.py; what is Spark's here is where each step runs and that files are
opened through the job's file systems (reader.open_path).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

from kdissect.capture import ranges
from kdissect.capture.ranges import CaptureInfo, RangeIndex, Split
from kdissect.pipeline.inputs import InputError, InputFile
from kdissect.pipeline.reader import open_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_SPLIT = 64 << 20
"""Bytes per range: a task's worth of reading."""


def _probe(file_id: int, f: InputFile, split_size: int) -> CaptureInfo:
    with open_path(f.path) as raw:
        return ranges.probe(file_id, f.path, raw, f.size, split_size)


def _index(args: tuple[CaptureInfo, Split]) -> RangeIndex:
    info, split = args
    with open_path(split.path) as raw:
        return ranges.index_range(info, split, raw)


def plan_ranges(
    spark: SparkSession, files: list[InputFile], split_size: int, progress: Callable[[str], None]
) -> tuple[list[Split], dict[int, str], list[str]]:
    """Settled ranges of every capture, the capture path of each file id, and the files skipped."""
    with ThreadPoolExecutor(16) as pool:
        infos = list(pool.map(lambda item: _probe(item[0], item[1], split_size), enumerate(files)))
    skipped = []
    for info, f in zip(infos, files):
        if info.kind == "skip":
            if f.named:
                raise InputError(f"{f.path}: not a pcap or pcapng capture")
            skipped.append(f.path)
    infos = [i for i in infos if i.kind != "skip"]
    if not infos:
        raise InputError("no capture among the inputs")
    planned = {info.file_id: ranges.plan(info, split_size) for info in infos}
    work = [(info, s) for info in infos if info.kind in ("pcap", "pcapng") for s in planned[info.file_id]]
    found: dict[tuple[int, int], RangeIndex] = {}
    if work:
        progress(f"indexing {len(work)} ranges of {sum(1 for i in infos if i.kind in ('pcap', 'pcapng'))} splittable captures")
        results = spark.sparkContext.parallelize(work, len(work)).map(_index).collect()
        found = {(info.file_id, s.ordinal): r for (info, s), r in zip(work, results)}
    out: list[Split] = []
    for info in infos:
        planned_ranges = planned[info.file_id]
        if info.kind in ("pcap", "pcapng"):
            settled, _count = ranges.settle(info, planned_ranges, [found[(info.file_id, s.ordinal)] for s in planned_ranges])
            if len(settled) == 1 and settled[0].whole and len(planned_ranges) > 1:
                progress(f"{info.path}: its ranges do not line up (a corrupt record?); reading it whole")
            out.extend(settled)
        else:
            out.extend(planned_ranges)
    return out, {info.file_id: info.path for info in infos}, skipped
