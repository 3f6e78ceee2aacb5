"""Where a command's results go: one `Output` per run, in the format chosen once from `-T` (or `--json`).

Every command writes through this protocol: a title, exchanges, records, stream notices and connection summaries,
the doctor's findings, and a closing with the totals and tables. A format is one class that says how each looks
(`FORMATS`: text for a person, json for scripts, fields and csv for awk and spreadsheets); what a command shows
is what it hands its output. A new format is one class (a subclass of `Output`) and one line in `FORMATS`.

Text from the wire (client ids, topics, record headers, a spec's names) reaches a terminal only through a format:
the text format escapes it and hands it to rich as `Text`, the fields formats escape separators and line breaks,
and JSON's encoder escapes what it must (`kdissect.printable`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # a command imports this module at start-up, before it reads anything: only names for the types
    from kdissect.decode.streamed import StreamedRecord
    from kdissect.diagnostic import Diagnostic
    from kdissect.doctor.engine import Report
    from kdissect.doctor.finding import Finding
    from kdissect.events import ConnectionEnd, Exchange, Notice
    from kdissect.kafka.shared import Counters
    from kdissect.schema import Catalog
    from kdissect.views.stats import Stats
    from kdissect.views.summary import Summary

COMMANDS = ("read", "show", "stats", "doctor", "records", "live", "schemas")


class FormatError(ValueError):
    """A format that does not go with the command or its options; one line for the user."""


@dataclass(frozen=True, slots=True)
class Title:
    """What a run reads: the capture's name and format, or the interface and link type of a live session."""

    name: str
    format: str
    compression: str | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a format needs to know about the run before the first item comes."""

    command: str
    """Which of `COMMANDS` writes: what an exchange is shown as (a row, a tree), what the closing holds."""
    catalog: Catalog
    quiet: bool = False
    """The summary only: no exchange rows (structured formats are unchanged)."""
    detail: bool = False
    """Each exchange in full (`read -V`, `show`): a tree of every field."""
    hexdump: bool = False
    """With `detail`, each field's bytes and each frame's dump (`show -x`)."""
    show_secrets: bool = False
    all_events: bool = False
    """Notices and connection summaries too, where the format writes them (`--all-events`)."""
    fields: tuple[Any, ...] = ()
    """-e: the `filter.Resolved` fields the fields formats write."""
    layout: Any = None
    """-E: the fields formats' `views.fields.Layout`."""
    record_format: str | None = None
    """`records -f`: kcat's format of a record's line."""
    record_decode: bool = False
    """`records --decode`: -f's %k and %s write decoded keys and values as JSON."""
    live: Any = None
    """A live session's capture (interface, link type, filter): the text format draws a screen updated in place."""
    capture: str = "FILE"
    """How the user named the capture: the doctor's "open one" lines repeat it."""
    header: bool = True
    """False for a `read --jobs` worker: its rows join the first process's, which writes the header."""
    everything: bool = False
    """`doctor --all`: info findings too (the structured formats always write every finding)."""
    values: Any = None
    """The run's `values.reader.ValueReader`: records' keys and values read for what they say (docs/values.md)."""


@dataclass(frozen=True, slots=True)
class Closing:
    """What a run ends with; each format writes the parts it shows, in this order."""

    summary: Summary | None = None
    """The totals, flows, errors and diagnostics of `read` and `live`."""
    counters: Counters | None = None
    linktypes: tuple[int, ...] = ()
    notes: tuple[Diagnostic, ...] = ()
    """Why the output is partial, and what was odd about the capture file."""
    stats: Stats | None = None
    """`stats`' tables."""
    report: Report | None = None
    """The doctor's report: its verdict ends every run that has one (`read`, `stats`, `live`, `doctor`); `stats` and
    `live` list its problems in brief (`doctor` hands each finding to `Output.finding` first)."""
    schemas: tuple[dict[str, Any], ...] | None = None
    """`schemas`' rows: every schema known, where it was learnt, what uses it (`views.schema_list`)."""


class Output:
    """One run's results in one format: the protocol every format implements (the defaults are what most do)."""

    def __init__(self, stream: IO[str], settings: Settings) -> None:
        self.stream = stream
        self.settings = settings
        self.console: Any = None
        """The rich console a format draws with, if it uses one: a progress bar on the same terminal shares it."""

    def begin(self, title: Title) -> None:
        """The run starts; most formats write no title."""

    def exchange(self, exchange: Exchange) -> None:
        """An exchange the filters let through."""
        raise NotImplementedError

    def record(self, record: StreamedRecord) -> None:
        """A record `records` selected."""
        raise NotImplementedError

    def notice(self, event: Notice | ConnectionEnd) -> None:
        """A stream notice or a connection's summary; most formats leave them to the closing's counts."""

    def finding(self, finding: Finding) -> None:
        """One of the doctor's findings, worst first."""
        raise NotImplementedError

    def raw(self, data: bytes) -> None:
        """What the same format wrote for one exchange in another process (`read --jobs`), in its place."""
        self.stream.write(data.decode())

    def end(self, closing: Closing) -> None:
        """The run is over: the closing's parts, then what is buffered goes out."""
        self.stream.flush()


@dataclass(frozen=True, slots=True)
class Entry:
    """A format in the registry: where its class is (loaded only when chosen) and the commands it serves."""

    module: str
    name: str
    commands: tuple[str, ...] = COMMANDS


FORMATS: dict[str, Entry] = {
    "text": Entry("kdissect.views.text_output", "TextOutput"),
    "json": Entry("kdissect.views.json_output", "JsonOutput"),
    "fields": Entry("kdissect.views.fields", "FieldsOutput", ("read", "live")),
    "csv": Entry("kdissect.views.fields", "CsvOutput", ("read", "live")),
}
"""Every format by its `-T` name."""


def names_for(command: str) -> list[str]:
    return [name for name, entry in FORMATS.items() if command in entry.commands]


def check_format(name: str, command: str) -> None:
    """A FormatError unless `name` is a format `command` writes."""
    entry = FORMATS.get(name)
    if entry is None:
        raise FormatError(f"-T {name}: choose one of {', '.join(names_for(command))}")
    if command not in entry.commands:
        raise FormatError(f"-T {name}: {command} writes {', '.join(names_for(command))}")


def make_output(name: str, stream: IO[str], settings: Settings) -> Output:
    """The format `name` writing `settings.command`'s results to `stream`."""
    check_format(name, settings.command)
    entry = FORMATS[name]
    cls: type[Output] = getattr(importlib.import_module(entry.module), entry.name)
    return cls(stream, settings)


def chosen(command: str, given: str | None, json_flag: bool, fields: bool) -> str:
    """The format's name from -T, --json and -e: one of them says it, or text; a FormatError when they disagree or
    the command does not write it."""
    if given is not None and json_flag and given != "json":
        raise FormatError(f"--json and -T {given} disagree: give one")
    if json_flag and fields:
        raise FormatError("--json and -T fields (or -e) disagree: give one")
    name = given if given is not None else "json" if json_flag else "fields" if fields else "text"
    check_format(name, command)
    return name
