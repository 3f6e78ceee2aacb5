"""`kdissect anonymize`: the capture with its owner's data, names, addresses and secrets replaced (rewrite/)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kdissect.commands.options import Common, OutputError, UserError, takes
from kdissect.commands.reading import open_source


@takes("capture", "input")
def anonymize(
    common: Common,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="The anonymized capture (.pcap or .pcapng, and .gz, .zst or .lz4 to compress it).",
            rich_help_panel="Output",
            show_default=False,
        ),
    ] = None,
    mapping: Annotated[
        Optional[Path],
        typer.Option(
            "--mapping",
            metavar="FILE",
            help="Where the mapping from names and addresses to pseudonyms goes, for the capture's owner (default: the "
            "output's name with .mapping.json).",
            rich_help_panel="Output",
            show_default=False,
        ),
    ] = None,
    drop_values: Annotated[
        bool,
        typer.Option(
            "--drop-values", help="Empty record keys, values and header values instead of filling them.", rich_help_panel="Output"
        ),
    ] = False,
) -> None:
    """Write the capture again with nothing of its owner's in it: record keys, values and header values filled (or
    emptied), client ids, topics, groups, transactional ids, members, principals and hosts mapped to pseudonyms,
    addresses renumbered, SASL exchanges and secrets removed, TLS connections in the clear (or left out without
    their keys), every checksum and CRC made right."""
    from kdissect.capture.destination import CaptureDestination, DestinationError, format_of
    from kdissect.capture.source import STDIN
    from kdissect.rewrite.anonymize import anonymize as run
    from kdissect.views.anonymized import print_anonymized
    from kdissect.views.console import make_console

    if output is None:
        raise UserError("say where the anonymized capture goes: -o FILE.pcap")
    try:
        format_of(str(output))
    except DestinationError as exc:
        raise UserError(f"-o {exc}") from None
    captures = common.captures
    if STDIN in captures:
        raise UserError("anonymize reads the capture twice: give a capture file, not standard input")
    if output.exists() and any(Path(c).exists() and output.samefile(c) for c in captures):
        raise UserError(f"-o {output}: that is a capture being read; name another file")
    mapping = mapping or output.with_name(output.name + ".mapping.json")
    with open_source(captures):
        pass  # a capture that cannot be opened is told now, in one line
    try:
        with CaptureDestination(output) as destination:
            report = run(lambda: open_source(captures), common.options, destination.write, drop_values)
        mapping.write_text(json.dumps(report.names.mapping(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except (DestinationError, OSError) as exc:
        raise OutputError(str(exc)) from None
    facts = (
        ("packets", report.packets),
        ("Kafka connections", report.connections),
        ("exchanges", report.exchanges),
        ("SASL exchanges removed", report.sasl_removed),
        ("TLS connections written in the clear", report.tls_in_the_clear),
        ("TLS connections left out: no key opened them", report.tls_left_out),
        ("connections left out: not Kafka", report.other_connections),
        ("frames left out: the capture holds only part of them", report.incomplete_frames),
    )
    print_anonymized(make_console(sys.stdout), str(output), facts, report.names.mapping(), str(mapping))
