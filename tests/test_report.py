"""`kdissect report`: the page's data adds up to what `stats` and `doctor` say, its timelines put every exchange in the
bucket that holds its time, what it keeps is bounded, and captured text reaches the page only as escaped data.

tests/test_report_browser.py opens the pages in a real browser.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.printable import printable
from kdissect.report.axis import BUCKETS, EMPTY, Axis
from kdissect.report.inventory import MOST_FLOWS
from kdissect.report.ladder import MOST_STEPS
from kdissect.report.lanes import MOST_LANES, MOST_MOVES, OTHERS, Lanes
from kdissect.testing.hostile_text import HOSTILE, hostile_capture

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
FINDING = ("type", "layout", "id", "severity", "title", "explanation", "advice", "caused_by", "software", "evidence")
"""A finding's keys in `doctor --json`; the page's findings add what it marks and lists."""
DATA = re.compile(r'<script type="application/json" id="kd-data">(.*?)</script>', re.S)


def kdissect(*args: object, status: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "kdissect", *map(str, args)], capture_output=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert done.returncode == status, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    return done


def page_data(page: str) -> dict:
    return json.loads(DATA.search(page).group(1))


def report(*args: object) -> dict:
    return page_data(kdissect("report", *args).stdout.decode())


def ndjson(*args: object) -> list[dict]:
    return [json.loads(line) for line in kdissect(*args).stdout.decode().splitlines()]


# -- the time axis ------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**13), st.integers(0, 1000)), min_size=1, max_size=300))
def test_the_axis_puts_each_event_in_the_bucket_that_holds_its_time(events):
    """However the events come (out of order, spanning microseconds or hours), once the axis has stopped growing each
    bucket holds exactly the events whose time it covers: summed, or the most of them."""
    axis = Axis()
    total, most = axis.series(), axis.series(most=True)
    for ts, value in events:
        bucket = axis.at(ts)
        total.add(bucket, value)
        most.keep(bucket, value)
    assert axis.count <= BUCKETS and axis.origin is not None
    sums, tops = [0] * BUCKETS, [EMPTY] * BUCKETS
    for ts, value in events:
        bucket = (ts - axis.origin) // axis.width
        assert 0 <= bucket < axis.count
        sums[bucket] += value
        tops[bucket] = max(tops[bucket], value)
    assert total.values == sums and most.values == tops


# -- the numbers ---------------------------------------------------------------------------------------------------


def by_api(rows: list[dict]) -> Counter:
    counts: Counter = Counter()
    for row in rows:
        counts[row["api_name"]] += row["count"]
    return counts


@pytest.mark.parametrize(
    "name", ["doctor-rebalance-storm.pcap", "doctor-lag.pcap", "produce-codecs-confluent.pcap", "legacy-magic0-kafka-python.pcap"]
)
def test_the_page_says_what_stats_and_doctor_say_and_its_timelines_add_up_to_it(name):
    capture = CAPTURES / name
    page = report(capture)
    stats = {line["table"]: line["rows"] for line in ndjson("stats", capture, "--json") if line["type"] == "stats"}
    doctor = ndjson("doctor", capture, "--json")
    del stats["findings"]
    assert page["stats"] == stats
    assert page["verdict"] == doctor[-1]
    assert [{k: f[k] for k in FINDING} for f in page["findings"]] == doctor[:-1]
    # every exchange in the rate lines, every error code in the error lines, every record in the topics' lines
    assert sum(sum(line["count"]) for line in page["apis"]) == sum(row["count"] for row in stats["apis"])
    assert {line["name"]: sum(line["count"]) for line in page["apis"]} == {k or "?": n for k, n in by_api(stats["apis"]).items()}
    errors = Counter()
    for row in stats["apis"]:
        errors.update(row["errors"])
        errors.update({status: n for status, n in row["statuses"].items() if status not in ("ok", "error", "no-response-expected")})
    assert {line["name"]: sum(v or 0 for v in line["count"]) for line in page["errors"]} == dict(errors)
    for kind in ("produced_bytes", "produced_records", "fetched_bytes", "fetched_records"):
        topics = Counter()
        for row in stats["topics"]:
            topics[row["topic"] if row["topic"] is not None else "?"] += row[kind]
        assert {line["name"]: sum(line[kind]) for line in page["topics"]} == {t: n for t, n in topics.items()}
    assert sum(sum(line["opened"]) for line in page["connections"]) == page["verdict"]["connections"]
    # the swim lanes' generations are stats' rebalances
    assert sorted((g["name"], r["generation"]) for g in page["groups"] for r in g["rounds"]) == sorted(
        (r["group"], r["generation"]) for r in stats["rebalances"]
    )


def test_a_finding_lists_and_marks_its_evidence():
    page = report(CAPTURES / "doctor-rebalance-storm.pcap")
    storm = next(f for f in page["findings"] if f["id"] == "group.rebalance-storm")
    chosen = [
        json.loads(line)["id"]
        for line in kdissect(
            "read", CAPTURES / "doctor-rebalance-storm.pcap", "-Y", storm["evidence"]["filter"], "--json"
        ).stdout.splitlines()
    ]
    assert [row[0] for row in storm["listed"]] == chosen  # every one, in order
    assert sum(n for _, n in storm["marks"]) == len(chosen) == storm["evidence"]["count"]
    assert all(row[2].startswith("JoinGroup") for row in storm["listed"])


def test_the_lag_timeline_sees_what_the_doctor_tells():
    page = report(CAPTURES / "doctor-lag.pcap")
    lag = next(f for f in page["findings"] if f["id"] == "consumer.lag")
    most = int(re.search(r"most (\d+)", lag["title"]).group(1))
    line = next(line for line in page["lags"] if line["topic"] == "laggy")
    assert max(v for v in line["lag"] if v is not None) == most


def test_the_ladder_draws_a_rebalance_or_the_filters_selection():
    storm = CAPTURES / "doctor-rebalance-storm.pcap"
    page = report(storm)
    assert page["episodes"] and page["episodes"][0]["title"].startswith("group kdrig-storm, generation")
    apis = {step[4].split()[0] for episode in page["episodes"] for step in episode["steps"]}
    assert {"JoinGroup", "SyncGroup"} <= apis <= {"JoinGroup", "SyncGroup", "LeaveGroup", "Heartbeat", "OffsetCommit", "OffsetFetch"}
    chosen = report(storm, "--ladder", "api == Metadata")
    (episode,) = chosen["episodes"]
    assert {step[4].split()[0] for step in episode["steps"]} == {"Metadata"}
    assert len(episode["steps"]) == sum(row["count"] for row in chosen["stats"]["apis"] if row["api_name"] == "Metadata")


def test_what_the_page_keeps_is_bounded(many_connections):
    """300 copies of a consumer group's conversation: the ladder stops at its cap and says how many it left out, the
    lanes keep at most their cap of moves and count the others, and the page stays small."""
    done = kdissect("report", many_connections, "--ladder", "id >= 1")
    page = page_data(done.stdout.decode())
    (episode,) = page["episodes"]
    exchanges = page["verdict"]["exchanges"]
    assert len(episode["steps"]) == MOST_STEPS and episode["left_out"] == exchanges - MOST_STEPS
    (group,) = [g for g in page["groups"] if g["moves"]]
    assert len(group["moves"]) == MOST_MOVES and group["dropped"] > 0
    connections = page["verdict"]["connections"]
    assert connections > MOST_FLOWS and len(page["flows"]) == MOST_FLOWS and page["flows_left_out"] == connections - MOST_FLOWS
    assert len(done.stdout) < 2_000_000


def test_members_past_the_cap_share_one_lane():
    lanes = Lanes()
    numbers = [lanes.lane(f"member-{i}", "client") for i in range(MOST_LANES + 10)]
    assert numbers[:MOST_LANES] == list(range(MOST_LANES)) and set(numbers[MOST_LANES:]) == {MOST_LANES}
    assert len(lanes.members) == MOST_LANES + 1 and lanes.members[-1] == (OTHERS, "")


def test_a_filter_restricts_the_page_as_it_restricts_stats():
    capture = CAPTURES / "doctor-rebalance-storm.pcap"
    page = report(capture, "-Y", "api == Heartbeat")
    stats = {
        line["table"]: line["rows"] for line in ndjson("stats", capture, "--json", "-Y", "api == Heartbeat") if line["type"] == "stats"
    }
    assert page["stats"]["apis"] == stats["apis"] and {line["name"] for line in page["apis"]} == {"Heartbeat"}
    assert page["filter"] == "api == Heartbeat" and page["episodes"][0]["title"] == "-Y api == Heartbeat"


def test_several_captures_are_read_as_one_merged_by_time():
    one, two = CAPTURES / "doctor-lag.pcap", CAPTURES / "doctor-rebalance-storm.pcap"
    merged = report(one, two)
    assert merged["captures"] == [str(one), str(two)] and merged["capture"] == "MERGED.pcap"
    assert merged["verdict"]["exchanges"] == report(one)["verdict"]["exchanges"] + report(two)["verdict"]["exchanges"]
    assert {f["id"] for f in merged["findings"]} >= {"consumer.lag", "group.rebalance-storm"}


def test_doctor_html_writes_the_report_page(tmp_path):
    capture = CAPTURES / "doctor-lag.pcap"
    kdissect("doctor", capture, "--html", tmp_path / "page.html", "-o", tmp_path / "doctor.txt")
    assert page_data((tmp_path / "page.html").read_text()) == report(capture)
    assert (tmp_path / "doctor.txt").read_text().startswith("Doctor: 1 problem")


@pytest.mark.parametrize(
    "args, message",
    [
        (["report", "no-such.pcap"], "no-such.pcap: no such file"),
        (["report", CAPTURES / "doctor-lag.pcap", "--ladder", "api =="], "--ladder at column"),
        (["report", CAPTURES / "doctor-lag.pcap", "--set", "consumer.lag.nope=1"], "has no threshold 'nope'"),
        (["report", CAPTURES / "doctor-lag.pcap", "-"], "standard input (-) is read alone"),
    ],
)
def test_mistakes_are_one_line(args, message):
    done = kdissect(*args, status=2)
    (line,) = done.stderr.decode().splitlines()
    assert message in line


# -- text from the wire ----------------------------------------------------------------------------------------------


def test_captured_text_reaches_the_page_only_as_escaped_data(tmp_path):
    """The hostile strings (terminal escapes, bidi overrides, `</script>`, `<!--`, markup) are in the page's data,
    made printable, with `<` `>` `&` written as JSON escapes: the page's only script and markup are its own."""
    capture = hostile_capture(tmp_path / "hostile.pcap")
    page = kdissect("report", capture).stdout.decode()
    assert page.count("<script") == 3 and page.count("</script") == 3 and "<!--" not in page and "<img" not in page
    raw = DATA.search(page).group(1)
    assert not set(raw) & set("<>&\x1b\u202e\u2028")
    text = json.dumps(page_data(page), ensure_ascii=False)
    for hostile in HOSTILE:
        assert json.dumps(printable(hostile), ensure_ascii=False)[1:-1] in text
