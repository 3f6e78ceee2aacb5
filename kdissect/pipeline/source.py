"""The input as a Spark 4 Python data source: one partition per settled byte range, Arrow batches out.

Spark's own whole-file readers (`binaryFile`, `binaryFiles`) fail on files over 2 GiB and hold whole copies
in memory; this source streams each range through the CLI's capture readers instead (reader.py).
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from kdissect.capture.ranges import Split
from kdissect.pipeline import tables
from kdissect.pipeline.reader import Row, read_split
from kdissect.pipeline.tables import input_batch as to_batch

NAME = "kdissect-captures"
BATCH_BYTES = 32 << 20
BATCH_ROWS = 1024


def encode_plan(splits: list[Split]) -> str:
    return json.dumps([{**asdict(s), "prefix": base64.b64encode(s.prefix).decode()} for s in splits])


def decode_plan(text: str) -> list[Split]:
    return [Split(**{**d, "prefix": base64.b64decode(d["prefix"])}) for d in json.loads(text)]


class RangePartition(InputPartition):
    def __init__(self, split: Split) -> None:
        super().__init__(split.ordinal)
        self.split = split


class CaptureSource(DataSource):
    """`spark.read.format("kdissect-captures").option("plan", encode_plan(splits)).load()`."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return from_arrow_schema(tables.INPUT)

    def reader(self, schema: StructType) -> DataSourceReader:
        return CaptureReader(decode_plan(self.options["plan"]))


class CaptureReader(DataSourceReader):
    def __init__(self, splits: list[Split]) -> None:
        self.splits = splits

    def partitions(self) -> list[InputPartition]:
        return [RangePartition(split) for split in self.splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        held: list[Row] = []
        size = 0
        assert isinstance(partition, RangePartition)  # Spark hands back the partitions `partitions` made
        for row in read_split(partition.split):
            held.append(row)
            size += len(row.blob)
            if size >= BATCH_BYTES or len(held) >= BATCH_ROWS:
                yield to_batch(held)
                held, size = [], 0
        if held:
            yield to_batch(held)
