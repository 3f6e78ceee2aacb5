"""A capture whose strings were chosen by an attacker: terminal escapes, line breaks, C1 controls, bidirectional
overrides, rich markup and HTML in every place a capture carries text, written by kdissect's own encoders.

Every view is tested with it (tests/test_wire_text.py, tests/test_browse.py, tests/test_report_browser.py): none
may act on these strings, read them as markup, or fail on them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kdissect.capture.linktypes import LINKTYPE_ETHERNET
from kdissect.capture.writer import PcapWriter
from kdissect.records.encode import Draft, encode_batch
from kdissect.schema import BUILTIN, ApiKey, ErrorCode
from kdissect.testing.body_encoder import encode_body
from kdissect.testing.craft import CLIENT, SERVER, Clock, Conversation, request, response

HOSTILE = (
    "\x1b]0;pwned\x07",  # retitles the terminal's window
    "\x1b]52;c;aGk=\x07",  # writes the clipboard
    "\x1b[2J",  # clears the screen
    "line\nbreak",  # forges an output row
    "tab\there",
    "\x9b",  # CSI, the C1 form
    "\u2028",
    "\u202e",  # right-to-left override
    "a[/x]b",  # a closing tag nothing opened: rich's and Textual's markup parsers raise
    "[bold red]x[/]",
    "[link=https://example.com]click[/link]",
    "</script><script>alert(1)</script>",  # ends a script element that holds JSON
    "<!--<script>",  # a script element's escaped state, where `</script>` no longer ends it
    "<img src=x onerror=alert(2)>",  # markup, if anything wrote it as HTML
)
CALLS = 3
"""Exchanges per string: ApiVersions (the client software's name), Produce (topic, records, error messages) and
JoinGroup (group, reason, protocol, leader, member)."""


def hostile_capture(path: Path) -> Path:
    """A connection per string of HOSTILE, the string in each of them as its client id, its client software's name,
    the topic it produces to, a record's key, value and header key, the error messages of the answer, the group it
    joins and the reason it gives, the group's protocol, leader and member id."""
    clock, packets = Clock(), []
    for k, text in enumerate(HOSTILE):
        conversation = Conversation(client_port=41000 + k, clock=clock)
        packets += conversation.handshake()
        raw = text.encode()
        records = encode_batch([Draft(raw, raw, ((text, raw),), 1_700_000_000_000)])
        partition = {
            "Index": 0,
            "ErrorCode": ErrorCode.INVALID_RECORD,
            "ErrorMessage": text,
            "RecordErrors": [{"BatchIndex": 0, "BatchIndexErrorMessage": text}],
        }
        calls: list[tuple[int, int, dict[str, Any], dict[str, Any]]] = [
            (
                ApiKey.API_VERSIONS,
                3,
                {"ClientSoftwareName": text, "ClientSoftwareVersion": "1"},
                {"ApiKeys": [{"ApiKey": 0, "MaxVersion": 9}]},
            ),
            (
                ApiKey.PRODUCE,
                9,
                {"Acks": -1, "TimeoutMs": 1000, "TopicData": [{"Name": text, "PartitionData": [{"Index": 0, "Records": records}]}]},
                {"Responses": [{"Name": text, "PartitionResponses": [partition]}]},
            ),
            (
                ApiKey.JOIN_GROUP,
                9,
                {"GroupId": text, "ProtocolType": "consumer", "Protocols": [{"Name": text, "Metadata": b""}], "Reason": text},
                {"GenerationId": 1, "ProtocolType": "consumer", "ProtocolName": text, "Leader": text, "MemberId": text},
            ),
        ]
        for correlation, (key, version, asked, answered) in enumerate(calls, 1):
            frame = request(key, version, correlation, encode_body(key, version, "request", asked), client_id=text)
            packets += conversation.send(CLIENT, frame)
            body = encode_body(key, version, "response", answered)
            packets += conversation.send(SERVER, response(correlation, body, BUILTIN.response_header_version(key, version)))
        packets += conversation.close()
    with open(path, "wb") as stream:
        PcapWriter(stream, LINKTYPE_ETHERNET).write_all(packets)
    return path
