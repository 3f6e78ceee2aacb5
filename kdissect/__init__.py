"""kdissect: a Kafka wire-protocol dissector for the terminal."""

__version__ = "0.1.0"
