"""Diagnostics: what every stage says about bytes it could not take at face value.

Every stage reports trouble the same way, so views and tables can list it in one place. A diagnostic never
stops decoding: it names what was odd and where, and the stage goes on with what follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "note"]
LOSSES = frozenset({"packet.truncated", "tcp.gap", "frame.incomplete", "tls.bad-record", "tls.no-server-hello"})
"""Codes that say the capture lost bytes, besides the file's own (`pcap.*`, `pcapng.*`, `capture.*`): they make the
exit status 1. A frame captured whole that does not decode is its sender's doing, not the capture's: the doctor
tells it (protocol.malformed)."""
FILE_STAGES = frozenset({"pcap", "pcapng", "capture"})
Scope = Literal["file", "packet", "stream", "frame", "body", "batch", "record", "value", ""]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One named problem and its location.

    `code` is stable and dotted by stage (``tcp.gap``, ``frame.too-large``, ``body.truncated``); scripts match on it.
    `offset` counts bytes within `scope`: the capture file, the TCP stream of one direction, the Kafka frame
    (size prefix excluded), a decompressed batch, or one record's key or value (`value`: its bytes as the record
    holds them). `path` names the field, when a message decoder raised it.
    """

    code: str
    message: str
    severity: Severity = "error"
    scope: Scope = ""
    offset: int | None = None
    path: str = ""

    @property
    def lost(self) -> bool:
        """Whether it says the capture lost bytes (README's exit status 1)."""
        return self.severity == "error" and (self.code in LOSSES or self.code.partition(".")[0] in FILE_STAGES)

    def at(self) -> str:
        """The location as one short phrase, for terminal views."""
        parts = []
        if self.scope and self.offset is not None:
            parts.append(f"{self.scope} offset {self.offset}")
        if self.path:
            parts.append(self.path)
        return ", ".join(parts)
