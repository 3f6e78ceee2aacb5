"""The job's configuration: what the driver ships to every task as plain values (JSON-able), and the core's
`Options`, decoder and filter each task makes of it. Both engines make theirs here, so they dissect alike.

Keys: `paths` (file id -> capture), `ports`, `filter` (the -Y text), `tls_keylog` (bytes), `tls_secrets` (file id ->
the key logs a pcapng embeds), `spec_files` and `spec_keys` (the users' specs as text), and what tests set
(`reorder`, `max_frame_size`, `show_secrets`), and the value reader's `schemas` and `schema_registry`.
"""

from __future__ import annotations

import json
from typing import Any

from kdissect.decode.decoder import Decoder
from kdissect.dissector import Options, make_decoder
from kdissect.filter import Filter, compile_filter
from kdissect.limits import Limits
from kdissect.schema import Catalog, catalog_with
from kdissect.schema.user_specs import SpecFile, load

_catalogs: dict[str, Catalog] = {}
_readers: dict[str, Any] = {}
"""A Python worker's value readers by the schemas they were given, kept across its tasks with what they compiled."""
_decoders: dict[str, Decoder] = {}
"""A Python worker's decoders by the configuration that shapes them, kept across its tasks (Spark reuses
workers): compiling a task's decoders costs about 0.15 s, a tenth of a 16 MiB range's work."""


def catalog_of(config: dict[str, Any]) -> Catalog:
    """The catalogue of the users' specs the driver sent with the job, read again from the files' text (executors
    need not see the driver's files); made once per worker and set of specs."""
    files = config.get("spec_files")
    if not files:
        return catalog_with(())
    key = json.dumps([files, config.get("spec_keys")])
    catalog = _catalogs.get(key)
    if catalog is None:
        specs = load([SpecFile(path, text) for path, text in files], config.get("spec_keys") or ())
        catalog = _catalogs[key] = catalog_with(specs.definitions)
    return catalog


def options_of(config: dict[str, Any]) -> Options:
    return Options(
        ports=frozenset(config.get("ports") or (9092,)),
        limits=Limits(max_frame_size=config.get("max_frame_size", Limits().max_frame_size)),
        reorder=config.get("reorder", True),
        show_secrets=config.get("show_secrets", False),
        tls_keylog=config.get("tls_keylog", b""),
        catalog=catalog_of(config),
    )


def filter_of(config: dict[str, Any], catalog: Catalog, values: Any = None) -> Filter:
    """The job's -Y filter (checked by the driver before anything runs); `values` reads the record fields it names."""
    return compile_filter([("-Y", config["filter"])] if config.get("filter") else [], catalog, values)


def values_of(config: dict[str, Any]) -> Any:
    """The worker's value reader for the schemas the driver sent (--schemas) and its registry (--schema-registry), kept
    for the worker's next tasks with what it compiled and asked."""
    key = json.dumps([config.get("schemas"), config.get("schema_registry")])
    reader = _readers.get(key)
    if reader is None:
        from kdissect.schema.code_cache import base
        from kdissect.values.reader import ValueReader
        from kdissect.values.schemas import Book, schema_from_record

        book = Book()
        for told in config.get("schemas") or ():
            book.add(schema_from_record(told))
        fetch = None
        if config.get("schema_registry"):
            from kdissect.values.registry import RegistryClient

            fetch = RegistryClient(config["schema_registry"], base(), lambda message: None)
        reader = _readers[key] = ValueReader(book, None, fetch)
        reader.learns = False  # what a record says must not depend on which connections a task read before
    return reader


def decoder_of(config: dict[str, Any], options: Options) -> Decoder:
    """The worker's decoder for `config` (limits, secrets, users' specs), its capture budget started again."""
    key = json.dumps([options.limits, options.show_secrets, config.get("spec_files"), config.get("spec_keys")], default=repr)
    decoder = _decoders.get(key)
    if decoder is None:
        made = make_decoder(options)
        assert made is not None  # options_of decodes bodies
        decoder = _decoders[key] = made
    decoder.new_capture()
    return decoder
