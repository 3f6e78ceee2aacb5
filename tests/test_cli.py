"""The `kdissect` command as users run it: output, exit codes, and one clear line for every mistake."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.views.json_lines import decode_bytes

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "captures" / "consumer-group-kafka-python.pcap"
PRODUCE = ROOT / "captures" / "produce-codecs-confluent.pcap"


def kdissect(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])", *map(str, args)],
        capture_output=True,
        input=stdin,
        timeout=300,
        check=False,
    )


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kdissect: error: "), lines
    assert b"Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["", "read", "show", "stats", "doctor", "browse", "live", "schema", "spark"])
def test_help_explains_every_command(command):
    done = kdissect(*([command] if command else []), "--help")
    assert done.returncode == 0
    text = done.stdout.decode()
    assert "Usage: kdissect" in text and "--help" in text


@pytest.mark.parametrize(
    "args,says",
    [
        (("read", "no-such-file.pcap"), "no such file"),
        (("read", str(ROOT / "README.md")), "not a pcap or pcapng capture"),
        (("read", str(ROOT / "captures")), "is a directory"),
        (("read", str(CAPTURE), "--bogus"), "No such option: --bogus"),
        (("read",), "name the capture"),
        (("read", str(CAPTURE), "-r", str(CAPTURE)), "name the capture"),
        (("read", str(CAPTURE), "--port", "9092,http"), "give port numbers"),
        (("read", str(CAPTURE), "-c", "0"), "--count"),
        (("records", str(CAPTURE), "-f", "%q"), "unknown token %q"),
        (("records", str(CAPTURE), "--direction", "sideways"), "choose produce or fetch"),
        (("show", str(CAPTURE), "--exchange", "x"), "--exchange x: give numbers"),
        (("read", str(CAPTURE), "--api", "Nope"), "unknown API 'Nope'"),
        (("read", str(CAPTURE), "--version", "x-y"), "bad version"),
        (("read", str(CAPTURE), "--min-latency", "-1"), "--min-latency"),
        (("show", str(CAPTURE)), "say which exchanges to show"),
        (("show", str(CAPTURE), "--exchange", "99999"), "no exchange in the capture matches"),
        (("bogus",), "No such command 'bogus'"),
        (("browse", "no-such-file.pcap"), "no such file"),
        (("browse", "-"), "browse reads its capture again to open an exchange: give a file, not standard input"),
        (("browse", str(CAPTURE), "-Y", "api == Fetc"), "Fetc is not an API name (did you mean 'Fetch'?)"),
        (("schema", "--source", "Fetch:99"), "give API[:VERSION"),
        (("read", str(CAPTURE), "--limit", "no_such_bound=3"), "give NAME=VALUE"),
        (("read", str(CAPTURE), "--limit", "max_frame_size=big"), "give NAME=VALUE"),
        (
            ("read", str(CAPTURE), "-Y", "latncy_ms > 5"),
            "-Y at column 1: unknown field 'latncy_ms' (did you mean 'latency_ms'?): ^latncy_ms > 5",
        ),
        (("stats", str(CAPTURE), "-Y", "(api == Fetch"), "-Y at column 1: this '(' is never closed: ^(api == Fetch"),
        (("show", str(CAPTURE), "-Y", "client_id > 3"), "> compares numbers and times; client_id is text"),
        (("live", "-i", "lo", "-Y", 'client_id matches "("'), "bad regular expression"),
        (("spark", str(CAPTURE), "--out", "x", "-Y", "api == Fetc"), "Fetc is not an API name (did you mean 'Fetch'?)"),
        (("spark", str(CAPTURE), "--out", "x", "--connection", "2"), "the tables cannot be filtered on connection"),
        (("read", str(CAPTURE), "-T", "xml"), "-T xml: choose one of text, json, fields"),
        (("read", str(CAPTURE), "-T", "fields"), "-T fields needs the fields to write"),
        (("read", str(CAPTURE), "-e", "latncy_ms"), "-e at column 1: unknown field 'latncy_ms'"),
        (("read", str(CAPTURE), "-e", "api", "-E", "colour=red"), "-E colour=red: give separator="),
        (("read", str(CAPTURE), "-T", "json", "-e", "api"), "-e and -E go with -T fields"),
    ],
)
def test_mistakes_end_in_one_line_and_status_2(args, says):
    assert says in one_error_line(kdissect(*args))


def test_empty_and_truncated_captures(tmp_path):
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    assert "empty" in one_error_line(kdissect("read", empty))
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(CAPTURE.read_bytes()[:20000])
    done = kdissect("read", cut)
    assert done.returncode == 1 and b"pcap.truncated" in done.stdout  # decoded, with damage: exit status 1
    assert done.stderr.decode().startswith("kdissect: warning: the capture is damaged (pcap.truncated")


def test_read_text_shows_exchanges_flows_and_errors():
    done = kdissect("read", CAPTURE)
    assert done.returncode == 0 and not done.stderr
    text = done.stdout.decode()
    assert "JoinGroup v7" in text and "MEMBER_ID_REQUIRED" in text
    assert "Flows" in text and "Errors" in text and "REBALANCE_IN_PROGRESS (27)" in text
    assert "\x1b[" not in text  # no control codes when not a terminal


def test_read_json_streams_one_object_per_exchange_and_filters_apply():
    every = [json.loads(line) for line in kdissect("read", CAPTURE, "--json").stdout.splitlines()]
    assert [e["id"] for e in every] == list(range(1, len(every) + 1))
    joins = [json.loads(line) for line in kdissect("read", CAPTURE, "--json", "--api", "JoinGroup,14").stdout.splitlines()]
    assert joins and {e["api_name"] for e in joins} == {"JoinGroup", "SyncGroup"}
    assert joins == [e for e in every if e["api_key"] in (11, 14)]
    errors = [json.loads(line) for line in kdissect("read", CAPTURE, "--json", "--errors").stdout.splitlines()]
    assert errors and all(e["errors"] for e in errors)
    slow = [json.loads(line) for line in kdissect("read", CAPTURE, "--json", "--min-latency", "1000").stdout.splitlines()]
    assert slow and all(e["status"] == "unanswered" or e["latency_ms"] >= 1000 for e in slow)
    topic = [json.loads(line) for line in kdissect("read", PRODUCE, "--json", "--topic", "codecs", "--version", "10").stdout.splitlines()]
    assert topic and all("codecs" in e["topics"] and e["api_version"] == 10 for e in topic)


def test_filters_combine_with_the_fixed_options_and_with_each_other():
    every = [json.loads(line) for line in kdissect("read", CAPTURE, "--json").stdout.splitlines()]
    both = kdissect("read", CAPTURE, "--json", "--api", "Heartbeat,JoinGroup", "-Y", "error", "-Y", "latency_ms < 0.7").stdout
    picked = [json.loads(line) for line in both.splitlines()]
    assert picked and picked == [
        e
        for e in every
        if e["api_name"] in ("Heartbeat", "JoinGroup") and e["errors"] and e["latency_ms"] is not None and e["latency_ms"] < 0.7
    ]
    assert kdissect("read", CAPTURE, "-T", "json", "-Y", "error").stdout == kdissect("read", CAPTURE, "--json", "--errors").stdout


def test_show_and_stats_take_the_filter():
    shown = kdissect("show", CAPTURE, "-Y", "api == Heartbeat and error").stdout.decode()
    assert shown.count("Exchange ") == 2 and "Exchange 31  Heartbeat v4" in shown and "Exchange 47  Heartbeat v4" in shown
    tables = stats_tables("-Y", "api == Heartbeat")
    assert {row["api_name"] for row in tables["apis"]} == {"Heartbeat"} and sum(row["count"] for row in tables["apis"]) == 3


def test_field_output_is_one_line_per_exchange():
    every = [json.loads(line) for line in kdissect("read", PRODUCE, "--json").stdout.splitlines()]
    done = kdissect("read", PRODUCE, "-Y", "api == Produce", "-T", "fields", "-e", "id", "-e", "api", "-e", "latency_ms", "-e", "topic")
    assert done.returncode == 0 and not done.stderr
    produce = [e for e in every if e["api_name"] == "Produce"]
    want = [f"{e['id']}\tProduce\t{e['latency_ms']!r}\t{','.join(e['topics'])}" for e in produce]
    assert done.stdout.decode().splitlines() == want
    keys = "request.TopicData.PartitionData.Records.records.key"
    done = kdissect("read", PRODUCE, "-Y", "api == Produce", "-e", "correlation_id", "-e", keys, "-E", "separator=;", "-E", "header=y")
    lines = done.stdout.decode().splitlines()
    assert lines[0] == f"correlation_id;{keys}"
    first = produce[0]["request"]["body"]["TopicData"][0]["PartitionData"][0]["Records"]["batches"][0]["records"]
    shown = [r["key"] if isinstance(r["key"], str) else "0x" + decode_bytes(r["key"]).hex() for r in first if r["key"] is not None]
    assert lines[1] == f"{produce[0]['correlation_id']};{','.join(shown)}"


def test_all_events_adds_connections(tmp_path):
    out = tmp_path / "out.ndjson"
    assert kdissect("read", CAPTURE, "--json", "--all-events", "-o", out).returncode == 0
    kinds = {json.loads(line)["type"] for line in out.read_text().splitlines()}
    assert kinds == {"exchange", "connection"}


def test_compressed_capture_reads_like_the_plain_one(tmp_path):
    packed = tmp_path / "capture.pcap.gz"
    packed.write_bytes(gzip.compress(CAPTURE.read_bytes()))
    assert kdissect("read", packed, "--json").stdout == kdissect("read", CAPTURE, "--json").stdout


def test_a_closed_pipe_ends_quietly():
    for args in (("read", PRODUCE), ("read", PRODUCE, "--json")):
        process = subprocess.Popen(
            [sys.executable, "-c", "import sys; from kdissect.cli import main; main(sys.argv[1:])", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        process.stdout.readline()
        process.stdout.close()
        assert process.wait(timeout=120) == 0
        assert process.stderr.read() == b""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_line_and_status_1():
    """ENOSPC, whether on -o FILE or on the standard output, is the user's to fix: one line, exit 1."""
    for args in (("read", CAPTURE), ("read", CAPTURE, "--json"), ("stats", CAPTURE)):
        done = kdissect(*args, "-o", "/dev/full")
        assert done.returncode == 1, done
        assert done.stderr.decode().splitlines() == ["kdissect: error: cannot write /dev/full: No space left on device"]
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from kdissect.cli import main; main(sys.argv[1:])",
                "show",
                str(CAPTURE),
                "--exchange",
                "1",
            ],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == ["kdissect: error: cannot write the standard output: No space left on device"]


def test_show_selects_by_exchange_correlation_id_and_packet():
    by_id = kdissect("show", CAPTURE, "--exchange", "17").stdout.decode()
    assert by_id.startswith("Exchange 17  JoinGroup v7") and "Metadata (read by kdissect)" in by_id
    by_frame = kdissect("show", CAPTURE, "--frame", "78").stdout.decode()
    assert by_frame.startswith("Exchange 17 ")
    by_correlation = kdissect("show", CAPTURE, "--correlation-id", "3", "--connection", "7").stdout.decode()
    assert "Exchange 17 " in by_correlation
    hexed = kdissect("show", CAPTURE, "--exchange", "17", "-x").stdout.decode()
    assert "@26-39 [0d 6b 64 72" in hexed and "Request frame bytes" in hexed


def stats_tables(*args: str) -> dict[str, list]:
    """`stats --json`'s tables by name; its last line is the doctor's verdict."""
    lines = [json.loads(line) for line in kdissect("stats", CAPTURE, "--json", *args).stdout.splitlines()]
    assert [line["type"] for line in lines[-1:]] == ["verdict"]
    return {line["table"]: line["rows"] for line in lines[:-1]}


def test_stats_json_has_every_table():
    tables = stats_tables()
    assert set(tables) == {"apis", "topics", "clients", "groups", "rebalances", "findings"}
    assert [g["group"] for g in tables["groups"]] == ["kdrig-kgroup"]
    assert [r["generation"] for r in tables["rebalances"]] == [0, 1, 2]


def test_schema_lists_every_api_key():
    rows = [json.loads(line) for line in kdissect("schema", "--json").stdout.splitlines()]
    assert len(rows) == 95 and sum(r["max_version"] - r["min_version"] + 1 for r in rows) >= 368
    assert rows[0] == {**rows[0], "name": "Produce", "versions": "0-13", "flexible_from": 9}
    source = kdissect("schema", "--source", "Fetch:13:response").stdout.decode()
    assert source.startswith("def FetchResponse_v13(buf, pos):") and "_records(buf, pos, e)" in source
    compile(source, "generated", "exec")


def test_limits_are_configurable_from_the_command_line():
    """A frame-size bound below the capture's frames turns them into diagnostics instead of exchanges."""
    small = [
        json.loads(line)
        for line in kdissect("read", CAPTURE, "--json", "--all-events", "--limit", "max_frame_size=100").stdout.splitlines()
    ]
    notices = [o["diagnostic"]["code"] for o in small if o["type"] == "notice"]
    assert "frame.bad-size" in notices
    assert len([o for o in small if o["type"] == "exchange"]) < len(kdissect("read", CAPTURE, "--json").stdout.splitlines())
