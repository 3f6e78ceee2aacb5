"""The index of one capture, as kept in the cache: a few numbers per exchange in typed arrays, what the decoder
learnt over the whole capture, and where every CHECKPOINT-th packet starts in the file.

The numbers are those an exchange's headers and frames give, whoever decoded its bodies: a run under a filter,
or with other processes (`read --jobs`), indexes exactly what a run of every body would. An entry is keyed by the
capture's identity (pipeline/table_cache.py: path, size, modification time and a digest of its ends) and by what
shapes the exchanges (ports, limits, the index's own format): a changed file, or other options, never answer from
a stale index. Entries live under `index/` of the cache folder and share the tables' size budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
import zstandard

from kdissect.decode.session import State
from kdissect.events import ConnectionInfo, Endpoint
from kdissect.pipeline import table_cache
from kdissect.schema.code_cache import base

FORMAT = 2
"""Changed whenever what an entry holds changes: an older kdissect's entries are then never read."""
INDEX = ".kdx"
"""The suffix of an index entry (browse keeps its own kind beside it: browsed.py)."""
NO_HEADER = -1
"""The API column without a request header (browse.index.SASL_TOKEN: for a raw SASL token's exchange)."""
T = TypeVar("T")


@dataclass
class Columns:
    """One typed array per number kept of an exchange; position i holds exchange i + 1 (exchanges are numbered in
    the order they complete, and every one of them is indexed)."""

    ts: array = field(default_factory=lambda: array("q"))
    """The exchange's time: its request's (its response's, for an orphan)."""
    latency: array = field(default_factory=lambda: array("q"))
    correlation: array = field(default_factory=lambda: array("q"))
    first: array = field(default_factory=lambda: array("q"))
    last: array = field(default_factory=lambda: array("q"))
    """The first and last packet numbers of its frames."""
    queued: array = field(default_factory=lambda: array("q"))
    request_offset: array = field(default_factory=lambda: array("q"))
    response_offset: array = field(default_factory=lambda: array("q"))
    """Stream offsets of its frames: read back from mid-stream, the core counts from where it started."""
    connection: array = field(default_factory=lambda: array("l"))
    client: array = field(default_factory=lambda: array("l"))
    """The number of its interned client id."""
    ahead: array = field(default_factory=lambda: array("l"))
    api: array = field(default_factory=lambda: array("h"))
    version: array = field(default_factory=lambda: array("h"))
    flags: array = field(default_factory=lambda: array("b"))
    """The bits of `browse.index.flags_of`."""
    status: array = field(default_factory=lambda: array("b"))
    """The status's place in `events.Status`: what the read-back must find again."""

    def named(self) -> dict[str, array]:
        return dict(vars(self))

    def __len__(self) -> int:
        return len(self.ts)


@dataclass
class CaptureIndex:
    """What the cache keeps of a capture."""

    columns: Columns
    clients: list[str | None]
    connections: dict[int, ConnectionInfo]
    """Only plain TCP connections: an index with TLS connections among its rows is not answered from (their
    records' keys come from the handshake, which only a read from the start has)."""
    tls: frozenset[int]
    """Connections that are TLS: their exchanges are never read back alone."""
    starts: dict[int, int]
    """Each connection's first packet that carries a frame: where a read-back starts when one from a later
    checkpoint cannot tell its requests (a client id that is not text, say)."""
    offsets: list[int]
    """File offsets of every CHECKPOINT-th packet (browse/scan.py)."""
    packets: int
    topic_names: dict[str, str]
    sessions: list[State]
    """Each connection's decoder session at the capture's end (by connection id - 1)."""
    damage: dict[str, int]
    """Diagnostics of severity error by code, as the full read counted them: the exit status it earned."""
    registry: bool
    """The capture holds its own schema registry's traffic: its values read as a whole read learns them, so the
    index does not answer (commands/value_sources.py's `met_registry`)."""


def shape(options: Any) -> str:
    """What shapes the exchanges besides the file: another value reads as another index."""
    return repr((FORMAT, sorted(options.ports), options.limits, options.reorder, options.decode, options.show_secrets))


def place(capture: str, options: Any, kind: str) -> str | None:
    """Where the capture's entry of `kind` for these options belongs; None without a cache, or when the capture
    cannot be read for its identity."""
    folder = base()
    if folder is None:
        return None
    try:
        identity = table_cache.identity(capture)
    except OSError:
        return None
    digest = hashlib.sha256(f"{identity}\0{shape(options)}".encode()).hexdigest()[:32]
    return os.path.join(folder, "index", digest + kind)


def load(capture: str, options: Any) -> CaptureIndex | None:
    """The capture's index, when an earlier run kept one for these options and the file has not changed since."""
    path = kept(capture, options)
    return None if path is None else loaded(path, _parsed)


def loaded(path: str, parse: Callable[[Any, bytes], T]) -> T | None:
    """The entry at `path` (`place`), parsed from its JSON head and its columns' bytes; None when there is none."""
    try:
        with open(path, "rb") as f:
            data = zstandard.ZstdDecompressor().decompress(f.read())
        os.utime(path)  # its last use: the budget removes the oldest first
        head, _, body = data.partition(b"\n")
        return parse(orjson.loads(head), body)
    except OSError:
        return None
    except (zstandard.ZstdError, orjson.JSONDecodeError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        # not what keep wrote (a damaged cache): the file is read, and this run keeps a whole entry in its place
        with contextlib.suppress(OSError):
            os.remove(path)
        return None


def kept(capture: str, options: Any, kind: str = INDEX) -> str | None:
    """Where the capture's entry of `kind` for these options is, when one is kept (whether it loads is `loaded`'s
    to say)."""
    path = place(capture, options, kind)
    return path if path is not None and os.path.exists(path) else None


def filled(columns: list[array], length: int, body: bytes) -> None:
    """`columns`, each given `length` numbers from `body`, which they must fill exactly."""
    at = 0
    for column in columns:
        size = length * column.itemsize
        column.frombytes(body[at : at + size])
        at += size
    if at != len(body) or any(len(column) != length for column in columns):
        raise ValueError("the columns do not fill the entry")


def _parsed(meta: Any, body: bytes) -> CaptureIndex:
    columns = Columns()
    filled(list(columns.named().values()), meta["lengths"], body)
    return CaptureIndex(
        columns,
        meta["clients"],
        {c["id"]: _connection(c) for c in meta["connections"]},
        frozenset(meta["tls"]),
        {c["id"]: c["start"] for c in meta["connections"]},
        meta["offsets"],
        meta["packets"],
        meta["topic_names"],
        [(s[0], s[1], s[2]) for s in meta["sessions"]],
        meta["damage"],
        meta["registry"],
    )


def save(capture: str, options: Any, index: CaptureIndex) -> None:
    """Keep `index` for `capture`."""
    columns = index.columns
    meta = {
        "lengths": len(columns),
        "clients": index.clients,
        "connections": [_connection_json(info, index.starts[info.id]) for info in index.connections.values()],
        "tls": sorted(index.tls),
        "offsets": index.offsets,
        "packets": index.packets,
        "topic_names": index.topic_names,
        "sessions": index.sessions,
        "damage": index.damage,
        "registry": index.registry,
    }
    path = place(capture, options, INDEX)
    if path is not None:
        keep(path, orjson.dumps(meta), list(columns.named().values()))


def keep(path: str, meta: bytes, columns: list[array]) -> None:
    """Keep `meta` (JSON) and the bytes of `columns` as the entry at `path` (`place`), made whole beside it and
    renamed into it; older entries past the budget go."""
    data = meta + b"\n" + b"".join(column.tobytes() for column in columns)
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        handle, scratch = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        with os.fdopen(handle, "wb") as f:
            f.write(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(data))  # a flipped bit is refused
        os.replace(scratch, path)
    except OSError:  # a cache that cannot be written costs the next run its speed, never this one its output
        return
    table_cache.evict(folder, table_cache.budget(), keep=path)


def _connection_json(info: ConnectionInfo, start: int) -> dict[str, Any]:
    client, broker = info.client, info.broker
    return {"id": info.id, "client": [client.address, client.port], "broker": [broker.address, broker.port], "start": start}


def _connection(c: dict[str, Any]) -> ConnectionInfo:
    return ConnectionInfo(c["id"], Endpoint(*c["client"]), Endpoint(*c["broker"]))


def indexable(source: Any) -> bool:
    """Whether a capture source is one an index is made for: a plain pcap file, whose packets have checkpoints to
    read back from (a pcapng's blocks, a compressed stream have none yet)."""
    return bool(source.format == "pcap" and source.compression is None)


def usable(captures: tuple[str, ...], options: Any) -> str | None:
    """The capture file an index can serve or be made for: one file (not standard input, not several read as one),
    read with the generated tables and without a key log (the shape keys neither user specs nor secrets); None
    otherwise, or when the user keeps no cache."""
    if len(captures) != 1 or captures[0] == "-" or not os.path.isfile(captures[0]):
        return None
    from kdissect.schema import BUILTIN

    if options.catalog is not BUILTIN or options.tls_keylog or base() is None:
        return None
    return captures[0]
