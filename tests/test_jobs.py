"""`read --jobs 2` writes what one process writes, byte for byte, exit status and warnings included: every
capture of real clients, in every output form, with filters, and a crafted capture whose connections interleave
packet by packet, one of them naming on its own connection the topic ids the others use."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kdissect.capture.linktypes import LINKTYPE_ETHERNET
from kdissect.capture.writer import PcapWriter
from kdissect.cli import main
from kdissect.commands import jobs
from kdissect.events.headers import RequestHeader
from kdissect.schema import BUILTIN
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = sorted(
    p for folder in (ROOT / "captures", ROOT.parent / "shared" / "captures-public") for p in folder.glob("*.pcap*") if p.is_file()
)
FORMS = {
    "json": ["--json"],
    "text": [],
    "fields": ["-T", "fields", "-e", "id", "-e", "api", "-e", "topic", "-e", "error", "-E", "header=y"],
    "quiet-filtered": ["-q", "-Y", "api == Fetch or error"],
    "json-filtered": ["--json", "--all-events", "--api", "Produce,Metadata,JoinGroup"],
    "count": ["-c", "7", "--errors"],
    "detail": ["-V", "-c", "30"],
}


STARTED: list[int] = []


@pytest.fixture(autouse=True)
def split_small(monkeypatch):
    """Every capture here is small: split it anyway (and note each time workers start)."""
    monkeypatch.setattr(jobs, "SPLIT_BYTES", 0)
    start = jobs.Workers.start

    def counted(self, *args):
        STARTED.append(self.n)
        return start(self, *args)

    monkeypatch.setattr(jobs.Workers, "start", counted)


def run(capsys, tmp_path: Path, capture: Path, args: list[str], n: int) -> tuple[int, bytes, str]:
    out = tmp_path / f"out-{n}"
    keylog = capture.with_suffix(".keylog")
    extra = ["--tls-keylog", str(keylog)] if keylog.exists() else []
    with pytest.raises(SystemExit) as exit:
        main(["read", str(capture), *args, *extra, "--jobs", str(n), "-o", str(out)])
    return exit.value.code, out.read_bytes(), capsys.readouterr().err


def same(capsys, tmp_path: Path, capture: Path, args: list[str]) -> bytes:
    STARTED.clear()
    one = run(capsys, tmp_path, capture, args, 1)
    assert not STARTED
    two = run(capsys, tmp_path, capture, args, 2)
    assert STARTED == [2]
    assert two[0] == one[0]
    assert two[2] == one[2]
    assert two[1] == one[1]
    return one[1]


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
@pytest.mark.parametrize("form", FORMS)
def test_two_processes_write_what_one_writes(capsys, tmp_path, capture, form):
    same(capsys, tmp_path, capture, FORMS[form])


def test_jobs_0_takes_the_cores_available(capsys, tmp_path):
    capture = ROOT / "captures" / "consumer-group-confluent.pcap"
    STARTED.clear()
    zero = run(capsys, tmp_path, capture, ["--json"], 0)
    assert STARTED == ([jobs.available()] if jobs.available() > 1 else [])
    assert zero == run(capsys, tmp_path, capture, ["--json"], 1)


def test_a_capture_is_read_by_one_process_below_the_threshold(monkeypatch, tmp_path):
    capture = ROOT / "captures" / "consumer-group-confluent.pcap"
    assert jobs.splits(str(capture), 2) == 2
    monkeypatch.setattr(jobs, "SPLIT_BYTES", capture.stat().st_size + 1)
    assert jobs.splits(str(capture), 2) == 1
    assert jobs.splits("-", 2) == 1


METADATA, FETCH, PRODUCE, LIST_OFFSETS = 3, 1, 0, 2


def interleaved(path: Path) -> Path:
    """Five connections sending at once, packet by packet; connection 1 learns the topic id the Fetches of the
    others name it by; the last request of each is never answered (settled when the capture ends)."""
    topic_id = str(uuid.UUID(int=0xC0FFEE))
    clock = Clock()
    conversations = [Conversation(client_port=41000 + i, clock=clock) for i in range(5)]
    calls = [[(METADATA, 12, {"Topics": None}, {"Topics": [{"Name": "orders", "TopicId": topic_id}]})]]
    fetch = (
        FETCH,
        13,
        {"Topics": [{"TopicId": topic_id, "Partitions": [{"Partition": 0}]}]},
        {"Responses": [{"TopicId": topic_id, "Partitions": [{"PartitionIndex": 0, "ErrorCode": 6}]}]},
    )
    offsets = (LIST_OFFSETS, 7, {"Topics": [{"Name": "orders", "Partitions": [{"PartitionIndex": 0}]}]}, {"Topics": []})
    calls += [[fetch, offsets, fetch] for _ in conversations[1:]]
    streams = []
    for conv, mine in zip(conversations, calls):
        steps = [conv.handshake]
        for correlation, (key, version, req, resp) in enumerate(mine, 1):
            steps.append(_sending(conv, CLIENT, request(key, version, correlation, encode_body(key, version, "request", req))))
            if correlation < len(mine) or conv is conversations[0]:
                header = 1 if BUILTIN.is_flexible(key, version) else 0
                steps.append(_sending(conv, SERVER, response(correlation, encode_body(key, version, "response", resp), header)))
        streams.append(steps)
    ordered = []
    while any(streams):  # one step of each connection in turn: their packets and exchanges interleave
        for steps in streams:
            if steps:
                ordered += steps.pop(0)()
    with open(path, "wb") as f:
        PcapWriter(f, LINKTYPE_ETHERNET).write_all(ordered)
    return path


def _sending(conv: Conversation, side: int, frame: bytes):
    """A step of a conversation: the frame in 40-byte segments, made when the step is taken (sequence numbers)."""
    return lambda: conv.send(side, frame, 40)


@pytest.mark.parametrize("form", FORMS)
def test_interleaved_connections_and_topic_ids_learnt_on_another(capsys, tmp_path, form):
    capture = interleaved(tmp_path / "interleaved.pcap")
    out = same(capsys, tmp_path, capture, FORMS[form])
    if form == "json":
        assert out.count(b'"TopicId":"orders"') >= 8  # named on connections other than the one that learnt it
        assert b'"status":"unanswered"' in out


def one_connection(path: Path, exchanges: int) -> Path:
    """One client asking for metadata again and again: a single connection to share."""
    conv = Conversation(client_port=41000, clock=Clock())
    packets = conv.handshake()
    for correlation in range(1, exchanges + 1):
        packets += conv.send(CLIENT, request(METADATA, 12, correlation, encode_body(METADATA, 12, "request", {"Topics": None})), 40)
        body = encode_body(METADATA, 12, "response", {"Topics": [{"Name": f"t{correlation}", "TopicId": str(uuid.UUID(int=correlation))}]})
        packets += conv.send(SERVER, response(correlation, body, 1), 40)
    with open(path, "wb") as f:
        PcapWriter(f, LINKTYPE_ETHERNET).write_all(packets)
    return path


@pytest.mark.parametrize("form", ["json", "text"])
def test_the_exchanges_of_one_connection_are_shared(monkeypatch, capsys, tmp_path, form):
    settled = []
    merge = jobs.Workers.merge

    def counted(self, events):
        for event in merge(self, events):
            settled.append(type(event).__name__ == "Settled")
            yield event

    monkeypatch.setattr(jobs.Workers, "merge", counted)
    same(capsys, tmp_path, one_connection(tmp_path / "one.pcap", 200), FORMS[form])
    assert 60 <= sum(settled) <= 140  # the second process wrote about half of the 200


def test_owners_are_even_whatever_the_correlation_ids_do():
    """Clients number their requests 1, 2, 3 ... or alternate two APIs: either way every process gets its share,
    of each API too."""

    class Sent:
        def __init__(self, correlation):
            self.header = RequestHeader(0, 0, correlation, None, 1, 10)

    for n in (2, 3):
        for stride in (1, 2, 3):
            counts = [0] * n
            for connection in (1, 2, 7):
                for correlation in range(0, 3000 * stride, stride):
                    counts[jobs.owner(connection, Sent(correlation), n)] += 1
            assert all(abs(c - 9000 / n) < 9000 / n * 0.1 for c in counts), (n, stride, counts)
    assert jobs.owner(3, None, 2) == 0  # an orphan response: every process decoded it, the first writes it


# -- the habits of one process: Ctrl-C, a closed pipe ---------------------------------------------------------

SHIM = "import sys; from kdissect.cli import main; main(sys.argv[1:])"


def gone(group: int) -> bool:
    """Whether every process of the group has ended."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


def test_ctrl_c_at_the_terminal_reaches_every_process_and_the_first_writes_what_it_has(many_connections):
    """A terminal's Ctrl-C goes to the whole process group: the workers leave the decision to the first process,
    which writes the tables of what it read, marked partial, and exits 130 with no worker left behind."""
    assert many_connections.stat().st_size >= jobs.SPLIT_BYTES
    command = [sys.executable, "-c", SHIM, "read", str(many_connections), "--jobs", "2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    process.stdout.readline()  # the title
    process.stdout.readline()  # the first row: the workers are running
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "run.interrupted" in out.decode() and "Flows" in out.decode()
    assert err.decode().startswith("kdissect: interrupted after packet ")
    assert gone(process.pid)


ORPHANED = """
import ctypes, os, signal, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: a worker whose parent dies becomes this process's child
first = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
children = []
while not children and first.poll() is None:
    children = open(f"/proc/{first.pid}/task/{first.pid}/children").read().split()
    time.sleep(0.01)
os.kill(first.pid, signal.SIGKILL)
first.wait()
_, status = os.waitpid(int(children[0]), 0)
print(signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status))
"""
"""Starts the command given, SIGKILLs it as soon as it has forked a worker, and prints how that worker ended."""


@pytest.mark.parametrize("command", [["read", "--json"], ["tables", "--quiet", "--out"]], ids=["read", "tables"])
def test_a_worker_ends_at_once_when_the_first_process_is_killed(many_connections, tmp_path, command):
    """The first process SIGKILLed (the OOM killer): the kernel ends its workers with SIGTERM, before they read on
    to the end of their share (a tables worker would otherwise write its Parquet files for nobody, and only then
    find its pipe closed)."""
    args = [*command, str(tmp_path / "t")] if command[0] == "tables" else command
    kdissect = [sys.executable, "-c", SHIM, args[0], str(many_connections), *args[1:], "--jobs", "2"]
    done = subprocess.run([sys.executable, "-c", ORPHANED, *kdissect], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "SIGTERM", done.stderr


def test_a_closed_pipe_ends_every_process_quietly(many_connections):
    command = [sys.executable, "-c", SHIM, "read", str(many_connections), "--json", "--jobs", "2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert process.stdout.readline().startswith(b'{"type":"exchange"')
    process.stdout.close()  # `| head -1`
    assert process.wait(timeout=120) == 0
    assert process.stderr.read() == b""
    assert gone(process.pid)
