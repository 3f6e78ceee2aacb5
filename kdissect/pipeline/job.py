"""The Spark job, stage by stage: list, probe, plan and index ranges (splits.py), dissect, name topics, write the tables.

captures ──probe──▶ ranges ──index (tasks)──▶ settled ranges
settled ranges ──data source──▶ rows (file, 4-tuple key, range, chunk, packets blob)
    ──repartition by (file, key)──▶ sort within partitions by (file, key, range, chunk)
    ──mapInArrow(CoreStage)──▶ exchange / record / diagnostic / topic / stats rows (persisted)
    ──topic names from every connection──▶ exchanges, records, diagnostics (partitioned by date, api)
captures ──one task each: the doctor (findings_stage.py)──▶ findings (partitioned by date)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kdissect.capture.ranges import Split
from kdissect.pipeline import tables
from kdissect.pipeline.inputs import InputFile, expand
from kdissect.pipeline.splits import DEFAULT_SPLIT, plan_ranges

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TABLES = ("exchanges", "records", "diagnostics")
"""The tables of the core stage's rows; `findings` comes from a stage of its own."""
WRITTEN = (*TABLES, "findings")
KIND_OF = {"exchanges": "exchange", "records": "record", "diagnostics": "diagnostic"}
FORMATS = ("parquet", "orc", "json")
UNIQUE = {
    "exchanges": ("exchange_id", "time", "ts_ns", "request_ts_ns", "response_ts_ns", "latency_ms", "correlation_id", "json"),
    "records": ("record_offset", "value"),
    "diagnostics": (),
}
"""Columns whose values nearly all differ: Parquet need not try a dictionary for them, which it builds for every
value before giving up (the json column alone wrote 15% faster without)."""
FILE_ROWS = 1_000_000
"""Rows per file at most: a day of one API's records can be large, and readers split work by file."""


class JobError(Exception):
    """Something the user can fix (an option, the output directory); one line. Inputs raise InputError."""


@dataclass
class Totals:
    files: int = 0
    skipped: list[str] = field(default_factory=list)
    ranges: int = 0
    packets: int = 0
    connections: int = 0
    exchanges: int = 0
    records: int = 0
    diagnostics: int = 0
    findings: int = 0
    seconds: float = 0.0
    stages: list[tuple[str, float]] = field(default_factory=list)


def embedded_secrets(paths: dict[int, str]) -> dict[str, bytes]:
    """The TLS key logs pcapng captures embed at their head, by file id: ranges are read apart, so every
    connection's dissector is given them from the start (capture/source.py)."""
    from kdissect.capture.source import embedded_tls_keylogs
    from kdissect.pipeline.reader import open_path

    found = {}
    for file_id, path in paths.items():
        with open_path(path) as raw:
            text = embedded_tls_keylogs(raw, path)
        if text:
            found[str(file_id)] = text
    return found


def dissect(spark: SparkSession, ranges: list[Split], config: dict[str, Any], partitions: int) -> DataFrame:
    """The core's output for every range, as one DataFrame (see the module docstring)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from kdissect.pipeline.core import CoreStage
    from kdissect.pipeline.source import NAME, encode_plan

    rows = spark.read.format(NAME).option("plan", encode_plan(ranges)).load()
    return (
        rows.repartition(partitions, "file_id", "key")
        .sortWithinPartitions("file_id", "key", "split", "chunk")
        .mapInArrow(CoreStage(config), from_arrow_schema(tables.CORE_OUTPUT))
    )


def judge(spark: SparkSession, config: dict[str, Any]) -> DataFrame:
    """The findings of every capture in `config["judged"]`, one task each, as one DataFrame."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from kdissect.pipeline.findings_stage import FindingsStage

    count = len(config["judged"])
    return spark.range(0, count, 1, count).mapInArrow(FindingsStage(config), from_arrow_schema(tables.FINDINGS_OUTPUT))


def topic_names(output: DataFrame) -> dict[str, str]:
    """Topic id -> name, from every connection of the job (see core.py): a few rows per task, deduplicated here
    rather than by a shuffle, once for all the tables."""
    from pyspark.sql import functions as F

    return {r["topic_id"]: r["name"] for r in output.where(F.col("kind") == "topic").select("topic.*").collect()}


def name_topics(output: DataFrame, kind: str, names: dict[str, str]) -> DataFrame:
    """A table's rows, with topics named by id (`topic_names`)."""
    from pyspark.sql import functions as F

    table = output.where(F.col("kind") == kind).select(f"{kind}.*", "date", "api")
    if kind == "exchange":
        if names:
            lookup = F.create_map(*[F.lit(x) for pair in sorted(names.items()) for x in pair])
            named = F.filter(F.transform("unresolved_topic_ids", lambda i: F.element_at(lookup, i)), lambda t: t.isNotNull())
            table = table.withColumn("topics", F.array_distinct(F.concat("topics", named)))
        table = table.drop("unresolved_topic_ids")
    elif kind == "record" and names:
        lookup = F.create_map(*[F.lit(x) for pair in sorted(names.items()) for x in pair])
        table = table.withColumn("topic", F.coalesce("topic", F.element_at(lookup, F.col("topic_id"))))
    return table


def _join(out: str, name: str) -> str:
    return out.rstrip("/") + "/" + name


def check_local_out(out: str) -> None:
    """JobError when tables are already under a local `out`: checked before Spark starts."""
    for name in WRITTEN:
        if os.path.exists(os.path.join(out, name)):
            raise JobError(f"{_join(out, name)} exists already: remove it or choose another --out")


def _check_out(spark: SparkSession, out: str) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # set while a SparkContext runs
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for name in WRITTEN:
        path = jvm.org.apache.hadoop.fs.Path(_join(out, name))
        if path.getFileSystem(conf).exists(path):
            raise JobError(f"{_join(out, name)} exists already: remove it or choose another --out")


def run(
    spark: SparkSession,
    captures: list[str],
    out: str,
    fmt: str = "parquet",
    ports: frozenset[int] = frozenset({9092}),
    split_size: int = DEFAULT_SPLIT,
    partitions: int | None = None,
    progress: Callable[[str], None] = lambda line: None,
    options: dict[str, Any] | None = None,
    files: list[InputFile] | None = None,
) -> Totals:
    """Run the whole job; returns its totals. JobError / InputError for what the user can fix."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if fmt not in FORMATS:
        raise JobError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    totals = Totals()
    started = last = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        totals.stages.append((name, now - last))
        last = now

    if "://" not in out:
        out = os.path.abspath(out)
    _check_out(spark, out)
    if files is None:
        progress(f"listing {len(captures)} input{'s' if len(captures) != 1 else ''}")
        files = expand(captures, spark)
    stage("list")
    progress(f"planning {len(files)} file{'s' if len(files) != 1 else ''}, {sum(f.size for f in files) / 1e6:.1f} MB")
    ranges, paths, skipped = plan_ranges(spark, files, split_size, progress)
    totals.files, totals.skipped, totals.ranges = len(paths), skipped, len(ranges)
    if skipped:
        plural = "s" if len(skipped) != 1 else ""
        progress(f"skipped {len(skipped)} file{plural} in the directories that are not captures ({skipped[0]}, …)")
    stage("plan")
    config = {"paths": {str(k): v for k, v in paths.items()}, "ports": sorted(ports), **(options or {})}
    config["tls_secrets"] = embedded_secrets(paths)
    parallelism = spark.sparkContext.defaultParallelism
    partitions = partitions or max(parallelism * 2, min(len(ranges), parallelism * 8))
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))  # Spark's 200 is slow for small jobs
    output = dissect(spark, ranges, config, partitions).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        progress(f"dissecting {len(ranges)} ranges on {partitions} partitions")
        stats = output.where(F.col("kind") == "stats").select("stats.*").groupBy().sum().collect()[0]
        totals.packets, totals.connections, totals.exchanges, totals.records, totals.diagnostics = (int(v or 0) for v in stats)
        names = topic_names(output)
        stage("dissect")
        for name in TABLES:
            progress(f"writing {name}")
            # rebalanced by (date, api): a small directory gets one file, a large one is split across tasks by size
            # (Spark's adaptive execution), so both a cluster and two cores share the writing
            table = name_topics(output, KIND_OF[name], names).hint("rebalance", "date", "api")
            writer = table.write.partitionBy("date", "api").format(fmt).mode("errorifexists").option("maxRecordsPerFile", FILE_ROWS)
            if fmt == "parquet":
                for column in UNIQUE[name]:
                    writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
            writer.save(_join(out, name))
            stage(f"write {name}")
    finally:
        output.unpersist()
    progress(f"judging {len(paths)} capture{'s' if len(paths) != 1 else ''} (the doctor, one task each)")
    findings = judge(spark, {**config, "judged": sorted(paths)}).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        totals.findings = findings.count()
        writer = findings.hint("rebalance", "date").write.partitionBy("date").format(fmt).mode("errorifexists")
        writer.save(_join(out, "findings"))
        stage("findings")
    finally:
        findings.unpersist()
    totals.seconds = time.perf_counter() - started
    return totals
