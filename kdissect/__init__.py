"""kdissect: a Kafka wire-protocol dissector for the terminal."""

from kdissect import native

__version__ = "0.1.0"

native.install()  # before any module mypyc compiled: KDISSECT_PURE=1 (or a stale build) loads their source instead
