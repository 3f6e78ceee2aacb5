"""The findings table: the doctor's findings of each capture, with their evidence as the tables' identifiers.

The doctor judges one capture as a whole, its rules watching every connection (a rebalance spans its members'
connections): each capture is judged by one task, over its packets dealt by connection key (demux.py), which
numbers exchanges and connections as `kdissect doctor` does; the evidence's numbers are then turned into the
tables' `exchange_id` and `connection_id`, and the evidence filter is kept as the doctor wrote it, for
`kdissect read CAPTURE -Y FILTER`. `kdissect tables` judges a capture in the pass that makes its rows; Spark in a
stage of its own, one task per capture (`FindingsStage`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from kdissect.doctor.engine import Doctor
from kdissect.doctor.finding import Finding
from kdissect.pipeline import rows, tables


def finding_rows(findings: Iterable[Finding], capture: str, exchange_ids: array, connection_ids: array) -> Iterator[dict[str, Any]]:
    """One row per finding; `exchange_ids` and `connection_ids` give the tables' identifier of each of the CLI's
    numbers (- 1)."""
    for finding in findings:
        e = finding.evidence
        yield {
            "capture": capture,
            "finding": finding.id,
            "severity": finding.severity,
            "title": finding.title,
            "explanation": finding.explanation,
            "advice": finding.advice,
            "software": finding.software,
            "caused_by": list(finding.caused_by),
            "evidence_count": e.count,
            "evidence_unit": e.unit,
            "evidence_filter": e.filter,
            "exchange_ids": [exchange_ids[n - 1] for n in e.exchanges],
            "connection_ids": [connection_ids[n - 1] for n in e.connections],
            "client_ids": list(e.client_ids),
            "groups": list(e.groups),
            "partitions": [{"topic": topic, "partition": partition} for topic, partition in e.partitions],
            "first_time": None if e.first_ts is None else e.first_ts // 1000,
            "last_time": None if e.last_ts is None else e.last_ts // 1000,
            "first_ts_ns": e.first_ts,
            "last_ts_ns": e.last_ts,
        }


def findings_batch(found: list[dict[str, Any]]) -> pa.RecordBatch:
    """Finding rows as one batch with their `date` partition value."""
    batch = pa.RecordBatch.from_pylist(found, schema=tables.FINDINGS)
    dates = pa.array([rows.day(row["first_ts_ns"]) for row in found], pa.string())
    return batch.append_column("date", dates)


def judge(doctor: Doctor, capture: str, exchange_ids: array, connection_ids: array) -> list[dict[str, Any]]:
    """The doctor's findings of a capture it was fed, as rows."""
    return list(finding_rows(doctor.findings(), capture, exchange_ids, connection_ids))
