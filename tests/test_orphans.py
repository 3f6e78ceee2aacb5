"""Responses read without their request (issue 14, S7) and ApiVersions' v0 fallback.

Orphans are made from real captures by dropping the packet that carries a request: the response then keeps its
bytes (`body_raw`), and when they read whole as one API only, the decode kdissect makes of them equals the one it
makes with the request in the capture.
"""

from __future__ import annotations

import struct
from pathlib import Path

from kdissect.capture import open_capture
from kdissect.dissector import Options, make_dissector
from kdissect.events import Exchange
from kdissect.testing import craft
from kdissect.testing.craft import CLIENT, SERVER
from kdissect.views.json_lines import decode_bytes, exchange_json

CAPTURES = Path(__file__).resolve().parent.parent / "captures"


def exchanges(packets) -> list[Exchange]:
    return [e for e in make_dissector(Options()).run(packets) if isinstance(e, Exchange)]


def orphaned(name: str, api_key: int) -> list[tuple[Exchange, Exchange]]:
    """(the exchange with its request, the orphan its response becomes without it), for every request of an API
    that fits in one packet."""
    with open_capture(CAPTURES / f"{name}.pcap") as capture:
        packets = list(capture.packets())
    out = []
    for exchange in exchanges(packets):
        if exchange.api_key != api_key or exchange.response is None:
            continue
        frame = exchange.request.frame
        if frame.first_packet != frame.last_packet:
            continue
        without = [p for p in packets if p.index != frame.first_packet]
        [orphan] = [
            e
            for e in exchanges(without)
            if e.response is not None
            and e.response.frame.offset == exchange.response.frame.offset
            and e.connection.client == exchange.connection.client
        ]
        out.append((exchange, orphan))
    return out


def test_an_orphan_response_keeps_its_bytes_and_reads_as_its_api_when_they_tell() -> None:
    pairs = orphaned("consumer-group-kafka-python", 3)  # Metadata v12
    assert pairs
    for whole, orphan in pairs:
        assert orphan.status == "orphan-response"
        shown, original = exchange_json(orphan)["response"], exchange_json(whole)["response"]
        header_length = whole.response.header.length
        assert decode_bytes(shown["body_raw"]) == whole.response.frame.data[header_length:]
        assert (shown["schema"], shown["schema_version"], shown["assumed_version"]) == ("MetadataResponse", 12, True)
        assert shown["body"] == original["body"]
        assert [d["code"] for d in shown["diagnostics"]] == ["body.guessed"]


def test_an_orphan_whose_bytes_fit_several_apis_stays_raw() -> None:
    """A Heartbeat response (throttle time and error code: six bytes) reads whole as many APIs: no guess."""
    pairs = orphaned("consumer-group-kafka-python", 12)
    assert pairs
    for whole, orphan in pairs:
        shown = exchange_json(orphan)["response"]
        assert (shown["schema"], shown["body"]) == (None, None)
        assert decode_bytes(shown["body_raw"]) == whole.response.frame.data[4:]  # all after the correlation id


def test_api_versions_answered_in_the_v0_layout_with_unsupported_version() -> None:
    """A broker that does not know ApiVersions v4 answers, as Kafka specifies, in the v0 layout: error 35 and the
    range it supports."""
    conv = craft.Conversation()
    request = craft.request(18, 4, 1, b"\x08kdtests\x041.0\x00")
    body = struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, 0, 3)
    packets = conv.handshake() + conv.send(CLIENT, request) + conv.send(SERVER, craft.response(1, body)) + conv.close()
    [exchange] = exchanges(packets)
    shown = exchange_json(exchange)
    assert exchange.status == "error"
    assert (shown["response"]["schema"], shown["response"]["schema_version"]) == ("ApiVersionsResponse", 0)
    assert shown["response"]["body"] == {"ErrorCode": 35, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]}
    assert [(e["code"], e["name"]) for e in shown["errors"]] == [(35, "UNSUPPORTED_VERSION")]
    [note] = [d for d in shown["response"]["diagnostics"]]
    assert note["code"] == "body.version-fallback" and "it supports ApiVersions v0-v3" in note["message"]


def test_api_versions_at_its_own_version_is_read_at_it() -> None:
    """The real captures' ApiVersions v3 and v4 answers stay read at their version."""
    with open_capture(CAPTURES / "client-kafka-python.pcap") as capture:
        found = [e for e in exchanges(list(capture.packets())) if e.api_key == 18]
    assert found and all(e.response.body.version == e.api_version and e.status == "ok" for e in found)
