"""Message specs users give at run time (`--spec-dir`, `--key`): drafts, private APIs, versions newer than the
built-in tables.

Each file is read by the generator's own reader (specs.py); then the files are checked as a set (an API key for
every API, one request and one response per key, both with the same versions) and become `Api` values, which
`schema.Catalog` lays over the built-in tables. Nothing here raises for bad input: every problem is a
`Problem` with its file, line and field, and specs with problems are never installed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Sequence, cast

from kdissect.schema.generated import APIS as BUILTIN_APIS
from kdissect.schema.model import OPEN, Api, Kind, MessageSpec, all_versions
from kdissect.schema.specs import Document, MessageBuilder, Problem, SpecError

SUFFIXES = {"request": "Request", "response": "Response"}
MAX_FILE = 1 << 20
"""The most characters of a spec file read: Kafka's largest file is 13 KB, and the reader holds a file and its tree
at once."""


@dataclass(frozen=True, slots=True)
class SpecFile:
    """One spec file: its path as the user gave it, and its text (what travels to the Spark executors)."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class UserApi:
    """An API the user's specs define, where its halves come from, and the built-in API of its key, if any."""

    api: Api
    request_file: str
    response_file: str
    builtin: Api | None


@dataclass(frozen=True, slots=True)
class UserSpecs:
    """What `--spec-dir` and `--key` gave, checked: the APIs to install, or the problems that stop them."""

    files: tuple[SpecFile, ...] = ()
    keys: tuple[str, ...] = ()
    """The `--key NAME=KEY` settings, as given."""
    apis: tuple[UserApi, ...] = ()
    ignored: tuple[tuple[str, str], ...] = ()
    """(file, why) of sound specs that define nothing to decode: data and header specs (kdissect reads those with its
    own), and requests or responses whose validVersions is "none" (an API Kafka removed)."""
    problems: tuple[Problem, ...] = ()

    @property
    def definitions(self) -> tuple[Api, ...]:
        return tuple(user.api for user in self.apis)


NONE = UserSpecs()


def read_folders(folders: Iterable[str | Path]) -> tuple[list[SpecFile], list[Problem]]:
    """Every `*.json` of each folder (not of its subfolders), in name order."""
    files, problems = [], []
    for folder in folders:
        where = Path(folder)
        try:
            paths = sorted(p for p in where.iterdir() if p.suffix == ".json" and p.is_file())
        except OSError as exc:
            problems.append(Problem(str(folder), None, "", f"cannot list the folder: {exc.strerror or exc}"))
            continue
        if not paths:
            problems.append(Problem(str(folder), None, "", "no *.json spec files in this folder"))
        for path in paths:
            try:
                with path.open(encoding="utf-8") as spec:
                    text = spec.read(MAX_FILE + 1)
                if len(text) > MAX_FILE:
                    problems.append(
                        Problem(str(path), None, "", f"larger than {MAX_FILE >> 20} MiB: not a message spec (Kafka's are a few KB)")
                    )
                    continue
                files.append(SpecFile(str(path), text))
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(Problem(str(path), None, "", f"cannot read it: {getattr(exc, 'strerror', None) or exc}"))
    return files, problems


def from_folders(folders: Sequence[str | Path], keys: Sequence[str]) -> UserSpecs:
    files, problems = read_folders(folders)
    specs = load(files, keys)
    return replace(specs, problems=tuple(problems) + specs.problems) if problems else specs


@dataclass
class _Half:
    """A request or response spec, read."""

    document: Document
    message: MessageSpec

    @property
    def base(self) -> str:
        return self.message.name.removesuffix(SUFFIXES[self.message.kind])


def load(files: Sequence[SpecFile], keys: Sequence[str]) -> UserSpecs:
    """Build and check every file; the APIs only when nothing at all is wrong."""
    problems: list[Problem] = []
    given = _parse_keys(keys, problems)
    halves: list[_Half] = []
    named: set[str] = set()
    """Every request's and response's name without its suffix, for --key."""
    broken: set[str] = set()
    """The names of the specs with problems: their other halves are not told they lack them."""
    ignored = []
    for spec_file in files:
        try:
            document = Document(spec_file.path, spec_file.text)
        except SpecError as exc:
            problems.append(exc.problem)
            continue
        kind = document.root.get("type")
        if not isinstance(kind, str) or kind not in SUFFIXES:
            builder = MessageBuilder(document, spec_file.path)
            builder.build("data")  # checked all the same
            problems += builder.problems
            if not builder.problems:
                ignored.append((spec_file.path, f"a {kind} spec"))
            continue
        builder = MessageBuilder(document, spec_file.path)
        message = builder.build(cast(Kind, kind))  # one of SUFFIXES' keys, checked above
        named.add(message.name.removesuffix(SUFFIXES[kind]))
        problems += builder.problems
        if builder.problems:
            broken.add(message.name)
            continue
        if not message.name.endswith(SUFFIXES[kind]):
            problems.append(_at(document, "name", f"a {kind} spec's name ends in {SUFFIXES[kind]}"))
            continue
        if not message.valid:
            ignored.append((spec_file.path, 'validVersions "none"'))
            continue
        halves.append(_Half(document, message))
    for name in given:
        if name not in named:
            known = ", ".join(sorted(named)) or "none"
            problems.append(_option(f"{name}={given[name]}: no spec is named {name}Request or {name}Response (names: {known})"))
    apis = _pair(halves, given, broken, problems)
    if problems:
        return UserSpecs(tuple(files), tuple(keys), (), tuple(ignored), tuple(problems))
    return UserSpecs(tuple(files), tuple(keys), tuple(apis), tuple(ignored), ())


def _at(document: Document, key: str, message: str) -> Problem:
    return Problem(document.name, document.line(document.root, key), key, message)


def _option(message: str) -> Problem:
    return Problem("--key", None, "", message)


def _parse_keys(keys: Sequence[str], problems: list[Problem]) -> dict[str, int]:
    """`--key NAME=KEY` settings by name; the malformed ones noted."""
    given: dict[str, int] = {}
    for setting in keys:
        name, _, text = setting.partition("=")
        name = name.strip().removesuffix("Request").removesuffix("Response")
        digits = text.strip()
        if not name or not (digits.isascii() and digits.isdigit() and len(digits) <= len(str(OPEN))) or int(digits) > OPEN:
            problems.append(_option(f"{setting}: give NAME=KEY, NAME a spec's name without Request/Response, KEY from 0 to {OPEN}"))
        elif name in given and given[name] != int(digits):
            problems.append(_option(f"{setting}: {name} is given the key {given[name]} too"))
        else:
            given[name] = int(digits)
    return given


def _pair(halves: list[_Half], given: dict[str, int], broken: set[str], problems: list[Problem]) -> list[UserApi]:
    """Requests and responses by API key: exactly one of each, the same versions, names that agree."""
    by_key: dict[int, dict[str, _Half]] = {}
    for half in halves:
        message, document = half.message, half.document
        key = given.get(half.base, message.api_key)
        if key is None:
            stated = document.root.get("apiKey")
            said = "no apiKey" if stated is None else f"apiKey {_json(stated)} is not a number"
            problems.append(_at(document, "apiKey", f"{said}: give one with --key {half.base}=KEY"))
            continue
        other = by_key.setdefault(key, {}).get(message.kind)
        if other is not None:
            where = f"{other.document.name}:{other.document.line(other.document.root)}"
            problems.append(_at(document, "apiKey", f"API key {key} is also the key of {other.message.name} ({where})"))
            continue
        by_key[key][message.kind] = replace(half, message=replace(message, api_key=key))
    names = {api.name: key for key, api in BUILTIN_APIS.items()}
    out = []
    for key, pair in sorted(by_key.items()):
        request, response = pair.get("request"), pair.get("response")
        if request is None or response is None:
            lone = request or response
            assert lone is not None  # a key is in by_key only with a half under it
            missing = "request" if request is None else "response"
            wanted = f"{lone.base}{SUFFIXES[missing]}"
            if wanted not in broken:
                problems.append(_at(lone.document, "name", f"{lone.base} has no {missing} spec ({wanted}) for API key {key}"))
            continue
        if request.base != response.base:
            problems.append(_at(response.document, "name", f"API key {key} joins {request.message.name} and {response.message.name}"))
            continue
        if request.message.valid != response.message.valid:
            problems.append(
                _at(
                    response.document,
                    "validVersions",
                    f'validVersions "{response.message.valid}" differ from the request\'s "{request.message.valid}"',
                )
            )
            continue
        clash = names.setdefault(request.base, key)
        if clash != key:
            problems.append(_at(request.document, "name", f"{request.base} is already the name of API key {clash}, not {key}"))
            continue
        requests, responses = (request.message,), (response.message,)
        api = Api(key, request.base, requests, responses, all_versions(requests))
        out.append(UserApi(api, request.document.name, response.document.name, BUILTIN_APIS.get(key)))
    return out


def _json(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)
