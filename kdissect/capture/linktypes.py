"""Link-layer header types: the numbers a capture file or an interface declares, and their names.

The values are pcap's LINKTYPE_* registry (tcpdump.org/linktypes.html); decoding the headers is net/'s job.
"""

from __future__ import annotations

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
DLT_RAW_ALIASES = (12, 14)
"""BSD systems wrote DLT_RAW's platform value into some files instead of LINKTYPE_RAW."""

NAMES = {
    LINKTYPE_NULL: "BSD loopback",
    LINKTYPE_ETHERNET: "Ethernet",
    LINKTYPE_RAW: "raw IP",
    LINKTYPE_LOOP: "OpenBSD loopback",
    LINKTYPE_LINUX_SLL: "Linux cooked (SLL)",
    LINKTYPE_IPV4: "raw IPv4",
    LINKTYPE_IPV6: "raw IPv6",
    LINKTYPE_LINUX_SLL2: "Linux cooked v2 (SLL2)",
    **{alias: "raw IP" for alias in DLT_RAW_ALIASES},
}


def name(linktype: int) -> str:
    return NAMES.get(linktype, f"link type {linktype}")
