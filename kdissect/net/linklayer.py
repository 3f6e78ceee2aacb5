"""Link-layer headers: where the IP packet starts inside a captured frame.

Each decoder takes the frame bytes and returns (ip_version, offset): 4 or 6 and the offset of the IP header,
or (0, 0) when the frame carries something other than IP. Short frames raise IndexError or struct.error,
which the caller counts as malformed.
"""

from __future__ import annotations

from typing import Callable

from kdissect.capture.linktypes import (
    DLT_RAW_ALIASES,
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
)

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
VLAN_TPIDS = frozenset({0x8100, 0x88A8, 0x9100, 0x9200})
"""802.1Q and the 802.1ad / pre-standard QinQ outer tags."""

BSD_AF_INET6 = frozenset({24, 28, 30})
"""AF_INET6 differs between NetBSD/OpenBSD (24), FreeBSD (28) and Darwin (30)."""

Decoder = Callable[[bytes], "tuple[int, int]"]


def _by_ethertype(ethertype: int, offset: int) -> tuple[int, int]:
    if ethertype == ETHERTYPE_IPV4:
        return 4, offset
    if ethertype == ETHERTYPE_IPV6:
        return 6, offset
    return 0, 0


def ethernet(data: bytes) -> tuple[int, int]:
    ethertype = data[12] << 8 | data[13]
    offset = 14
    while ethertype in VLAN_TPIDS:
        ethertype = data[offset + 2] << 8 | data[offset + 3]
        offset += 4
    return _by_ethertype(ethertype, offset)


def linux_sll(data: bytes) -> tuple[int, int]:
    return _by_ethertype(data[14] << 8 | data[15], 16)


def linux_sll2(data: bytes) -> tuple[int, int]:
    return _by_ethertype(data[0] << 8 | data[1], 20)


def bsd_null(data: bytes) -> tuple[int, int]:
    """The address family is in the capturing host's byte order, which the file does not record."""
    family = data[0] if data[0] else data[3]
    if family == 2:
        return 4, 4
    if family in BSD_AF_INET6:
        return 6, 4
    return 0, 0


def bsd_loop(data: bytes) -> tuple[int, int]:
    family = data[3]
    if family == 2:
        return 4, 4
    if family in BSD_AF_INET6:
        return 6, 4
    return 0, 0


def raw_ip(data: bytes) -> tuple[int, int]:
    version = data[0] >> 4
    return (version, 0) if version in (4, 6) else (0, 0)


DECODERS: dict[int, Decoder] = {
    LINKTYPE_NULL: bsd_null,
    LINKTYPE_ETHERNET: ethernet,
    LINKTYPE_RAW: raw_ip,
    LINKTYPE_LOOP: bsd_loop,
    LINKTYPE_LINUX_SLL: linux_sll,
    LINKTYPE_IPV4: raw_ip,
    LINKTYPE_IPV6: raw_ip,
    LINKTYPE_LINUX_SLL2: linux_sll2,
    **{alias: raw_ip for alias in DLT_RAW_ALIASES},
}
