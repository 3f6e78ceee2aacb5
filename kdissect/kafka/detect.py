"""Recognising Kafka frames in bytes of unknown alignment.

Used to tell which side of a connection on an unknown port is the client, to find the first frame of a capture
that starts mid-stream, and to find the next frame after a gap. A request is recognised by its header (size,
known API key, version in range, non-negative correlation id, printable client id); a response by its size and
a correlation id that an outstanding request is waiting for.
"""

from __future__ import annotations

import codecs
import re
import struct
from typing import Collection

from kdissect.schema import APIS

_REQUEST = struct.Struct(">ihhih")
_RESPONSE = struct.Struct(">ii")
REQUEST_PROBE = 14
"""Bytes needed to judge a request header: size, key, version, correlation id, client id length."""

MAX_VERSION = [-1] * (max(APIS) + 1)
for _key, _api in APIS.items():
    MAX_VERSION[_key] = _api.max_version

_REQUEST_CANDIDATE = re.compile(rb"(?=[\x00-\x7f]...\x00[\x00-\x7f]\x00[\x00-\x7f][\x00-\x7f]...(?:\xff\xff|[\x00-\x7f].))", re.S)
"""A cheap pre-filter run in C over the buffer; candidates are then checked in full."""


def plausible_request(buf: bytes | bytearray, pos: int, max_size: int) -> bool | None:
    """Whether a request header starts at `pos`; None when too few bytes are there to tell."""
    if len(buf) - pos < REQUEST_PROBE:
        return None
    size, key, version, correlation, client_len = _REQUEST.unpack_from(buf, pos)
    if size < 10 or size > max_size or correlation < 0:
        return False
    if not (0 <= key < len(MAX_VERSION) and 0 <= version <= MAX_VERSION[key]):
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


def find_request(buf: bytes | bytearray, start: int, max_size: int) -> tuple[int | None, int]:
    """(position of the first request header at or after `start`, or None; where a later search should resume)."""
    for match in _REQUEST_CANDIDATE.finditer(buf, start):
        pos = match.start()
        verdict = plausible_request(buf, pos, max_size)
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


def find_response(
    buf: bytes | bytearray, start: int, max_size: int, correlations: Collection[int]
) -> tuple[int | None, int]:
    """Like `find_request`, for a response: one whose correlation id is one of `correlations`, or a run of
    whole frames from the start of the buffer (`frames_fill`)."""
    if frames_fill(buf, max_size):
        return 0, 0
    if not correlations:
        return None, max(start, len(buf) - 7)
    ids = b"|".join(re.escape(c.to_bytes(4, "big", signed=True)) for c in correlations)
    for match in re.compile(rb"(?=[\x00-\x7f]...(?:" + ids + rb"))", re.S).finditer(buf, start):
        pos = match.start()
        size = _RESPONSE.unpack_from(buf, pos)[0]
        if 4 <= size <= max_size:
            return pos, pos
    return None, max(start, len(buf) - 7)
