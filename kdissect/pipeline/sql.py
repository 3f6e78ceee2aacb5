"""SQL over the tables on one machine: DuckDB with a view per table (`exchanges`, `records`, `diagnostics`,
`findings`) over its Parquet files, partition columns as text, as Spark reads them back.

A table with no rows has no files for DuckDB to read; its view is then an empty Arrow table of the table's
schema, so a query naming it still runs (and counts 0)."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from kdissect.pipeline import tables
from kdissect.pipeline.job import WRITTEN


class SqlError(Exception):
    """What DuckDB said was wrong with the query, or with the tables folder."""


def is_tables(folder: str) -> bool:
    """Whether `folder` holds tables `kdissect tables` or `kdissect spark` wrote."""
    return os.path.isdir(folder) and any(os.path.isdir(os.path.join(folder, name)) for name in WRITTEN)


def query(folder: str, text: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The query's column names and rows."""
    import duckdb

    connection = duckdb.connect()
    try:
        for name in WRITTEN:
            _view(connection, folder, name)
        try:
            result = connection.execute(text)
        except duckdb.Error as exc:
            raise SqlError(str(exc).splitlines()[0]) from None
        if result.description is None:
            return [], []
        return [d[0] for d in result.description], result.fetchall()
    finally:
        connection.close()


def _view(connection: Any, folder: str, name: str) -> None:
    where = os.path.join(folder, name)
    files = [os.path.join(d, f) for d, _, names in os.walk(where) for f in names if f.endswith(".parquet")]
    if files:
        partitions = {column: "VARCHAR" for column in tables.PARTITIONED_BY[name]}
        pattern = os.path.join(where, "**", "*.parquet").replace("'", "''")
        connection.execute(
            f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{pattern}', hive_partitioning = true, hive_types = {partitions!r})"
        )
        return
    schema = tables.TABLES[name]
    index = schema.get_field_index("unresolved_topic_ids")
    if index >= 0:
        schema = schema.remove(index)
    for column in tables.PARTITIONED_BY[name]:
        schema = schema.append(pa.field(column, pa.string()))
    connection.register(name, schema.empty_table())
