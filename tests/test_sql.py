"""`kdissect sql`: DuckDB over the tables, or over a capture's tables made once and kept in the cache.

The answers are checked against the tables read with pyarrow; the cache against change (a rewritten capture is
read again), its budget (oldest use out first) and --no-cache (nothing kept)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from collections import Counter

import pyarrow.dataset as ds
import pytest

from kdissect.pipeline.local import LocalJob, captures_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUP = os.path.join(ROOT, "captures", "consumer-group-confluent.pcap")
ADMIN = os.path.join(ROOT, "captures", "admin-confluent.pcap")
SHIM = "import sys; from kdissect.cli import main; main(sys.argv[1:])"
COUNTS = "SELECT api, count(*) AS n FROM exchanges GROUP BY api ORDER BY api"


def kdissect(*args, cache: str = "", budget_mb: int | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "KDISSECT_CACHE": cache, "COLUMNS": "200"}
    if budget_mb is not None:
        env["KDISSECT_CACHE_MB"] = str(budget_mb)
    return subprocess.run([sys.executable, "-c", SHIM, *map(str, args)], capture_output=True, timeout=120, check=False, cwd=ROOT, env=env)


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> str:
    paths, _ = captures_of([GROUP, ADMIN])
    out = str(tmp_path_factory.mktemp("sql") / "tables")
    LocalJob(paths, out, {"ports": [9092]}).run()
    return out


def api_counts(folder: str, capture: str | None = None) -> dict[str, int]:
    rows = ds.dataset(os.path.join(folder, "exchanges"), format="parquet", partitioning="hive").to_table().to_pylist()
    return dict(Counter(r["api_name"] for r in rows if capture is None or r["capture"] == capture))


def test_answers_over_a_tables_folder_in_three_formats(tables):
    want = api_counts(tables)
    done = kdissect("sql", tables, COUNTS, "--csv")
    assert done.returncode == 0, done.stderr
    got = list(csv.reader(io.StringIO(done.stdout.decode())))
    assert got[0] == ["api", "n"] and {api: int(n) for api, n in got[1:]} == want
    done = kdissect("sql", tables, "SELECT finding, exchange_ids, partitions FROM findings ORDER BY finding", "--json")
    found = [json.loads(line) for line in done.stdout.splitlines()]
    assert found and all(isinstance(f["exchange_ids"], list) for f in found)
    text = kdissect("sql", tables, COUNTS).stdout.decode()
    assert all(api in text for api in want) and f"{len(want)} rows" in text


def test_text_from_the_tables_cannot_drive_the_terminal(tables):
    done = kdissect("sql", tables, "SELECT chr(27) || '[31mred' AS x, 'a' || chr(10) || 'b' AS y")
    assert b"\x1b" not in done.stdout and b"\\x1b[31mred" in done.stdout and b"a\\x0ab" in done.stdout
    lines = kdissect("sql", tables, "SELECT 'a' || chr(13) || chr(10) || 'b' AS y", "--csv").stdout.splitlines()
    assert lines == [b"y", b"a\\x0d\\x0ab"]


def test_mistakes_are_one_line(tables, tmp_path):
    for args, said in (
        ((tables, "SELEC 1"), 'syntax error at or near "SELEC"'),
        ((tables, "SELECT nope FROM exchanges"), "nope"),
        ((tmp_path / "missing", "SELECT 1"), "neither a capture nor a folder of tables"),
        ((os.path.join(ROOT, "README.md"), "SELECT 1"), "not a pcap or pcapng capture"),
        ((tables, "SELECT 1", "--csv", "--json"), "choose one of --csv and --json"),
    ):
        done = kdissect("sql", *args)
        lines = done.stderr.decode().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and said in lines[0], (args, done.stderr)


def test_a_capture_is_read_once_and_again_when_it_changes(tmp_path):
    cache = str(tmp_path / "cache")
    capture = str(tmp_path / "c.pcap")
    shutil.copyfile(GROUP, capture)
    first = kdissect("sql", capture, COUNTS, "--csv", cache=cache)
    assert first.returncode == 0 and b"from the cache" not in first.stderr, first.stderr
    second = kdissect("sql", capture, COUNTS, "--csv", cache=cache)
    assert b"from the cache" in second.stderr and second.stdout == first.stdout
    shutil.copyfile(ADMIN, capture)  # the same path, other bytes
    changed = kdissect("sql", capture, COUNTS, "--csv", cache=cache)
    assert b"from the cache" not in changed.stderr
    want = api_counts(_tables_of(ADMIN, tmp_path))
    assert {api: int(n) for api, n in list(csv.reader(io.StringIO(changed.stdout.decode())))[1:]} == want


def _tables_of(capture: str, tmp_path) -> str:
    out = str(tmp_path / "want")
    LocalJob(captures_of([capture])[0], out, {"ports": [9092]}).run()
    return out


def test_the_cache_keeps_to_its_budget_and_no_cache_keeps_nothing(tmp_path):
    cache = str(tmp_path / "cache")
    assert kdissect("sql", GROUP, "SELECT 1", cache=cache, budget_mb=0).returncode == 0
    assert kdissect("sql", ADMIN, "SELECT 1", cache=cache, budget_mb=0).returncode == 0
    assert len(os.listdir(os.path.join(cache, "tables"))) == 1  # the older entry went; the one in use stayed
    assert b"from the cache" in kdissect("sql", ADMIN, "SELECT 1", cache=cache).stderr
    assert b"from the cache" not in kdissect("sql", GROUP, "SELECT 1", cache=cache).stderr
    other = str(tmp_path / "other")
    assert kdissect("sql", GROUP, "SELECT 1", "--no-cache", cache=other).returncode == 0
    assert not os.path.exists(os.path.join(other, "tables"))


def test_every_question_of_docs_sql_md_has_an_answer_on_the_captures(tmp_path):
    import re

    from kdissect.pipeline.sql import query

    questions = re.findall(r"```sql\n(.*?)\n```", open(os.path.join(ROOT, "docs", "sql.md")).read(), re.S)
    assert len(questions) >= 12
    out = str(tmp_path / "tables")
    LocalJob(captures_of([os.path.join(ROOT, "captures")])[0], out, {"ports": [9092]}).run()
    for text in questions:
        assert query(out, text.rstrip(";"))[1], text
