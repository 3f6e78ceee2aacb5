"""Names and addresses mapped to pseudonyms, the same one every time, numbered in the order they first appear.

A topic is `topic-1` wherever it is named: in a Metadata response, a Produce request, a consumer's subscription, a
config's value or an error message. IPv4 addresses become 10.0.0.1, 10.0.0.2, ... (a host name that is an address
too, so a broker's advertised host and the packets' addresses still agree), IPv6 ones fd00::1, ..., skipping the
addresses the capture's packets carry (`reserve`); MAC addresses 02:00:00:00:00:01, .... The owner keeps the
mapping (`mapping`) to read the anonymized capture's findings back.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

KINDS = {
    "client": "client_ids",
    "topic": "topics",
    "group": "groups",
    "txn": "transactional_ids",
    "member": "member_ids",
    "instance": "instance_ids",
    "principal": "principals",
    "host": "hosts",
    "rack": "racks",
    "pattern": "patterns",
    "resource": "resources",
    "name": "names",
}
"""Each kind of name and the mapping's key for it."""
KEPT = frozenset({"__consumer_offsets", "__transaction_state", "__cluster_metadata", "__share_group_state", ""})
"""Kafka's own topics (and the empty name) mean nothing about the owner: kept as they are."""
SHORTEST = 2
"""Names shorter than this are not searched for inside free text (an error message, a config value)."""
_NAME_EDGE = (r"(?<![A-Za-z0-9._-])", r"(?![A-Za-z0-9._-])")
"""A name is replaced in free text where it stands whole: not inside a longer name (Kafka's names are made of these)."""
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")


class Pseudonyms:
    """Every mapping of one anonymization run."""

    def __init__(self) -> None:
        self.names: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
        self.addresses: dict[bytes, bytes] = {}
        self.macs: dict[bytes, bytes] = {}
        self.reserved: set[bytes] = set()
        """The capture's own addresses, reserved before any pseudonym is made: none is made equal to one, or an
        anonymized copy would show an address of the original (as another host's)."""
        self._numbered = 0
        self._text: re.Pattern[str] | None = None

    def name(self, kind: str, value: str) -> str:
        """The pseudonym of a `kind` of name: a host that is an IP address is renumbered as addresses are."""
        if value in KEPT:
            return value
        table = self.names[kind]
        found = table.get(value)
        if found is None:
            found = self._address_text(value) if kind == "host" else None
            if found is None:
                found = f"{kind}-{len(table) + 1}"
            table[value] = found
            self._text = None
        return found

    def known(self, value: str) -> str | None:
        """The pseudonym `value` already has under any kind, if it has one."""
        for table in self.names.values():
            if value in table:
                return table[value]
        return None

    def address(self, packed: bytes) -> bytes:
        """An IPv4 or IPv6 address, renumbered."""
        found = self.addresses.get(packed)
        if found is None:
            while found is None or found in self.reserved:
                self._numbered += 1
                n = self._numbered
                found = (0x0A000000 + n).to_bytes(4, "big") if len(packed) == 4 else (0xFD00 << 112 | n).to_bytes(16, "big")
            self.addresses[packed] = found
            self._text = None
        return found

    def reserve(self, packed: bytes) -> None:
        """An address the capture holds (packed): pseudonyms made from now on avoid it."""
        self.reserved.add(packed)

    def mac(self, packed: bytes) -> bytes:
        """A link-layer address, renumbered as a locally administered one (of the same length)."""
        found = self.macs.get(packed)
        if found is None:
            n = len(self.macs) + 1
            found = (b"\x02" + n.to_bytes(max(len(packed), 6) - 1, "big"))[: len(packed)]
            self.macs[packed] = found
        return found

    def _address_text(self, text: str) -> str | None:
        """A textual IP address's renumbered text (a leading `/` kept, as Kafka writes client hosts), or None."""
        bare = text[1:] if text.startswith("/") else text
        try:
            packed = ipaddress.ip_address(bare).packed
        except ValueError:
            return None
        return text[: len(text) - len(bare)] + str(ipaddress.ip_address(self.address(packed)))

    def text(self, value: str) -> str:
        """Free text (an error message, a config value, a reason) with every name and IPv4 address it holds replaced."""
        if self._text is None:
            names = sorted((n for table in self.names.values() for n in table if len(n) >= SHORTEST), key=len, reverse=True)
            self._text = re.compile(f"{_NAME_EDGE[0]}(?:{'|'.join(map(re.escape, names))}){_NAME_EDGE[1]}") if names else None
        if self._text is not None:
            value = self._text.sub(lambda m: self.known(m.group()) or m.group(), value)
        return _IPV4.sub(lambda m: self._address_text(m.group()) or m.group(), value)

    def mapping(self) -> dict[str, dict[str, str]]:
        """Original to pseudonym, by kind, for the owner: names, then addresses and MAC addresses as text."""
        out = {KINDS[kind]: dict(table) for kind, table in self.names.items() if table}
        if self.addresses:
            out["addresses"] = {str(ipaddress.ip_address(a)): str(ipaddress.ip_address(b)) for a, b in self.addresses.items()}
        if self.macs:
            out["mac_addresses"] = {a.hex(":"): b.hex(":") for a, b in self.macs.items()}
        return out

    def counts(self) -> Iterator[tuple[str, int]]:
        for kind, table in self.names.items():
            if table:
                yield KINDS[kind], len(table)
        if self.addresses:
            yield "addresses", len(self.addresses)
        if self.macs:
            yield "mac_addresses", len(self.macs)
