"""Recognising Kafka frames in bytes of unknown alignment.

Used to tell which side of a connection on an unknown port is the client, to find the first frame of a capture
that starts mid-stream, and to find the next frame after a gap. A request is recognised by its header (size,
known API key, version in range, non-negative correlation id, printable client id); a response by its size and
a correlation id that an outstanding request is waiting for.
"""

from __future__ import annotations

import codecs
import functools
import re
import struct
from typing import Collection, Iterator

from kdissect.schema import Catalog

_REQUEST = struct.Struct(">ihhih")
_RESPONSE = struct.Struct(">ii")
_SIZE = struct.Struct(">i").unpack_from
REQUEST_PROBE = 14
"""Bytes needed to judge a request header: size, key, version, correlation id, client id length."""
FEW_IDS = 16
_PLAUSIBLE_SIZE = re.compile(rb"(?=[\x00-\x7f].......)", re.S)
CHECKED_RESPONSE = 256 << 10
"""Responses up to this size are checked for a plausible frame after them before resync trusts them; a larger
one is taken on its correlation id alone, since waiting for its end would hold too much out of sync."""


@functools.lru_cache(maxsize=8)
def _request_candidates(keys: int, top_version: int) -> re.Pattern[bytes]:
    """A cheap pre-filter run in C over the buffer, for API keys below `keys` and versions up to `top_version`;
    candidates are then checked in full. Past 127 (users' specs can go there) a high byte may be non-zero."""

    def int16(most: int) -> bytes:
        return rb"\x00[\x00-\x7f]" if most < 0x80 else rb"[\x00-\x%02x]." % (most >> 8)

    head = int16(keys - 1) + int16(top_version)
    return re.compile(rb"(?=[\x00-\x7f]..." + head + rb"[\x00-\x7f]...(?:\xff\xff|[\x00-\x7f].))", re.S)


def plausible_request(buf: bytes | bytearray, pos: int, max_size: int, catalog: Catalog) -> bool | None:
    """Whether a request header of an API the catalogue knows starts at `pos`; None when too few bytes are there to tell."""
    if len(buf) - pos < REQUEST_PROBE:
        return None
    size, key, version, correlation, client_len = _REQUEST.unpack_from(buf, pos)
    if size < 10 or size > max_size or correlation < 0:
        return False
    if not catalog.known_request(key, version):
        return False
    if client_len == -1:
        return True
    if client_len < 0 or client_len > size - 10:
        return False
    end = pos + REQUEST_PROBE + client_len
    try:
        if len(buf) < end:
            # judge the part present: a bogus length must not hold up the search until its bytes arrive
            head = _utf8_prefix(bytes(buf[pos + REQUEST_PROBE :]))
            return None if head.isprintable() else False
        return bytes(buf[pos + REQUEST_PROBE : end]).decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return False


def _utf8_prefix(data: bytes) -> str:
    """Decode, leaving a character cut at the end undecoded; UnicodeDecodeError for invalid bytes."""
    return codecs.getincrementaldecoder("utf-8")().decode(data)


def find_request(buf: bytes | bytearray, start: int, max_size: int, catalog: Catalog) -> tuple[int | None, int]:
    """(position of the first request header at or after `start`, or None; where a later search should resume)."""
    for match in _request_candidates(len(catalog.max_version), catalog.top_version).finditer(buf, start):
        pos = match.start()
        verdict = plausible_request(buf, pos, max_size, catalog)
        if verdict:
            return pos, pos
        if verdict is None:
            return None, pos
    return None, max(start, len(buf) - REQUEST_PROBE + 1)


def frames_fill(buf: bytes | bytearray, max_size: int, min_size: int = 4) -> bool:
    """Whether the buffer is exactly a chain of frames with plausible sizes.

    Segments usually start at frame boundaries; when the bytes after a gap or at the start of a capture parse
    as whole frames ending exactly where the data does, they are frames, even with no request to match.
    """
    pos = 0
    while pos + 4 <= len(buf):
        size = _RESPONSE.unpack_from(buf, pos)[0] if pos + 8 <= len(buf) else -1
        if not min_size <= size <= max_size:
            return False
        pos += 4 + size
    return pos == len(buf) > 0


def _candidates(buf: bytes | bytearray, start: int, correlations: Collection[int]) -> Iterator[int]:
    """Positions from `start` where an outstanding correlation id follows a size prefix below 2**31.

    A few ids make one regex, compiled once per set. Thousands would make an alternation the regex engine tries
    one by one at every byte (seconds per MiB while out of sync): then each plausible position is checked
    against a set instead.
    """
    if len(correlations) <= FEW_IDS:
        yield from (match.start() for match in _ids_pattern(tuple(correlations)).finditer(buf, start))
        return
    ids = set(correlations)
    for match in _PLAUSIBLE_SIZE.finditer(buf, start):
        if _SIZE(buf, match.start() + 4)[0] in ids:
            yield match.start()


@functools.lru_cache(maxsize=256)
def _ids_pattern(correlations: tuple[int, ...]) -> re.Pattern[bytes]:
    ids = b"|".join(re.escape(c.to_bytes(4, "big", signed=True)) for c in correlations)
    return re.compile(rb"(?=[\x00-\x7f]...(?:" + ids + rb"))", re.S)


def find_response(buf: bytes | bytearray, start: int, max_size: int, correlations: Collection[int]) -> tuple[int | None, int]:
    """Like `find_request`, for a response: one whose correlation id is one of `correlations`, or a run of
    whole frames from the start of the buffer (`frames_fill`).

    Eight bytes are weak evidence: small ids are common inside zero-heavy record data. So a candidate of up to
    `CHECKED_RESPONSE` bytes must also end where the data ends or where another plausible size prefix starts.
    """
    if frames_fill(buf, max_size):
        return 0, 0
    if not correlations:
        return None, max(start, len(buf) - 7)
    for pos in _candidates(buf, start, correlations):
        size = _RESPONSE.unpack_from(buf, pos)[0]
        if not 4 <= size <= max_size:
            continue
        end = pos + 4 + size
        if size > CHECKED_RESPONSE or end == len(buf):
            return pos, pos
        if end + 4 > len(buf):
            return None, pos  # what follows it has not arrived yet
        if 4 <= _SIZE(buf, end)[0] <= max_size:
            return pos, pos
    return None, max(start, len(buf) - 7)
