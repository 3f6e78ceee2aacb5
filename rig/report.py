"""Summaries of the corpus: re-check captures and print the table of captures/README.md.

python -m rig check            # every capture whole and agreeing with its manifest
python -m rig table            # the markdown table, from the files themselves
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rig import pcapinfo
from rig.manifest import Manifest
from rig.run import CAPTURES, capture_path, check, check_tls, twin_path
from rig.scenarios import Scenario


def captured(registry: dict[str, Scenario], out: Path = CAPTURES) -> list[Scenario]:
    return [sc for sc in registry.values() if capture_path(sc, out).exists()]


def check_all(registry: dict[str, Scenario], out: Path = CAPTURES) -> int:
    failed = 0
    for sc in captured(registry, out):
        lines = Manifest(str(out / f"{sc.name}.manifest.jsonl")).read()
        port = lines[0]["broker"]["port"] if lines else 9092
        try:
            if sc.tls:
                s = check_tls(sc, out, lines[0]["tls"]["port"], port)
            else:
                s = check(sc, out / f"{sc.name}.pcap", out / f"{sc.name}.manifest.jsonl", port)
            print(f"ok   {sc.name}: {s.packets} packets, {sum(s.requests.values())} requests")
        except Exception as exc:
            failed += 1
            print(f"FAIL {sc.name}: {exc}")
    return 1 if failed else 0


def _notes(lines: list[dict], summary: pcapinfo.Summary) -> str:
    notes = []
    errors = Counter()
    for line in lines:
        result = line.get("result") if line["kind"] == "op" else line.get("error")
        if result and result != "ok":
            errors[f"{line.get('op', 'produce')}: {result.split(':')[0]}"] += 1
    notes += [f"{text}" + (f" x{n}" if n > 1 else "") for text, n in sorted(errors.items())]
    if summary.unanswered_at_close:
        notes.append("no reply before close: " + ", ".join(f"{pcapinfo.api_name(k)} v{v}" for k, v, _ in summary.unanswered_at_close))
    if summary.max_segments_per_frame > 1:
        notes.append(f"frames up to {summary.max_frame} B over {summary.max_segments_per_frame} segments")
    return "; ".join(notes)


def _tls_note(head: dict) -> str:
    """A TLS capture: what stunnel negotiated, where the keys are, and its plaintext twin (whose Kafka the row counts)."""
    tls = head.get("tls")
    if not tls:
        return ""
    chosen = tls["ciphersuites"] or tls["ciphers"]
    keys = f"key log {tls['keylog']}" if tls["keylog"] else "secrets embedded (pcapng)"
    return f"{tls['versions'][1]} {chosen}; {keys}; plaintext twin {tls['plaintext_twin']}"


def table(registry: dict[str, Scenario], out: Path = CAPTURES) -> str:
    rows = [
        "| file | bytes | scenario | clients | link | API key(version)s seen (requests) | "
        "batches seen (requests + responses) | records p/c | notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for sc in captured(registry, out):
        pcap = capture_path(sc, out)
        lines = Manifest(str(out / f"{sc.name}.manifest.jsonl")).read()
        head = lines[0]
        summary = pcapinfo.summarize(str(twin_path(sc, out) if sc.tls else pcap), head["broker"]["port"])
        clients = sorted({line["client"] for line in lines[1:] if "client" in line})
        link = f"{summary.linktype}" + (" ns" if summary.nano else "") + (f", MTU {head['mtu']}" if head.get("mtu") else "")
        codecs = ", ".join(f"{k} x{n}" for k, n in sorted(summary.codecs().items())) or "-"
        produced = sum(1 for line in lines if line["kind"] == "produced")
        consumed = sum(1 for line in lines if line["kind"] == "consumed")
        rows.append(
            " | ".join(
                [
                    f"| {pcap.name}",
                    str(pcap.stat().st_size),
                    sc.title,
                    "<br>".join(clients),
                    link,
                    summary.api_table(),
                    codecs,
                    f"{produced}/{consumed}",
                    "; ".join(filter(None, [_tls_note(head), _notes(lines, summary)])) + " |",
                ]
            )
        )
    return "\n".join(rows)
