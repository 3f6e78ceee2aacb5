"""A packet's addresses renumbered: its IP addresses, and the link-layer addresses its header holds."""

from __future__ import annotations

from kdissect.capture.linktypes import LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2
from kdissect.rewrite.pseudonyms import Pseudonyms


class Renumbering:
    """What `restreamed` asks of an anonymization for each packet it writes."""

    def __init__(self, names: Pseudonyms) -> None:
        self.names = names

    def address(self, packed: bytes) -> bytes:
        return self.names.address(packed)

    def link(self, linktype: int, header: bytes) -> bytes:
        """The link-layer header with its addresses renumbered: Ethernet's two MAC addresses, the Linux cooked
        headers' one; the others hold none."""
        out = bytearray(header)
        if linktype == LINKTYPE_ETHERNET and len(out) >= 12:
            out[0:6], out[6:12] = self.names.mac(bytes(out[0:6])), self.names.mac(bytes(out[6:12]))
        elif linktype == LINKTYPE_LINUX_SLL and len(out) >= 16:
            length = min(int.from_bytes(out[4:6], "big"), 8)
            out[6 : 6 + length] = self.names.mac(bytes(out[6 : 6 + length]))
        elif linktype == LINKTYPE_LINUX_SLL2 and len(out) >= 20:
            length = min(out[11], 8)
            out[12 : 12 + length] = self.names.mac(bytes(out[12 : 12 + length]))
        return bytes(out)
