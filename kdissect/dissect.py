"""How every driver builds the core: one set of options, one way to make a dissector with its decoder."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.dissector import DEFAULT_PORTS, Dissector
from kdissect.limits import DEFAULT_LIMITS, Limits


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


def make_dissector(options: Options) -> Dissector:
    decoder = None
    if options.decode:
        from kdissect.decode.decoder import Decoder

        decoder = Decoder(options.limits, spans=options.spans, show_secrets=options.show_secrets)
    return Dissector(ports=options.ports, limits=options.limits, reorder=options.reorder, decoder=decoder)
