"""Layer 4, message bodies: any bytes decoded as the body of any API key and version, request or response.

The input is a direction byte, the API key and version (int16 each), then the body. The direction byte's other
bits cut a hole in the frame (bytes a capture lost: the decoder reads up to it and salvages records after it)
and make a response an orphan (its API guessed from its bytes). Contract: the decoder never raises and never
reports an internal error; its diagnostics are located in the frame; what it returns renders as JSON.
"""

from __future__ import annotations

import struct

from fuzz.common import Broken, check_diagnostics, fuzz_limits, instrumented, main

with instrumented():
    from kdissect.decode.decoder import Decoder
    from kdissect.decode.session import Session
    from kdissect.events import ConnectionInfo, Endpoint, Exchange, Frame, Message
    from kdissect.kafka.headers import parse_request_header, parse_response_header
    from kdissect.schema import BUILTIN
    from kdissect.testing import craft
    from kdissect.views.json_lines import exchange_json

DECODER = Decoder(BUILTIN, fuzz_limits())
CONNECTION = ConnectionInfo(1, Endpoint("10.0.0.1", 40000), Endpoint("10.0.0.2", 9092))
SESSION = Session()


def _frame(data: bytes, hole: int = 0) -> Frame:
    """The frame whole, or with a hole where the control bits say, the bytes after it kept."""
    if not hole or len(data) < 16:
        return Frame(data, len(data), 0, 0, 0, 1, 1)
    start = 8 + (hole * (len(data) - 8)) // 64
    end = min(len(data), start + 1 + len(data) // 8)
    rest = ((end, data[end:]),) if end < len(data) else ()
    return Frame(data[:start], len(data), 0, 0, 0, 1, 1, rest)


def one_input(data: bytes) -> None:
    if len(data) < 5:
        return
    response, (api_key, version) = data[0] & 1, struct.unpack_from(">hh", data, 1)
    hole, orphan = data[0] >> 2 & 0x3F if data[0] & 2 else 0, data[0] & 0xFE == 0xFE
    body = data[5:]
    request_frame = craft.request(api_key, version, 7, b"" if response else body)[4:]
    request = Message(_frame(request_frame), parse_request_header(request_frame, BUILTIN))
    if not response:
        request = Message(_frame(request_frame, hole), request.header)
        decoded = DECODER.request(request, SESSION)
        exchange = Exchange(1, CONNECTION, "unanswered", decoded, None)
    else:
        header_version = BUILTIN.response_header_version(api_key, version) if api_key >= 0 else 0
        response_frame = craft.response(7, body, header_version)[4:]
        header = parse_response_header(response_frame, api_key, version, BUILTIN)
        decoded = DECODER.response(Message(_frame(response_frame, hole), header), None if orphan else request, SESSION)
        exchange = Exchange(1, CONNECTION, "orphan-response" if orphan else "ok", None if orphan else request, decoded)
    check_diagnostics(decoded.diagnostics, "body")
    for d in decoded.diagnostics:
        if d.offset is None or d.scope not in ("frame", "record"):
            raise Broken(f"a body diagnostic without a frame offset: {d!r}")
    exchange_json(exchange)


if __name__ == "__main__":
    main(one_input)
