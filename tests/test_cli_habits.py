"""The habits of tshark, tcpdump and kcat users, as they would try them: pipes, Ctrl-C, exit codes, the options
every command shares, grouped help, completion, and `kdissect records`."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import lz4.frame
import pytest
import zstandard

from kdissect.capture import open_capture
from kdissect.capture.writer import PcapngWriter
from kdissect.views.json_lines import decode_bytes

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "captures" / "consumer-group-kafka-python.pcap"
TRANSACTIONS = ROOT / "captures" / "produce-transactions.pcap"
MANIFESTED = sorted(p for p in (ROOT / "captures").glob("*.pcap") if p.with_suffix(".manifest.jsonl").exists())
SHIM = "import sys; from kdissect.cli import main; main(sys.argv[1:])"


def kdissect(*args, stdin: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command with its output in a pipe, as wide as a pipe's output is by default (160 columns)."""
    env = {**os.environ, "COLUMNS": "160"} if env is None else env
    return subprocess.run(
        [sys.executable, "-c", SHIM, *map(str, args)], capture_output=True, input=stdin, timeout=300, check=False, env=env, cwd=ROOT
    )


def ndjson(done: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def pcapng_copy(path: Path, out: Path) -> Path:
    with open_capture(path) as source, open(out, "wb") as f:
        writer = PcapngWriter(f)
        writer.interface(1, tsresol=9)
        for packet in source.packets():
            writer.packet(packet)
    return out


# -- input from a pipe -----------------------------------------------------------------------------------------


CONTAINERS = {
    "pcap": lambda data: data,
    "gzip": gzip.compress,
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
    "lz4": lz4.frame.compress,
}


@pytest.mark.parametrize("container", sorted(CONTAINERS))
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_standard_input_reads_like_the_file(tmp_path, fmt, container):
    """`tcpdump -w - | kdissect read -`: every command that reads a capture takes it from a pipe, compressed or not."""
    plain = CAPTURE if fmt == "pcap" else pcapng_copy(CAPTURE, tmp_path / "capture.pcapng")
    data = CONTAINERS[container](plain.read_bytes())
    packed = tmp_path / f"capture.{fmt}.{container}"
    packed.write_bytes(data)
    for args in (("read", "--json"), ("stats", "--json"), ("show", "--exchange", "17", "--json"), ("records", "--json")):
        from_file = kdissect(args[0], packed, *args[1:])
        from_pipe = kdissect(args[0], "-", *args[1:], stdin=data)
        assert from_file.returncode == from_pipe.returncode == 0, from_pipe.stderr
        assert from_pipe.stdout == from_file.stdout and from_pipe.stdout
    title = kdissect("read", "-", stdin=data).stdout.decode().splitlines()[0]
    assert title.startswith("standard input  " + fmt)


WRITERS = {
    "tcpdump": ["tcpdump", "-r", str(CAPTURE), "-w", "-"],
    "tshark-pcapng": ["tshark", "-r", str(CAPTURE), "-F", "pcapng", "-w", "-"],
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_the_pipe_of_a_real_capture_tool(writer):
    """`tcpdump -w - | kdissect read -` with the tools themselves writing the pipe (tshark writes pcapng): the same
    exchanges as the file, through an OS pipe between two processes."""
    command = WRITERS[writer]
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed")
    tool = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    done = subprocess.run(
        [sys.executable, "-c", SHIM, "read", "-", "--json"], stdin=tool.stdout, capture_output=True, timeout=300, check=False, cwd=ROOT
    )
    tool.stdout.close()
    assert tool.wait(timeout=60) == 0 and done.returncode == 0, done.stderr
    assert ndjson(done) == ndjson(kdissect("read", CAPTURE, "--json")) != []


def test_a_fifo_is_read_as_it_comes(tmp_path):
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(gzip.compress(CAPTURE.read_bytes()))

    writer = threading.Thread(target=feed)
    writer.start()
    done = kdissect("read", fifo, "--json")
    writer.join()
    assert done.returncode == 0 and done.stdout == kdissect("read", CAPTURE, "--json").stdout


def test_a_cut_pipe_says_what_a_cut_file_says(tmp_path):
    cut = CAPTURE.read_bytes()[:20000]
    (tmp_path / "cut.pcap").write_bytes(cut)
    from_file = kdissect("read", tmp_path / "cut.pcap", "--json", "--all-events")
    from_pipe = kdissect("read", "-", "--json", "--all-events", stdin=cut)
    assert from_pipe.stdout == from_file.stdout
    assert from_pipe.returncode == from_file.returncode == 1
    assert b"the capture is damaged (pcap.truncated)" in from_pipe.stderr
    text = kdissect("read", "-", stdin=cut)
    assert b"pcap.truncated" in text.stdout and b"the file ends inside packet" in text.stdout
    bad = kdissect("read", "-", stdin=b"not a capture at all")
    assert bad.returncode == 2
    assert bad.stderr.decode() == "kdissect: error: standard input: not a pcap or pcapng capture (it starts with 6e 6f 74 20)\n"


# -- Ctrl-C ----------------------------------------------------------------------------------------------------


def test_ctrl_c_flushes_what_was_decoded_and_exits_130(many_connections):
    process = subprocess.Popen([sys.executable, "-c", SHIM, "read", str(many_connections)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.readline()  # the title: it is reading
    process.stdout.readline()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130
    text = out.decode()
    assert "Flows" in text and "run.interrupted" in text and "interrupted (SIGINT) after packet" in text
    assert err.decode().startswith("kdissect: interrupted after packet ") and err.decode().endswith(": the output is partial\n")
    packets = int(err.decode().split("after packet ")[1].split(":")[0])
    whole = kdissect("read", many_connections, "-q").stdout.decode()
    assert f"packets      {packets} (" in text and f"packets      {packets} (" not in whole  # it stopped early


def test_ctrl_c_leaves_the_partial_tables_in_a_redirected_file(many_connections, tmp_path):
    """`kdissect stats big.pcap > st.txt`, interrupted: st.txt holds the tables of what was read, marked partial."""
    target = tmp_path / "st.txt"
    with open(target, "w") as out:
        process = subprocess.Popen([sys.executable, "-c", SHIM, "stats", str(many_connections)], stdout=out, stderr=subprocess.PIPE)
        interrupt_while_reading(process, many_connections)
        _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    text = target.read_text()
    assert text.startswith("APIs") and "Consumer groups" in text and "run.interrupted" in text
    assert b"the output is partial" in err


def interrupt_while_reading(process: subprocess.Popen, path: Path) -> None:
    """Ctrl-C once the process has read the first 3 MiB of the capture at `path` (or after a minute)."""
    deadline = time.monotonic() + 60
    while not _reading(process.pid, path) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)


def _reading(pid: int, path: Path) -> bool:
    """Whether process `pid` has read the first 3 MiB of the capture (its first hundred conversations), so that a
    signal now interrupts the reading with consumer groups already seen."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                pos = int(Path(f"/proc/{pid}/fdinfo/{fd}").read_text().split()[1])
                return pos > 3 << 20
    except OSError:
        pass
    return False


# -- options ---------------------------------------------------------------------------------------------------


def test_dash_r_names_the_capture_as_tshark_does():
    assert kdissect("read", "-r", CAPTURE, "--json").stdout == kdissect("read", CAPTURE, "--json").stdout


def test_count_stops_after_n_exchanges_the_filters_let_through():
    first = ndjson(kdissect("read", CAPTURE, "--json", "-c", "3", "--api", "Heartbeat"))
    every = [e for e in ndjson(kdissect("read", CAPTURE, "--json")) if e["api_name"] == "Heartbeat"]
    assert [e["id"] for e in first] == [e["id"] for e in every[:3]]
    text = kdissect("read", CAPTURE, "-c", "2").stdout.decode()
    rows = [line for line in text.splitlines() if line[:6].strip().isdigit() and " v" in line]
    assert len(rows) == 2 and "run.count" in text and "stopped after 2 exchanges" in text
    assert len(ndjson(kdissect("show", CAPTURE, "--api", "JoinGroup", "-c", "1", "--json"))) == 1
    assert len(kdissect("records", TRANSACTIONS, "-c", "4", "-f", "%o\n").stdout.splitlines()) == 4


def test_capital_v_prints_each_exchange_in_full_and_q_the_summary_only():
    detail = kdissect("read", CAPTURE, "-V", "--api", "JoinGroup", "-c", "1").stdout.decode()
    assert detail.splitlines()[1].startswith("Exchange 15  JoinGroup v7") and "├── Request" in detail
    assert kdissect("show", CAPTURE, "-V", "--exchange", "15").stdout.decode().startswith("Exchange 15  JoinGroup v7")
    quiet = kdissect("read", CAPTURE, "-q").stdout.decode()
    assert "completed (UTC)" not in quiet and quiet.splitlines()[2].startswith("time ") and "Flows" in quiet
    assert "completed (UTC)" in kdissect("read", CAPTURE).stdout.decode()
    assert ndjson(kdissect("read", CAPTURE, "-q", "--json")) == ndjson(kdissect("read", CAPTURE, "--json"))
    assert kdissect("read", CAPTURE, "--version", "4").stdout == kdissect("read", CAPTURE, "--version=4").stdout


def test_every_list_option_takes_commas_and_repeats():
    every = ndjson(kdissect("read", CAPTURE, "--json"))
    topics = {t for e in every for t in e["topics"]}
    assert topics, "the capture names topics"
    name = sorted(topics)[0]
    by_comma = ndjson(kdissect("read", CAPTURE, "--json", "--topic", f"{name},no-such-topic"))
    assert by_comma and by_comma == ndjson(kdissect("read", CAPTURE, "--json", "--topic", name, "--topic", "no-such-topic"))
    assert by_comma == [e for e in every if name in e["topics"]]
    apis = ndjson(kdissect("read", CAPTURE, "--json", "--api", "JoinGroup", "--api", "SyncGroup,Heartbeat"))
    assert {e["api_name"] for e in apis} == {"JoinGroup", "SyncGroup", "Heartbeat"}
    clients = sorted({e["client_id"] for e in every})
    assert ndjson(kdissect("read", CAPTURE, "--json", "--client-id", ",".join(clients[:2]))) == [
        e for e in every if e["client_id"] in clients[:2]
    ]
    assert kdissect("read", CAPTURE, "--json", "-p", "9092,9093").stdout == kdissect("read", CAPTURE, "--json").stdout
    assert ndjson(kdissect("show", CAPTURE, "--exchange", "15,17", "--json")) == [e for e in every if e["id"] in (15, 17)]


def test_min_latency_keeps_the_requests_never_answered():
    every = ndjson(kdissect("read", ROOT / "captures" / "consumer-group-confluent.pcap", "--json"))
    slow = ndjson(kdissect("read", ROOT / "captures" / "consumer-group-confluent.pcap", "--json", "--min-latency", "1000"))
    assert any(e["status"] == "unanswered" for e in every)
    assert slow == [e for e in every if e["status"] == "unanswered" or (e["latency_ms"] or 0) >= 1000]


@pytest.mark.parametrize("command", ["read", "show", "stats", "records", "live", "spark"])
def test_help_is_grouped_and_names_values_for_people(command):
    text = kdissect(command, "--help").stdout.decode()
    assert "<" not in text and "list[" not in text and "[x>=" not in text
    for section in ("Input:", "Filters:", "Output:") if command != "spark" else ("Input:", "Filters:"):
        assert section in text, section
    if command in ("read", "show", "stats", "records"):
        assert "-r, --read-file FILE" in text and "-c, --count N" in text and "--api API,..." in text


def test_one_meaning_per_short_option_across_commands():
    from typer.main import get_command

    from kdissect.cli import app

    meanings: dict[str, set[str]] = {}
    for command in get_command(app).commands.values():
        for param in command.params:
            for opt in param.opts:
                if len(opt) == 2:
                    meanings.setdefault(opt, set()).add(param.name)
    assert {opt: names for opt, names in meanings.items() if len(names) > 1} == {}
    wanted = {"-e": "field", "-c": "count", "-V": "detail", "-q": "quiet", "-r": "read_file", "-x": "hexdump", "-Y": "filter"}
    assert {opt: meanings[opt] for opt in wanted} == {opt: {name} for opt, name in wanted.items()}


def test_bare_kdissect_prints_its_help_and_completion_can_be_installed():
    bare = kdissect()
    assert bare.returncode == 0 and bare.stdout.decode().startswith("Usage: kdissect") and not bare.stderr
    assert b"--install-completion" in bare.stdout
    env = {**os.environ, "_KDISSECT_COMPLETE": "complete_bash", "COMP_WORDS": "kdissect re", "COMP_CWORD": "1"}
    assert kdissect(env=env).stdout.decode().split() == ["read", "report", "records"]
    env = {**os.environ, "_KDISSECT_COMPLETE": "complete_bash", "COMP_WORDS": "kdissect read --min", "COMP_CWORD": "2"}
    assert kdissect(env=env).stdout.decode().split() == ["--min-latency"]


# -- kdissect records ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", MANIFESTED, ids=lambda p: p.stem)
def test_records_are_what_the_clients_produced_and_consumed(path):
    """Every record the rig's clients produced and consumed (their manifest) is a line of `records --json`, with
    the offset the broker assigned; transaction markers are never among them."""
    manifest = [json.loads(line) for line in path.with_suffix(".manifest.jsonl").read_text().splitlines()]
    keylog = path.with_suffix(".keylog")  # a TLS capture's key log
    keys = ("--tls-keylog", keylog) if keylog.exists() else ()
    streamed = ndjson(kdissect("records", path, "--json", *keys))
    assert all(r["type"] == "record" for r in streamed)
    for kind, direction in (("produced", "produce"), ("consumed", "fetch")):
        lines = [r for r in streamed if r["direction"] == direction]
        assert lines == ndjson(kdissect("records", path, "--json", "--direction", direction, *keys))
        for entry in (e for e in manifest if e["kind"] == kind):
            if entry.get("error") and entry["topic"] not in {r["topic"] for r in lines}:
                continue  # a failed send whose topic no Produce request names never left the client (no such topic)
            found = [
                r
                for r in lines
                if r["topic"] == entry["topic"]
                and decode_bytes(r["key"]) == decode_bytes(entry["key"])
                and decode_bytes(r["value"]) == decode_bytes(entry["value"])
                and [(h["key"], decode_bytes(h["value"])) for h in r["headers"]] == [(k, decode_bytes(v)) for k, v in entry["headers"]]
            ]
            assert found, f"{kind} record missing: {entry}"
            if entry["offset"] is not None and entry.get("partition") is not None:
                assert (entry["partition"], entry["offset"]) in {(r["partition"], r["offset"]) for r in found}, entry


def test_records_format_strings_write_keys_and_values_as_sent():
    codecs = ROOT / "captures" / "produce-codecs-confluent.pcap"
    lines = kdissect("records", codecs, "--direction", "produce", "-f", "%t|%p|%o|%K|%S|%k|%h\\n")
    binary = [line for line in lines.stdout.split(b"\n") if b"\xff\x00\xfe" in line]
    assert binary and binary[0].split(b"|")[3] == b"6"  # the key's six bytes, raw
    assert kdissect("records", TRANSACTIONS, "-f", "%%%d %e\\t%T\\n", "-c", "1").stdout == b"%produce 10\t1700000000000\n"


def test_fetched_record_counts_leave_transaction_markers_out():
    """produce-transactions fetches 3 transactions' records (and their 3 markers) twice, read_committed and
    read_uncommitted: 12 records, as the consumers' manifest says."""
    manifest = [json.loads(line) for line in TRANSACTIONS.with_suffix(".manifest.jsonl").read_text().splitlines()]
    consumed = [e for e in manifest if e["kind"] == "consumed" and e["topic"] == "txn"]
    tables = {t["table"]: t["rows"] for t in ndjson(kdissect("stats", TRANSACTIONS, "--json")) if t["type"] == "stats"}  # then the verdict
    txn = next(r for r in tables["topics"] if r["topic"] == "txn")
    fetched = [r for r in ndjson(kdissect("records", TRANSACTIONS, "--json", "--direction", "fetch")) if r["topic"] == "txn"]
    assert txn["fetched_records"] == len(fetched) == len(consumed) == 12
