"""Request and response headers, read by the core itself: pairing needs them before (and without) a body decoder."""

from __future__ import annotations

import struct

from kdissect.events import RequestHeader, ResponseHeader, TaggedField, new_request_header, new_response_header
from kdissect.schema import Catalog
from kdissect.wire import INT16, INT32, WireError, read_uvarint

_REQUEST = struct.Struct(">hhi").unpack_from


class HeaderError(ValueError):
    """A header that cannot be read; `offset` is where in the frame reading failed."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.offset = offset


def _tagged(data: bytes, pos: int) -> tuple[tuple[TaggedField, ...], int]:
    try:
        count, pos = read_uvarint(data, pos)
        fields = []
        for _ in range(count):
            tag, pos = read_uvarint(data, pos)
            size, pos = read_uvarint(data, pos)
            if pos + size > len(data):
                raise HeaderError(f"tagged field {tag} claims {size} bytes past the end of the frame", pos)
            fields.append(TaggedField(tag, data[pos : pos + size], pos))
            pos += size
    except WireError as exc:
        raise HeaderError(str(exc), pos) from None
    return tuple(fields), pos


def parse_request_header(data: bytes, catalog: Catalog) -> RequestHeader:
    """The header's version follows from the request's API and version, by the catalogue's flexible versions."""
    if len(data) < 8:
        raise HeaderError(f"a request header needs 8 bytes, the frame holds {len(data)}", len(data))
    api_key, api_version, correlation_id = _REQUEST(data, 0)
    version = catalog.request_header_version(api_key, api_version)
    pos = 8
    client_id = None
    if version >= 1:
        if len(data) < 10:
            raise HeaderError("the frame ends before the client id", len(data))
        length = INT16(data, 8)[0]
        pos = 10
        if length >= 0:
            if pos + length > len(data):
                raise HeaderError(f"the client id claims {length} bytes past the end of the frame", pos)
            client_id = data[pos : pos + length].decode("utf-8", "replace")
            pos += length
        elif length != -1:
            raise HeaderError(f"the client id has an invalid length {length}", 8)
    tagged: tuple[TaggedField, ...] = ()
    if version >= 2:
        tagged, pos = _tagged(data, pos)
    return new_request_header(api_key, api_version, correlation_id, client_id, version, pos, tagged, catalog.names.get(api_key))


def parse_response_header(data: bytes, api_key: int | None, api_version: int | None, catalog: Catalog) -> ResponseHeader:
    """The response header's version follows from its request's; an orphan response is read as version 0."""
    if len(data) < 4:
        raise HeaderError(f"a response header needs 4 bytes, the frame holds {len(data)}", len(data))
    correlation_id = INT32(data, 0)[0]
    version = 0 if api_key is None or api_version is None else catalog.response_header_version(api_key, api_version)
    if version >= 1:
        tagged, pos = _tagged(data, 4)
        return new_response_header(correlation_id, version, pos, tagged)
    return new_response_header(correlation_id, version, 4, ())
