"""How every driver builds the core: one set of options, one way to make a dissector with its decoder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kdissect.dissector import DEFAULT_PORTS, Dissector
from kdissect.limits import DEFAULT_LIMITS, Limits


MAKE = object()
"""`make_dissector`'s default: make the decoder the options ask for."""


@dataclass(frozen=True, slots=True)
class Options:
    ports: frozenset[int] = DEFAULT_PORTS
    limits: Limits = DEFAULT_LIMITS
    reorder: bool = True
    decode: bool = True
    """Decode bodies and records; without it only headers are read (pairing and latency still work)."""
    show_secrets: bool = False
    spans: bool = False
    """Record every field's byte span (for the hex view); costs decoding time."""


def make_decoder(options: Options):
    """The body decoder the options ask for, or None. Its compiled decoders are kept: share it to reuse them."""
    if not options.decode:
        return None
    from kdissect.decode.decoder import Decoder

    return Decoder(options.limits, spans=options.spans, show_secrets=options.show_secrets)


def make_dissector(options: Options, decoder: Any = MAKE) -> Dissector:
    """A dissector for the options; pass a decoder (from `make_decoder`) to share one across dissectors."""
    if decoder is MAKE:
        decoder = make_decoder(options)
    return Dissector(ports=options.ports, limits=options.limits, reorder=options.reorder, decoder=decoder)
