"""The whole pipeline: any bytes as a capture file, through the core with the body decoder, out as NDJSON.

Contract: `CaptureError` at open is the only exception; no internal-error diagnostic; every event renders as
JSON, and the closing summary can be built.
"""

from __future__ import annotations

import io
import json

from fuzz.common import check_diagnostics, fuzz_limits, instrumented, main

with instrumented():
    from kdissect.capture.source import CaptureError, CaptureFile
    from kdissect.dissector import Options, make_dissector
    from kdissect.events import ConnectionEnd, Notice
    from kdissect.views import json_lines
    from kdissect.views.summary import Summary

OPTIONS = Options(ports=frozenset({9092}), limits=fuzz_limits())


def one_input(data: bytes) -> None:
    try:
        capture = CaptureFile(io.BytesIO(data), "fuzz.pcap")
    except CaptureError:
        return
    summary = Summary()
    for event in make_dissector(OPTIONS).run(capture.packets()):
        summary.add(event)
        if isinstance(event, Notice):
            check_diagnostics([event.diagnostic], "notice")
            line = json_lines.notice_json(event)
        elif isinstance(event, ConnectionEnd):
            line = json_lines.connection_end_json(event)
        else:
            check_diagnostics(event.diagnostics, "exchange")
            line = json_lines.exchange_json(event)
        json.dumps(line)
    check_diagnostics(capture.diagnostics(), "capture")


if __name__ == "__main__":
    main(one_input)
