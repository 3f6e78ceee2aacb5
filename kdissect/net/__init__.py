"""IPv4/IPv6 and TCP: packets to segments, and segments to per-direction byte streams."""
