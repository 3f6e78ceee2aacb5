"""Record batches (v2), legacy message sets (v0/v1) and their codecs: the `records` fields of Produce and Fetch."""

from kdissect.records.context import Budget
from kdissect.records.decode import decode_records
from kdissect.records.values import (
    Control,
    LegacyMessage,
    Record,
    RecordBatch,
    RecordSet,
    format_timestamp,
)

__all__ = [
    "Budget",
    "Control",
    "LegacyMessage",
    "Record",
    "RecordBatch",
    "RecordSet",
    "decode_records",
    "format_timestamp",
]
