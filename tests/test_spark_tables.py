"""`kdissect spark` as a data person uses it: the command, then the tables opened with pandas and DuckDB.

Mistakes (a bad or unreachable --master, an --out that holds tables) end in one line before Spark starts. The
tables' times are Parquet TIMESTAMPs in UTC, each partition directory holds one file, no column name needs
quoting, and an exchange_id is what `kdissect show --id` takes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = [ROOT / "captures" / n for n in ("consumer-group-kafka-python.pcap", "produce-transactions.pcap", "admin-confluent.pcap")]
SHIM = "import sys; from kdissect.cli import main; main(sys.argv[1:])"


def kdissect(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SHIM, *map(str, args)], capture_output=True, timeout=600, check=False, cwd=ROOT)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("kdissect: error: "), done.stderr
    return lines[0]


def test_a_bad_master_is_one_line_before_spark_starts(tmp_path):
    assert "not a Spark master URL" in one_error_line(kdissect("spark", CAPTURES[0], "--out", tmp_path / "t", "--master", "sparky://x"))
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    done = kdissect("spark", CAPTURES[0], "--out", tmp_path / "t", "--master", f"spark://127.0.0.1:{port}")
    assert f"--master spark://127.0.0.1:{port}: no Spark master answers" in one_error_line(done)
    assert b"Traceback" not in done.stderr and b"java." not in done.stderr


def test_existing_tables_are_refused_before_spark_starts(tmp_path):
    (tmp_path / "out" / "records").mkdir(parents=True)
    assert "records exists already" in one_error_line(kdissect("spark", CAPTURES[0], "--out", tmp_path / "out"))
    refused = one_error_line(kdissect("spark", CAPTURES[0], "--out", tmp_path / "x", "--connection", "1"))
    assert "the tables cannot be filtered on connection" in refused


@pytest.fixture(scope="module")
def tables(tmp_path_factory, spark_ready) -> Path:
    out = tmp_path_factory.mktemp("spark") / "tables"
    done = kdissect("spark", *CAPTURES, "--out", out, "--master", "local[2]", "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    return out


def test_times_are_utc_timestamps_for_pandas_and_duckdb(tables):
    import duckdb
    import pandas as pd

    for name in ("exchanges", "records", "diagnostics"):
        frame = pd.read_parquet(tables / name)
        assert str(frame["time"].dtype) == "datetime64[us, UTC]", name
    exchanges = pd.read_parquet(tables / "exchanges")
    first = exchanges.sort_values("ts_ns").iloc[0]
    assert first["time"] == pd.Timestamp(first["ts_ns"] // 1000, unit="us", tz="UTC")
    con = duckdb.connect()
    types = {
        row[0]: row[1]
        for row in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{tables}/records/**/*.parquet', hive_partitioning=1)").fetchall()
    }
    assert types["time"] == "TIMESTAMP WITH TIME ZONE" and types["record_offset"] == "BIGINT" and types["partition"] == "INTEGER"


def test_every_column_is_named_without_quotes(tables):
    """Each table's columns selected, grouped and ordered by their bare names in DuckDB: none is a reserved word."""
    import duckdb

    con = duckdb.connect()
    for name in ("exchanges", "records", "diagnostics"):
        source = f"read_parquet('{tables}/{name}/**/*.parquet', hive_partitioning=1)"
        columns = [row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
        scalar = [c for c in columns if c not in ("errors", "error_names", "topics", "groups", "diagnostics", "headers")]
        scalar = [c for c in scalar if not c.endswith("_packets")]
        listed = ", ".join(scalar)
        rows = con.execute(f"SELECT {listed} FROM {source} GROUP BY {listed} ORDER BY {listed}").fetchall()
        assert rows, name
    records = con.execute(
        f"SELECT topic, partition, count(*) FROM read_parquet('{tables}/records/**/*.parquet', hive_partitioning=1) "
        "WHERE direction = 'fetch' AND NOT control GROUP BY topic, partition ORDER BY topic"
    ).fetchall()
    assert ("txn", 0, 12) in records  # fetched records, transaction markers left out by the WHERE clause


def test_a_small_tables_partition_directories_hold_one_file_each(tables):
    for name in ("exchanges", "records", "diagnostics"):
        leaves = {p.parent for p in (tables / name).rglob("*.parquet")}
        assert leaves
        for leaf in leaves:
            assert len(list(leaf.glob("*.parquet"))) == 1, leaf


def test_an_exchange_id_is_what_show_takes(tables):
    import pandas as pd

    exchanges = pd.read_parquet(tables / "exchanges")
    row = exchanges[(exchanges.api_name == "JoinGroup") & (exchanges.capture == str(CAPTURES[0]))].iloc[0]
    shown = kdissect("show", row["capture"], "--id", int(row["exchange_id"]), "--json")
    assert shown.returncode == 0, shown.stderr
    (exchange,) = [json.loads(line) for line in shown.stdout.splitlines()]
    table = json.loads(row["json"])
    for document in (exchange, table):
        document.pop("id")
        document["connection"].pop("id")
    assert exchange == table
