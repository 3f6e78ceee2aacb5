"""Kafka over a byte stream: size-delimited frames, headers, and request/response pairing."""
