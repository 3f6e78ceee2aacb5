"""Where a run's schemas come from (docs/values.md): `--schemas DIR`, `--schema-registry URL`, and the capture itself,
made into the `values.reader.ValueReader` every view reads keys and values with.

From the capture, two ways: as the core reads it, the registry's HTTP conversations it meets (`Options.side_streams`)
and the `_schemas` records it decodes teach the reader as they come; and for a file, the first time a value names a
schema nobody knows yet, one pass over the whole file learns every schema it holds (clients often fetch a schema
after the records that name it), so what a record says never depends on where in the capture it sits.

The reader and the HTTP reading are made when first needed: a run whose values are plain text or bytes, with no HTTP
in its capture, never loads them (start-up is most of what reading a small capture costs).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kdissect.commands.options import UserError


class Lazy:
    """An object made by `make` at its first use; until then, nothing of it is imported."""

    __slots__ = ("_made", "_make")

    def __init__(self, make: Callable[[], Any]) -> None:
        object.__setattr__(self, "_made", None)
        object.__setattr__(self, "_make", make)

    def made(self) -> Any:
        if self._made is None:
            object.__setattr__(self, "_made", self._make())
        return self._made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.made(), name)

    def __call__(self, *args: Any) -> Any:
        return self.made()(*args)


def make_values(folders: list[Path] | None, registry: str | None, capture: str | None, options: Callable[[], Any]) -> tuple[Any, Any]:
    """(the reader, the HTTP learning for the core's `Options.side_streams`), each made at its first use; `options` gives
    the run's core options (made after the filter, which reads with the reader), for a file's learning pass. A
    UserError now for a folder that cannot be read or a registry that is no URL."""
    book = None
    if folders:
        from kdissect.values.directory import FolderError, load_folder
        from kdissect.values.schemas import Book

        book = Book()
        for folder in folders:
            try:
                load_folder(folder, book)
            except FolderError as exc:
                raise UserError(str(exc)) from None
    if registry is not None and not registry.startswith(("http://", "https://")):
        raise UserError(f"--schema-registry {registry}: give an http:// or https:// URL")
    reader: Lazy

    def learning() -> Any:
        from kdissect.values.http_sink import HttpLearning

        return HttpLearning(lambda schemas: reader.book.learn(schemas))

    side_streams = Lazy(learning)

    def make() -> Any:
        from kdissect.values.reader import ValueReader
        from kdissect.values.schemas import Book

        fetch = None
        if registry is not None:
            from kdissect.schema.code_cache import base
            from kdissect.values.registry import RegistryClient

            fetch = RegistryClient(registry, base(), _warn)
        made = ValueReader(book if book is not None else Book(), None, fetch)
        made.registry_seen = lambda: made.schemas_seen or (side_streams._made is not None and side_streams.registries > 0)
        if capture and capture != "-":
            made.learn = learn_from_file(capture, options(), made.book)
        return made

    reader = Lazy(make)
    return reader, side_streams


def _warn(message: str) -> None:
    sys.stderr.write(f"kdissect: {message}\n")
    sys.stderr.flush()


def learn_from_file(path: str, options: Any, book: Any) -> Callable[[], None]:
    """A pass over the file that learns every schema it holds: the registry's HTTP answers, `_schemas` records (only
    Produce and Fetch bodies are decoded). A file that cannot be read again teaches nothing here; the main pass says
    what is wrong with it."""

    def learn() -> None:
        from kdissect.capture.source import CaptureError, open_capture
        from kdissect.decode.body import Body
        from kdissect.dissector import file_dissector
        from kdissect.events import Exchange, RequestHeader
        from kdissect.schema import ApiKey
        from kdissect.values.answers import from_schemas_record
        from kdissect.values.http_sink import HttpLearning
        from kdissect.values.reader import SCHEMAS_TOPIC

        wanted = (ApiKey.PRODUCE, ApiKey.FETCH)
        keep = lambda info, request, response: isinstance(request.header, RequestHeader) and request.header.api_key in wanted
        learning = HttpLearning(book.learn)
        try:
            source = open_capture(path)
        except CaptureError:
            return
        with source:
            dissector = file_dissector(source, replace(options, keep=keep, side_streams=learning))
            for event in dissector.run(source.packets()):
                if not isinstance(event, Exchange):
                    continue
                for message in (event.request, event.response):
                    body = message.body if message is not None and isinstance(message.body, Body) else None
                    for placed in body.records if body is not None else ():
                        if placed.topic != SCHEMAS_TOPIC:
                            continue
                        for record in placed.records.data_records():
                            schema = from_schemas_record(record.key, record.value, f"capture: _schemas record (exchange {event.id})")
                            if schema is not None:
                                book.add(schema)

    return learn


def met_registry(reader: Any, side_streams: Any) -> bool:
    """Whether a run met the capture's own registry (its HTTP, its _schemas records): its values then read as the
    order of that run's learning made them, which only a read of the whole file gives again."""
    http = getattr(side_streams, "_made", None)
    made = getattr(reader, "_made", None)
    return (http is not None and http.registries > 0) or (made is not None and made.schemas_seen)
