"""What every command shares: the options, declared once in groups, and what they become.

A command names the groups it takes with `@takes("input", "filters", "output")` (or single options by name);
typer then sees those options
in the command's signature (each declared here, once), and the command receives them as one `Common` value:
the core's `Options` (with the run's protocol catalogue: the built-in APIs and the user's --spec-dir specs), the
exchange filter, where output goes. Errors the user can fix are `UserError`s,
printed by cli.py as one line.
"""

from __future__ import annotations

import copy
import inspect
import sys
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO, Annotated, Any, Optional

import typer


class UserError(Exception):
    """A problem the user can fix; printed as one line."""


class ExitStatus(Exception):
    """The command has written what it could and ends with this status (cli.py: 1 damaged capture, 130 interrupted);
    `message`, when there is one, is printed on standard error as one line."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or f"exit status {code}")
        self.code = code
        self.message = message


class PipeClosed(Exception):
    """The reader of our output went away (`| head`): stop quietly. Not an OSError, so typer lets it through."""


class OutputError(UserError):
    """The output cannot be written (a full disk, an I/O error): the user's to fix, in one line, with exit code 1."""

    exit_code = 1


class _Guarded:
    """The output stream, with the failures of writing it told as what they are rather than as internal errors."""

    def __init__(self, stream: IO[Any], name: str) -> None:
        self._stream = stream
        self._name = name

    def _failed(self, exc: OSError) -> Exception:
        if isinstance(exc, BrokenPipeError):
            return PipeClosed()
        return OutputError(f"cannot write {self._name}: {exc.strerror or exc}")

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise self._failed(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._failed(exc) from None

    @property
    def buffer(self) -> Any:
        """The byte stream under a text stream (the JSON writer's way out), guarded the same way."""
        buffer = getattr(self._stream, "buffer", None)
        return None if buffer is None else _Guarded(buffer, self._name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


OUTPUT_BUFFER = 1 << 20
"""An output file's buffer: a line of NDJSON is a write, and 8 KiB buffers made a system call of every few."""
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _limit_names() -> str:
    from kdissect.limits import Limits

    return ", ".join(f"{f.name} ({f.default})" for f in fields(Limits))


def _option(name: str, annotation: Any, default: Any = None) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


GROUPS: dict[str, list[inspect.Parameter]] = {
    "capture": [
        _option(
            "capture",
            Annotated[
                Optional[list[str]],
                typer.Argument(
                    metavar="CAPTURE...",
                    help="A pcap or pcapng capture, plain or compressed (gzip, zstd, lz4); - reads standard input (tcpdump -w -). "
                    "Several captures, or a quoted glob ('broker-*.pcap'), are read as one, merged by time: a connection two of "
                    "them saw is one connection.",
                    show_default=False,
                ),
            ],
        ),
        _option(
            "read_file",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--read-file",
                    "-r",
                    metavar="FILE",
                    help="The capture, as tshark -r takes it (instead of CAPTURE; repeatable).",
                    rich_help_panel="Input",
                ),
            ],
        ),
    ],
    "count": [
        _option(
            "count",
            Annotated[
                Optional[int],
                typer.Option(
                    "--count",
                    "-c",
                    metavar="N",
                    help="Stop after N exchanges (those the filters let through).",
                    rich_help_panel="Limits",
                ),
            ],
        ),
    ],
    "detail": [
        _option(
            "detail",
            Annotated[
                bool,
                typer.Option(
                    "--detail", "-V", help="Every exchange in full, as a tree of every field (what show prints).", rich_help_panel="Output"
                ),
            ],
            False,
        ),
    ],
    "input": [
        _option(
            "port",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--port",
                    "-p",
                    metavar="PORT,...",
                    help="Kafka broker ports (default 9092). Other ports are recognised by their traffic.",
                    rich_help_panel="Input",
                ),
            ],
        ),
        _option(
            "no_reorder",
            Annotated[
                bool,
                typer.Option(
                    "--no-reorder", help="Do not hold out-of-order TCP segments: any hole becomes a gap at once.", rich_help_panel="Input"
                ),
            ],
            False,
        ),
        _option(
            "tls_keylog",
            Annotated[
                Optional[Path],
                typer.Option(
                    "--tls-keylog",
                    help="Decrypt TLS with the secrets of this key log (NSS format: SSLKEYLOGFILE, Python's keylog_filename). "
                    "Secrets embedded in a pcapng are used without it.",
                    rich_help_panel="Input",
                    show_default=False,
                ),
            ],
        ),
        _option(
            "spec_dir",
            Annotated[
                Optional[list[Path]],
                typer.Option(
                    "--spec-dir",
                    metavar="DIR",
                    help="A folder of Kafka message specs (*.json) for APIs or versions kdissect does not know: drafts, "
                    "private APIs, newer versions (repeatable; docs/schema.md). `kdissect schema --check DIR` checks them.",
                    rich_help_panel="Input",
                ),
            ],
        ),
        _option(
            "key",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--key",
                    metavar="NAME=KEY,...",
                    help='The API key of a --spec-dir spec whose apiKey is missing or not a number ("TBD"); '
                    "NAME is its name without Request/Response.",
                    rich_help_panel="Input",
                ),
            ],
        ),
        _option(
            "limit",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--limit",
                    metavar="NAME=VALUE,...",
                    help="Change resource bounds (VALUE may end in KiB, MiB or GiB), e.g. "
                    f"max_frame_size=1GiB. Bounds and defaults: {_limit_names()}.",
                    rich_help_panel="Limits",
                ),
            ],
        ),
    ],
    "filters": [
        _option(
            "filter",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--filter",
                    "-Y",
                    metavar="EXPR",
                    help="A display filter, e.g. 'api == Fetch and latency_ms > 100' (repeatable: all must hold; docs/filters.md). "
                    "The options below are shorthands that combine with it.",
                    rich_help_panel="Filters",
                ),
            ],
        ),
        _option(
            "api",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--api", metavar="API,...", help="Only these APIs: names or keys (Produce,Fetch or 0,1).", rich_help_panel="Filters"
                ),
            ],
        ),
        _option(
            "version",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--version",
                    metavar="N|N-M,...",
                    help="Only these API versions: N or N-M, e.g. --api Fetch --version 12-13.",
                    rich_help_panel="Filters",
                ),
            ],
        ),
        _option(
            "topic",
            Annotated[
                Optional[list[str]],
                typer.Option("--topic", metavar="TOPIC,...", help="Only exchanges naming one of these topics.", rich_help_panel="Filters"),
            ],
        ),
        _option(
            "client_id",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--client-id", metavar="CLIENT_ID,...", help="Only exchanges from one of these client ids.", rich_help_panel="Filters"
                ),
            ],
        ),
        _option(
            "group",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--group", metavar="GROUP,...", help="Only exchanges naming one of these consumer groups.", rich_help_panel="Filters"
                ),
            ],
        ),
        _option(
            "errors",
            Annotated[bool, typer.Option("--errors", help="Only exchanges with an error code or a diagnostic.", rich_help_panel="Filters")],
            False,
        ),
        _option(
            "connection",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--connection",
                    metavar="ID,...",
                    help="Only these connections: ids as the flows table lists them.",
                    rich_help_panel="Filters",
                ),
            ],
        ),
        _option(
            "min_latency",
            Annotated[
                Optional[float],
                typer.Option(
                    "--min-latency",
                    metavar="MS",
                    help="Only exchanges at least this slow, in milliseconds, and those never answered.",
                    rich_help_panel="Filters",
                ),
            ],
        ),
    ],
    "output": [
        _option(
            "json_out",
            Annotated[
                bool,
                typer.Option(
                    "--json", "-j", help="Write NDJSON, one object per exchange (layout: docs/json.md).", rich_help_panel="Output"
                ),
            ],
            False,
        ),
        _option(
            "output",
            Annotated[
                Optional[Path],
                typer.Option(
                    "--output", "-o", metavar="FILE", help="Write to this file instead of standard output.", rich_help_panel="Output"
                ),
            ],
        ),
        _option(
            "quiet",
            Annotated[
                bool,
                typer.Option(
                    "--quiet",
                    "-q",
                    help="The summary only, as tshark -q: no exchange rows (--json still writes its objects), no progress bar.",
                    rich_help_panel="Output",
                ),
            ],
            False,
        ),
        _option(
            "output_format",
            Annotated[
                Optional[str],
                typer.Option(
                    "--output-format",
                    "-T",
                    metavar="FORMAT",
                    help="text (the default), json (as --json), or, where a command writes them, fields and csv (the -e fields).",
                    rich_help_panel="Output",
                ),
            ],
        ),
    ],
    "fields": [
        _option(
            "field",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--field",
                    "-e",
                    metavar="FIELD",
                    help="With -T fields or csv, a field to write (repeatable): api, latency_ms, request.Acks, count(topic), ... "
                    "(docs/filters.md).",
                    rich_help_panel="Output",
                ),
            ],
        ),
        _option(
            "field_option",
            Annotated[
                Optional[list[str]],
                typer.Option(
                    "--field-option",
                    "-E",
                    metavar="NAME=VALUE",
                    help="With -T fields: separator=/t|/s|C (default tab), aggregator=C (between values of one field, default ','), "
                    "header=y|n, quote=n|d|s (repeatable).",
                    rich_help_panel="Output",
                ),
            ],
        ),
    ],
    "write": [
        _option(
            "write",
            Annotated[
                Optional[Path],
                typer.Option(
                    "--write",
                    "-w",
                    metavar="FILE",
                    help="Also write the packets that carry the exchanges shown, with their connections' handshakes and closes, "
                    "to this capture (.pcap or .pcapng, and .gz, .zst or .lz4 to compress it): it reads back as exactly those exchanges.",
                    rich_help_panel="Output",
                    show_default=False,
                ),
            ],
        ),
    ],
    "secrets": [
        _option(
            "show_secrets",
            Annotated[
                bool,
                typer.Option(
                    "--show-secrets", help="Show SASL passwords, proofs and tokens instead of redacting them.", rich_help_panel="Output"
                ),
            ],
            False,
        ),
    ],
    "values": [
        _option(
            "schemas",
            Annotated[
                Optional[list[Path]],
                typer.Option(
                    "--schemas",
                    metavar="DIR",
                    help="A folder of schemas that record values are written with: Avro .avsc, .proto or a descriptor set, "
                    "JSON Schema .json, tied to ids by a schemas.json manifest, by file name (7.avsc) or by subject "
                    "(orders-value.avsc) (repeatable; docs/values.md).",
                    rich_help_panel="Input",
                ),
            ],
        ),
        _option(
            "schema_registry",
            Annotated[
                Optional[str],
                typer.Option(
                    "--schema-registry",
                    metavar="URL",
                    help="Ask this schema registry for the schemas values name (Confluent or Apicurio; credentials from "
                    "KDISSECT_REGISTRY_USER_INFO or KDISSECT_REGISTRY_TOKEN; answers kept on disk). Schemas the capture "
                    "holds (a registry's HTTP, the _schemas topic) are learnt without it.",
                    rich_help_panel="Input",
                ),
            ],
        ),
    ],
    "decoding": [
        _option(
            "headers_only",
            Annotated[
                bool,
                typer.Option(
                    "--headers-only",
                    help="Read headers only: pair and time exchanges without decoding bodies (faster).",
                    rich_help_panel="Input",
                ),
            ],
            False,
        ),
    ],
    "metrics": [
        _option(
            "metrics_top",
            Annotated[
                int,
                typer.Option(
                    "--metrics-top",
                    metavar="N",
                    help="Client ids, topics, groups, hosts, brokers and software names with a label of their own, each; "
                    "the rest are counted as 'other' (told once) until one goes idle.",
                    rich_help_panel="Metrics",
                ),
            ],
            100,
        ),
        _option(
            "metrics_series",
            Annotated[
                int,
                typer.Option(
                    "--metrics-series",
                    metavar="N",
                    help="Series per metric; past it, new ones are counted in one whose labels are all 'other'.",
                    rich_help_panel="Metrics",
                ),
            ],
            10_000,
        ),
        _option(
            "metrics_idle",
            Annotated[
                float,
                typer.Option(
                    "--metrics-idle",
                    metavar="SECONDS",
                    help="A series, a label value or a producer/consumer relation without traffic this long is let go.",
                    rich_help_panel="Metrics",
                ),
            ],
            600.0,
        ),
        _option(
            "metrics_window",
            Annotated[
                float,
                typer.Option(
                    "--metrics-window",
                    metavar="SECONDS",
                    help="The doctor's window: the findings exported are those of the last window's traffic.",
                    rich_help_panel="Metrics",
                ),
            ],
            60.0,
        ),
    ],
}
"""Every shared option, by group. A command takes whole groups, or single options by name (`OPTIONS`)."""
READS = ("capture", "input", "values", "filters", "output", "count")
"""The groups of every command that reads a capture file (read, show, stats, records)."""
OPTIONS = {p.name: p for group in GROUPS.values() for p in group}


@dataclass(frozen=True, slots=True)
class Common:
    """The shared options of one command run, made into what the commands use."""

    options: Any
    """The core's `dissector.Options`."""
    wanted: Any
    """The `filter.Filter` of -Y and the fixed filter options (matches everything when none is given)."""
    output: Path | None = None
    json: bool = False
    quiet: bool = False
    specs: Any = None
    """The `schema.user_specs.UserSpecs` of --spec-dir and --key (in `options.catalog`); None without."""
    spec_dirs: tuple[Path, ...] = ()
    keys: tuple[str, ...] = ()
    """--spec-dir and --key as given: for a command that reads them itself (`takes(..., install=False)`)."""
    capture: str | None = None
    """The capture to read: a path, or "-" for standard input; several, their names joined (for what is shown)."""
    captures: tuple[str, ...] = ()
    """Every capture to read, globs expanded: one, or several read as one (capture/merge.py)."""
    count: int | None = None
    """Stop after this many exchanges the filters let through."""
    detail: bool = False
    topics: tuple[str, ...] = ()
    """--topic's topics: an exchange can name several, and `records` prints only these topics' records."""
    tls_keylog: Path | None = None
    """The key log's path, for a live session to follow as clients append to it (`options` holds its bytes)."""
    format: str = "text"
    """The output format's name (-T, --json, -e), checked against the command: `views.output.FORMATS`."""
    fields: tuple[Any, ...] = ()
    """-e: the fields the fields formats write, compiled."""
    layout: Any = None
    """-E: the fields formats' layout."""
    tap: Any = None
    """The `metrics.tap.TapSettings` of the --metrics-* options, for a command that takes them."""
    values: Any = None
    """The `values.reader.ValueReader` of --schemas, --schema-registry and the capture's own schemas (docs/values.md)."""
    write: Path | None = None
    """-w: the capture the exchanges shown are cut into (rewrite/cut.py)."""

    def open_output(self) -> Any:
        return open_output(self.output)

    def make_output(self, command: str, stream: Any, **settings: Any) -> Any:
        """The command's `views.output.Output` in the chosen format, on `stream`; `settings` adds to what the options say
        (`views.output.Settings`)."""
        from kdissect.views.output import FormatError, Settings, make_output

        shared = Settings(
            command,
            self.options.catalog,
            quiet=self.quiet,
            show_secrets=self.options.show_secrets,
            fields=self.fields,
            layout=self.layout,
            capture=self.capture or "FILE",
            values=self.values,
        )
        try:
            return make_output(self.format, stream, replace(shared, **settings))
        except FormatError as exc:
            raise UserError(str(exc)) from None


def takes(*groups: str, helps: dict[str, str] | None = None, install: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the shared options of `groups`; it receives them as its first argument, a `Common`.

    typer reads the command's signature, so the wrapper's signature is the command's own parameters (after
    the first) followed by the groups' options. `helps` rewords an option's help for this command alone. The
    users' specs (--spec-dir, --key) are checked and made into the run's catalogue, unless `install` is false.
    """
    shared = [_reworded(p, (helps or {}).get(p.name)) for item in groups for p in GROUPS.get(item) or [OPTIONS[item]]]
    return lambda command: _Command(command, shared, install)


class _Command:
    """A command as typer sees it (`takes`): called with every option by name, it hands the command a `Common` and its
    own. Its signature, which evaluates the command's annotations, is made when typer first reads it: a start makes
    only the command it runs (cli.py's `_command`). Measured: evaluating all fourteen commands' annotations at import
    took 3.6 ms of `import kdissect.cli`."""

    def __init__(self, command: Callable[..., Any], shared: list[inspect.Parameter], install: bool) -> None:
        self.__wrapped__ = command
        self.__name__ = command.__name__
        self.__qualname__ = command.__qualname__
        self.__module__ = command.__module__
        self.__doc__ = command.__doc__
        self._shared = shared
        self._install = install
        self._signature: inspect.Signature | None = None

    @property
    def __signature__(self) -> inspect.Signature:  # what typer reads the options from
        if self._signature is None:
            command = self.__wrapped__
            signature = inspect.signature(command)
            hints = typing.get_type_hints(command, include_extras=True)  # the commands' annotations are strings
            own = [p.replace(annotation=hints[p.name]) for p in list(signature.parameters.values())[1:]]
            self._signature = signature.replace(parameters=own + self._shared)
        return self._signature

    @property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]  # typer's get_type_hints reads them
        return {p.name: p.annotation for p in self.__signature__.parameters.values()}

    def __call__(self, **values: Any) -> Any:
        given = {p.name: values.pop(p.name) for p in self._shared}
        if "key" in given:
            given["key"] = split_list(given["key"])
        specs = user_specs(given.get("spec_dir"), given.get("key")) if self._install else None  # before the filters: --api may name them
        return self.__wrapped__(make_common(given, specs, self.__name__), **values)


def _reworded(parameter: inspect.Parameter, help: str | None) -> inspect.Parameter:
    if help is None:
        return parameter
    kind, info = parameter.annotation.__origin__, copy.copy(parameter.annotation.__metadata__[0])
    info.help = help
    return parameter.replace(annotation=Annotated[kind, info])


def user_specs(folders: list[Path] | None, keys: list[str] | None) -> Any:
    """The users' specs, checked (None when there are none); a UserError naming the first problem, and how to see
    them all."""
    if not folders and not keys:
        return None
    from kdissect.schema.user_specs import from_folders

    specs = from_folders(folders or (), keys or ())
    if specs.problems:
        more = len(specs.problems) - 1
        check = " ".join([*(f"--check {f}" for f in folders or ()), *(f"--key {k}" for k in keys or ())])
        also = f" ({more} more: `kdissect schema {check}` lists them)" if more else ""
        raise UserError(f"{specs.problems[0]}{also}")
    return specs


def make_common(values: dict[str, Any], specs: Any = None, command: str | None = None) -> Common:
    """The options of `command`'s run, checked: a UserError for the first mistake, before anything is read."""
    from kdissect.dissector import DEFAULT_PORTS, Options
    from kdissect.schema import catalog_with

    if values.get("count") is not None and values["count"] < 1:
        raise UserError(f"--count {values['count']}: give a number of exchanges from 1 up")
    if values.get("min_latency") is not None and values["min_latency"] < 0:
        raise UserError(f"--min-latency {values['min_latency']}: give milliseconds from 0 up")
    ports = make_ports(values.get("port"))
    captures = make_captures(values) if "capture" in values else ()
    catalog = catalog_with(specs.definitions if specs else ())
    values_reader = side_streams = None
    if "schemas" in values:
        from kdissect.commands.value_sources import make_values

        capture = captures[0] if captures else None  # the first capture's own schemas: several are read as one
        values_reader, side_streams = make_values(values.get("schemas"), values.get("schema_registry"), capture, lambda: options)
    wanted = make_filter(catalog, values.get("filter"), values_reader, **{name: values.get(name) for name in SHORTHANDS})
    options = Options(
        ports=frozenset(ports) if ports else DEFAULT_PORTS,
        limits=make_limits(split_list(values.get("limit"))),
        reorder=not values.get("no_reorder", False),
        decode=not values.get("headers_only", False),
        show_secrets=values.get("show_secrets", False),
        tls_keylog=read_keylog(values.get("tls_keylog")),
        keep=wanted.keep,
        catalog=catalog,
    )
    if side_streams is not None:
        options = replace(options, side_streams=side_streams)
    return Common(
        options,
        wanted,
        values.get("output"),
        values.get("json_out", False),
        values.get("quiet", False),
        specs,
        tuple(values.get("spec_dir") or ()),
        tuple(values.get("key") or ()),
        shown_name(captures),
        captures,
        values.get("count"),
        values.get("detail", False),
        tuple(split_list(values.get("topic")) or ()),
        values.get("tls_keylog"),
        *make_format(catalog, command, values, values_reader),
        make_tap(values) if "metrics_top" in values else None,
        values_reader,
        make_write(values),
    )


def make_tap(values: dict[str, Any]) -> Any:
    """The tap's settings from the --metrics-* options; a UserError for one out of range."""
    from kdissect.metrics.settings import TapSettings

    top, series, idle, window = (values[f"metrics_{name}"] for name in ("top", "series", "idle", "window"))
    if top < 1 or series < 1:
        raise UserError("--metrics-top and --metrics-series take a number from 1 up")
    if idle <= 0 or window <= 0:
        raise UserError("--metrics-idle and --metrics-window take seconds above 0")
    return TapSettings(top, series, idle, window)


def make_format(catalog: Any, command: str | None, values: dict[str, Any], reader: Any = None) -> tuple[str, tuple[Any, ...], Any]:
    """(format name, compiled -e fields, -E layout) from -T, --json, -e and -E; a UserError when they disagree, when the
    command does not write the format, or for a bad field."""
    from kdissect.views.output import FormatError, chosen

    names, settings = values.get("field") or [], values.get("field_option") or []
    if command is None or "output_format" not in values:  # a command that writes no output of these formats
        return "text", (), None
    try:
        name = chosen(command, values.get("output_format"), values.get("json_out", False), bool(names))
    except FormatError as exc:
        raise UserError(str(exc)) from None
    if name not in ("fields", "csv"):
        if names or settings:
            raise UserError("-e and -E go with -T fields or csv")
        return name, (), None
    if not names:
        raise UserError(f"-T {name} needs the fields to write: -e api -e latency_ms ...")
    from kdissect.filter import FilterError, compile_fields
    from kdissect.views.fields import FieldsError, make_layout

    try:
        return name, tuple(compile_fields(names, catalog, reader)), make_layout(settings)
    except (FilterError, FieldsError) as exc:
        raise UserError(str(exc)) from None


def make_write(values: dict[str, Any]) -> Path | None:
    """-w's file, checked before anything is read: a name that says pcap or pcapng, a capture that can be read twice
    (the cut reads it again), and not the capture itself."""
    path = values.get("write")
    if path is None:
        return None
    from kdissect.capture.destination import DestinationError, format_of
    from kdissect.capture.source import STDIN

    try:
        format_of(str(path))
    except DestinationError as exc:
        raise UserError(f"-w {exc}") from None
    captures = make_captures(values) if "capture" in values else ()
    if STDIN in captures:
        raise UserError("-w reads the capture a second time to cut it: give a capture file, not standard input")
    if path.exists() and any(Path(c).exists() and path.samefile(c) for c in captures):
        raise UserError(f"-w {path}: that is a capture being read; name another file")
    return path


def shown_name(captures: tuple[str, ...]) -> str | None:
    """How the captures are named in what a command prints (`kdissect show NAME --exchange N`)."""
    if len(captures) <= 1:
        return captures[0] if captures else None
    import shlex

    return " ".join(map(shlex.quote, captures))


def make_captures(values: dict[str, Any]) -> tuple[str, ...]:
    """The captures named by the CAPTURE arguments or by -r (not both), globs expanded."""
    from kdissect.capture import CaptureError
    from kdissect.capture.merge import expand

    given, read = values.get("capture") or [], values.get("read_file") or []
    if bool(given) == bool(read):
        raise UserError(
            "name the capture, as arguments or with -r (not both): kdissect read CAPTURE..., or -r CAPTURE (- for standard input)"
        )
    try:
        return tuple(expand(given or read))
    except CaptureError as exc:
        raise UserError(str(exc)) from None


def split_list(values: list[str] | None) -> list[str] | None:
    """A list option's values, each of which may itself be a comma-separated list: --topic a,b --topic c."""
    if not values:
        return None
    return [item.strip() for value in values for item in value.split(",") if item.strip()] or None


def make_ports(values: list[str] | None) -> list[int] | None:
    ports = split_list(values)
    if ports and not all(p.isdigit() and 0 < int(p) < 65536 for p in ports):
        raise UserError(f"--port {','.join(ports)}: give port numbers from 1 to 65535")
    return [int(p) for p in ports] if ports else None


SHORTHANDS = ("api", "version", "topic", "client_id", "group", "errors", "connection", "min_latency")


def make_filter(catalog: Any, expressions: list[str] | None = None, values: Any = None, **shorthands: Any) -> Any:
    """The `filter.Filter` of the -Y expressions and the fixed options, joined by `and`, over the catalogue's APIs; a
    UserError (one line with the column, a caret and what was meant) for a mistake. A list option's values may each be
    `a,b`."""
    given: dict[str, Any] = {name: split_list(value) if isinstance(value, list) else value for name, value in shorthands.items()}
    given.update({name: ",".join(given[name]) for name in ("api", "version", "connection") if given.get(name)})
    expressions = expressions or []
    if not expressions and all(value is None or value is False or value == [] or value == "" for value in given.values()):
        from kdissect.filter.verdict import EVERYTHING

        return EVERYTHING
    from kdissect.filter import FilterError, compile_filter
    from kdissect.filter.shorthands import shorthands as fixed

    labels = ["-Y"] if len(expressions) == 1 else [f"-Y #{i}" for i in range(1, len(expressions) + 1)]
    try:
        return compile_filter([*fixed(catalog, **given), *zip(labels, expressions)], catalog, values)
    except FilterError as exc:
        raise UserError(str(exc)) from None


def read_keylog(path: Path | None) -> Any:
    """The key log, read once as it streams by (`tls.keylog.KeyLogFile`: its secrets, not its bytes); a UserError
    when it cannot be read, or holds lines but no secret (not a key log). An empty one is taken: a live session
    follows it as clients write to it. Its lines are never echoed."""
    if path is None:
        return b""
    from kdissect.tls.keylog import KeyLogFile

    try:
        keylog = KeyLogFile(path)
    except OSError as exc:
        raise UserError(f"--tls-keylog {path}: {exc.strerror or exc}") from None
    count = keylog.count
    if not count.secrets and count.malformed:
        raise UserError(
            f"--tls-keylog {path}: no TLS secret in it ({count.malformed} malformed lines); "
            "expected NSS key log lines such as CLIENT_RANDOM <64 hex digits> <96 hex digits>"
        )
    return keylog


def make_limits(settings: list[str] | None) -> Any:
    """`Limits` with the user's NAME=VALUE settings applied; a wrong name or value is a UserError."""
    from kdissect.limits import DEFAULT_LIMITS

    changes = {}
    known = {f.name for f in fields(DEFAULT_LIMITS)}
    for setting in settings or ():
        name, _, text = setting.partition("=")
        unit = next((u for u in UNITS if text.endswith(u)), None)
        try:
            value = int(text[: -len(unit)] if unit else text) * (UNITS[unit] if unit else 1)
        except ValueError:
            value = -1
        if name not in known or value < 1:
            raise UserError(f"--limit {setting}: give NAME=VALUE with a positive VALUE and NAME one of {', '.join(sorted(known))}")
        changes[name] = value
    return replace(DEFAULT_LIMITS, **changes)


@contextmanager
def open_output(path: Path | None) -> Iterator[Any]:
    if path is None:
        guarded = _Guarded(sys.stdout, "the standard output")
        yield guarded
        guarded.flush()
        return
    try:
        stream = open(path, "w", encoding="utf-8", buffering=OUTPUT_BUFFER)
    except OSError as exc:
        raise UserError(f"{path}: {exc.strerror or exc}") from None
    guarded = _Guarded(stream, str(path))
    try:
        yield guarded
        guarded.flush()
    finally:
        try:
            stream.close()
        except OSError:
            pass  # a flush that failed is told above; what close adds is the same failure
