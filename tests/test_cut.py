"""`-w FILE` (issue 30): a cut of a capture reads back as exactly the exchanges chosen, paired as before.

Every capture of captures/ (and the public ones when present) is cut by three display filters, each choosing some
exchanges of most connections, so that packets carrying a chosen and an unchosen frame are common: the cut must read
back, with the same key log, as the same exchanges (endpoints, correlation ids, APIs, versions, statuses, diagnostics,
latencies) and nothing else, with no new damage. TLS connections are cut record by record and sealed again at their
new sequence numbers: the same key log opens them. tshark, when installed, must find no malformed packet and no lost
or unseen segment the original did not have.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.capture import Packet, open_capture
from kdissect.capture.destination import CaptureDestination
from kdissect.capture.writer import pcap_bytes
from kdissect.dissector import Options, file_dissector
from kdissect.events import Exchange, Notice
from kdissect.filter import compile_filter
from kdissect.limits import DEFAULT_LIMITS
from kdissect.rewrite.cut import Selection, cut_into
from kdissect.schema import BUILTIN, ApiKey
from kdissect.testing import craft
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER
from tests.test_cli import kdissect
from tests.test_cli_habits import SHIM, interrupt_while_reading

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT.parent / "shared" / "captures-public"
CAPTURES = sorted((ROOT / "captures").glob("*.pcap*")) + sorted(PUBLIC.glob("*.pcap*"))
FILTERS = (
    "correlation_id in {2, 3, 5, 8, 13, 21, 34}",
    "api in {Fetch, Produce, Metadata, JoinGroup, SyncGroup}",
    "not (api == ApiVersions or api == Metadata)",
)
"""Three ways to choose: a few exchanges of every connection, the busy APIs, everything but the start of each."""


def keylog_of(path: Path) -> bytes:
    keylog = path.with_suffix(".keylog")
    return keylog.read_bytes() if keylog.exists() else b""


def events(path: Path | str, keylog: bytes) -> list:
    with open_capture(path) as capture:
        return list(file_dissector(capture, Options(tls_keylog=keylog)).run(capture.packets()))


def facts(exchange: Exchange) -> tuple:
    """What a cut must keep of an exchange: everything but its number and its packets' numbers."""
    info = exchange.connection
    return (
        str(info.client),
        str(info.broker),
        exchange.correlation_id,
        exchange.api_key,
        exchange.api_version,
        exchange.status,
        exchange.latency,
        tuple(sorted(d.code for d in exchange.diagnostics)),
    )


def cut(path: Path, chosen: list[Exchange], out: Path, keylog: bytes) -> None:
    selection = Selection()
    for exchange in chosen:
        selection.add(exchange)
    with open_capture(path) as capture:
        cut_into(out, capture, selection, DEFAULT_LIMITS, keylog)


def damage(found: list) -> set[str]:
    return {e.diagnostic.code for e in found if isinstance(e, Notice) and e.diagnostic.severity == "error"}


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_a_cut_reads_back_as_exactly_the_exchanges_chosen(path, tmp_path):
    keylog = keylog_of(path)
    original = events(path, keylog)
    exchanges = [e for e in original if isinstance(e, Exchange)]
    tried = 0
    for expression in FILTERS:
        wanted = compile_filter([("-Y", expression)], BUILTIN)
        chosen = [e for e in exchanges if wanted.matches(e)]
        out = tmp_path / ("cut.pcapng" if path.suffix == ".pcapng" else "cut.pcap")
        cut(path, chosen, out, keylog)
        back = events(out, keylog)
        assert sorted(facts(e) for e in back if isinstance(e, Exchange)) == sorted(map(facts, chosen)), expression
        assert damage(back) <= damage(original), expression
        tried += 0 < len(chosen) < len(exchanges)
    assert tried or len(exchanges) < 3, "some filter must choose part of the capture"


def test_a_cut_of_everything_keeps_the_packets_as_captured(tmp_path):
    """Nothing cut out, nothing rewritten: the kept packets are the captured ones, byte for byte (the bare ACKs in the
    middle of each conversation are all that is left out)."""
    path = ROOT / "captures" / "consumer-group-confluent.pcap"
    exchanges = [e for e in events(path, b"") if isinstance(e, Exchange)]
    cut(path, exchanges, tmp_path / "all.pcap", b"")
    with open_capture(path) as capture:
        captured = {(p.ts, p.data) for p in capture.packets()}
    with open_capture(tmp_path / "all.pcap") as capture:
        kept = [(p.ts, p.data) for p in capture.packets()]
    assert kept and all(p in captured for p in kept)
    assert len(kept) < len(captured)


def conversation() -> list[Packet]:
    """Three ApiVersions v0 exchanges; the first two requests share a segment, and so do their responses."""
    talk = craft.Conversation()
    body = encode_body(ApiKey.API_VERSIONS, 0, "response", {"ErrorCode": 0, "ApiKeys": []})
    requests = [craft.request(ApiKey.API_VERSIONS, 0, n) for n in (1, 2, 3)]
    responses = [craft.response(n, body) for n in (1, 2, 3)]
    return [
        *talk.handshake(),
        *talk.send(CLIENT, requests[0] + requests[1]),
        *talk.send(SERVER, responses[0] + responses[1]),
        *talk.send(CLIENT, requests[2]),
        *talk.send(SERVER, responses[2]),
        *talk.close(),
    ]


def test_a_packet_carrying_a_chosen_and_an_unchosen_frame_keeps_only_the_chosen_bytes(tmp_path):
    source = tmp_path / "three.pcap"
    source.write_bytes(pcap_bytes(conversation(), 1))
    exchanges = [e for e in events(source, b"") if isinstance(e, Exchange)]
    assert [e.correlation_id for e in exchanges] == [1, 2, 3]
    cut(source, [exchanges[0], exchanges[2]], tmp_path / "cut.pcap", b"")
    back = events(tmp_path / "cut.pcap", b"")
    assert [(e.correlation_id, e.status) for e in back if isinstance(e, Exchange)] == [(1, "ok"), (3, "ok")]
    assert not [e for e in back if isinstance(e, Notice)], "no gap, no skipped bytes: the stream is whole"
    with open_capture(tmp_path / "cut.pcap") as capture:
        packets = list(capture.packets())
    request_frames = [e.request.frame for e in back if isinstance(e, Exchange)]
    assert request_frames[1].offset == 4 + request_frames[0].size, "the third request follows the first at once"
    assert len(packets) == 3 + 4 + 3, "handshake, two requests and two responses, the close"


def test_cutting_a_tls_connection_seals_records_again_under_the_same_keys(tmp_path):
    path = ROOT / "captures" / "tls13-keyupdate-kafka-python.pcap"
    keylog = keylog_of(path)
    exchanges = [e for e in events(path, keylog) if isinstance(e, Exchange)]
    chosen = exchanges[1::3]
    cut(path, chosen, tmp_path / "cut.pcap", keylog)
    with open_capture(path) as capture:
        captured = {p.data for p in capture.packets()}
    with open_capture(tmp_path / "cut.pcap") as capture:
        written = [p.data for p in capture.packets()]
    assert any(data not in captured for data in written), "records after a dropped one are sealed anew"
    back = events(tmp_path / "cut.pcap", keylog)
    assert sorted(facts(e) for e in back if isinstance(e, Exchange)) == sorted(map(facts, chosen))
    assert not [e for e in back if isinstance(e, Notice)]
    assert not [e for e in events(tmp_path / "cut.pcap", b"") if isinstance(e, Exchange)], "without the key log nothing opens"


@pytest.mark.parametrize("name", ["a.pcap", "a.cap", "a.pcapng", "a.pcap.gz", "a.pcapng.zst", "a.pcap.lz4"])
def test_the_name_chooses_format_and_compression(name, tmp_path):
    with open_capture(ROOT / "captures" / "client-kcat.pcap") as capture:
        packets = list(capture.packets())
    with CaptureDestination(tmp_path / name) as destination:
        for packet in packets:
            destination.write(packet)
    with open_capture(tmp_path / name) as capture:
        back = list(capture.packets())
        assert capture.format == ("pcapng" if ".pcapng" in name else "pcap")
        assert capture.compression == {"gz": "gzip", "zst": "zstd", "lz4": "lz4"}.get(name.rsplit(".", 1)[1])
        assert not capture.diagnostics()
    assert [(p.ts, p.data, p.orig_len) for p in back] == [(p.ts, p.data, p.orig_len) for p in packets]


TSHARK = shutil.which("tshark")
WIRESHARK_TROUBLE = "_ws.malformed || tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment"


def tshark_count(path: Path) -> int:
    done = subprocess.run([TSHARK, "-r", str(path), "-Y", WIRESHARK_TROUBLE], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return len(done.stdout.splitlines())


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_wireshark_finds_nothing_new_wrong_in_a_cut(path, tmp_path):
    keylog = keylog_of(path)
    exchanges = [e for e in events(path, keylog) if isinstance(e, Exchange)]
    wanted = compile_filter([("-Y", FILTERS[0])], BUILTIN)
    out = tmp_path / ("cut.pcapng" if path.suffix == ".pcapng" else "cut.pcap")
    cut(path, [e for e in exchanges if wanted.matches(e)], out, keylog)
    assert tshark_count(out) <= tshark_count(path)


def read_back(path: Path, *args: object) -> list[str]:
    done = kdissect("read", path, "-T", "fields", "-e", "client", "-e", "correlation_id", "-e", "api", *args)
    assert done.returncode == 0, done.stderr
    return sorted(done.stdout.decode().splitlines())


@pytest.mark.parametrize(
    "command,shown",
    [
        (["read", "-Y", "api == JoinGroup"], "api == JoinGroup"),
        (["show", "--api", "SyncGroup"], "api == SyncGroup"),
        (["records", "--direction", "fetch"], None),
    ],
)
def test_every_reading_command_writes_what_it_showed(command, shown, tmp_path):
    capture = ROOT / "captures" / "consumer-group-kafka-python.pcap"
    out = tmp_path / "cut.pcapng.gz"
    done = kdissect(*command, capture, "-w", out, "-q")
    assert done.returncode == 0, done.stderr
    if shown is None:  # the exchanges whose records were printed
        printed = kdissect(*command, capture, "--json")
        ids = sorted({json.loads(line)["exchange"] for line in printed.stdout.decode().splitlines()})
        shown = f"id in {{{','.join(map(str, ids))}}}"
    assert read_back(out) == read_back(capture, "-Y", shown)


def test_doctor_writes_the_evidence_of_the_findings_chosen(tmp_path):
    capture = ROOT / "captures" / "doctor-member-removed.pcap"
    out = tmp_path / "evidence.pcap"
    done = kdissect("doctor", capture, "--finding", "group.member-removed", "-w", out, "--json")
    assert done.returncode == 0, done.stderr
    *findings, verdict = map(json.loads, done.stdout.decode().splitlines())
    assert findings and all(f["type"] == "finding" and f["id"] == "group.member-removed" for f in findings)
    assert verdict["type"] == "verdict" and verdict["verdict"].endswith(": group.member-removed")  # the verdict of what is told
    finding = findings[0]
    cut = read_back(out)
    assert len(cut) == finding["evidence"]["count"]
    ids = ",".join(map(str, finding["evidence"]["exchanges"]))
    assert read_back(capture, "-Y", f"id in {{{ids}}}") == cut


def test_an_interrupted_doctor_writes_no_evidence_and_says_so(many_connections, tmp_path):
    """Ctrl-C during `doctor -w`: the evidence would need a second reading of the whole capture; none is made."""
    out = tmp_path / "evidence.pcap"
    command = [sys.executable, "-c", SHIM, "doctor", str(many_connections), "-w", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    interrupt_while_reading(process, many_connections)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err.decode().endswith(f": the output is partial, and {out} was not written\n") and not out.exists()


@pytest.mark.parametrize(
    "args,says",
    [
        (["read", "-", "-w", "{out}/x.pcap"], "standard input"),
        (["read", "{capture}", "-w", "{out}/x.txt"], ".pcap or .pcapng"),
        (["read", "{capture}", "-w", "{capture}"], "a capture being read"),
        (["doctor", "{capture}", "--finding", "no.such", "-w", "{out}/x.pcap"], "no such finding"),
    ],
)
def test_mistakes_with_w_are_one_line(args, says, tmp_path):
    capture = ROOT / "captures" / "client-kcat.pcap"
    done = kdissect(*(a.format(out=tmp_path, capture=capture) for a in args), stdin=capture.read_bytes())
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr


def test_a_cut_of_a_capture_without_a_chosen_exchange_is_an_empty_capture(tmp_path):
    out = tmp_path / "none.pcap"
    done = kdissect("read", ROOT / "captures" / "client-kcat.pcap", "-Y", "api == DeleteAcls", "-w", out, "-q")
    assert done.returncode == 0, done.stderr
    with open_capture(out) as capture:
        assert list(capture.packets()) == []
