"""Schemas from a folder (`--schemas DIR`): Avro `.avsc`, Protobuf `.proto` source or a compiled descriptor set
(`.desc`, `.pb`, `.protoset`), JSON Schema `.json`.

What ties a file to the values it reads, in this order:

* a manifest, `schemas.json` in the folder: `{"schemas": [{"file": "order.avsc", "id": 7, "subject": "orders-value",
  "version": 1}, ...]}`; an entry may name a `guid`, an Apicurio `global_id` or a Glue `glue_version` instead of `id`,
  and `references` (`[{"name": "common.proto", "subject": "common", "version": 1}]`);
* the file's name: `7.avsc` is schema id 7; `orders-value.avsc` is subject orders-value (its values' ids are then
  whatever they carry: a value whose id no source knows is read with its topic's subject, TOPIC-value or TOPIC-key);
  `orders-value.3.avsc` is version 3 of that subject.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson

from kdissect.values.framing import GLOBAL_ID, GLUE_VERSION, GUID, ID, SchemaRef
from kdissect.values.schemas import AVRO, JSON, PROTOBUF, Book, Reference, Schema

MANIFEST = "schemas.json"
FORMATS_BY_SUFFIX = {".avsc": AVRO, ".proto": PROTOBUF, ".desc": PROTOBUF, ".pb": PROTOBUF, ".protoset": PROTOBUF, ".json": JSON}
BINARY = (".desc", ".pb", ".protoset")
MAX_FILE = 16 << 20
_VERSIONED = re.compile(r"^(?P<subject>.+)\.(?P<version>\d+)$")


class FolderError(Exception):
    """A folder, manifest or file that cannot be used: one line for the user, naming the file."""


def load_folder(folder: Path, book: Book) -> int:
    """Every schema of the folder into the book; how many. A FolderError names the first file at fault."""
    if not folder.is_dir():
        raise FolderError(f"--schemas {folder}: not a folder")
    manifest = folder / MANIFEST
    listed: set[str] = set()
    count = 0
    if manifest.exists():
        for entry in _manifest(manifest):
            listed.add(entry["file"])
            book.add(_entry_schema(folder, entry))
            count += 1
    for path in sorted(folder.iterdir()):
        if path.name == MANIFEST or path.name in listed or path.suffix not in FORMATS_BY_SUFFIX or not path.is_file():
            continue
        book.add(_named_schema(path))
        count += 1
    return count


def _manifest(path: Path) -> list[dict[str, Any]]:
    try:
        told = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise FolderError(f"{path}: not a JSON manifest ({exc})") from None
    entries = told.get("schemas") if isinstance(told, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("file"), str) for e in entries):
        raise FolderError(f'{path}: expected {{"schemas": [{{"file": ..., "id": ...}}, ...]}}')
    return entries


def _read(path: Path) -> tuple[str, bytes | None]:
    try:
        if path.stat().st_size > MAX_FILE:
            raise FolderError(f"{path}: larger than {MAX_FILE >> 20} MiB, not a schema")
        data = path.read_bytes()
    except OSError as exc:
        raise FolderError(f"{path}: {exc.strerror or exc}") from None
    if path.suffix in BINARY:
        return "", data
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        raise FolderError(f"{path}: not UTF-8 text") from None


def _format(path: Path) -> str:
    fmt = FORMATS_BY_SUFFIX.get(path.suffix)
    if fmt is None:
        raise FolderError(f"{path}: which format? name it .avsc, .proto, .desc or .json")
    return fmt


def _entry_schema(folder: Path, entry: dict[str, Any]) -> Schema:
    path = folder / entry["file"]
    if os.path.isabs(entry["file"]) or ".." in Path(entry["file"]).parts:
        raise FolderError(f"{folder / MANIFEST}: {entry['file']} is not a file of the folder")
    text, binary = _read(path)
    refs = []
    for key, kind, cast in (("id", ID, int), ("guid", GUID, str), ("global_id", GLOBAL_ID, int), ("glue_version", GLUE_VERSION, str)):
        if entry.get(key) is not None:
            try:
                refs.append(SchemaRef(kind, cast(entry[key]).lower() if cast is str else cast(entry[key])))
            except (TypeError, ValueError):
                raise FolderError(f"{folder / MANIFEST}: {entry['file']}: {key} {entry[key]!r} is not valid") from None
    subject = entry.get("subject")
    if not refs and not subject:
        raise FolderError(f"{folder / MANIFEST}: {entry['file']} names no id and no subject")
    references = tuple(Reference(r["name"], r["subject"], int(r.get("version", 1))) for r in entry.get("references") or ())
    version = entry.get("version")
    return Schema(_format(path), text, refs, subject, int(version) if version is not None else None, [f"file {path}"], references, binary)


def _named_schema(path: Path) -> Schema:
    text, binary = _read(path)
    stem = path.stem
    if stem.isdigit():
        return Schema(_format(path), text, [SchemaRef(ID, int(stem))], None, None, [f"file {path}"], (), binary)
    versioned = _VERSIONED.match(stem)
    subject, version = (versioned.group("subject"), int(versioned.group("version"))) if versioned else (stem, None)
    return Schema(
        _format(path),
        text,
        [SchemaRef("subject", f"{subject}" + (f" v{version}" if version else ""))],
        subject,
        version,
        [f"file {path}"],
        (),
        binary,
    )
