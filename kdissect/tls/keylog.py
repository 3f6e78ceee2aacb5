"""Key logs in the NSS format: what browsers, curl, Python's `ssl`, Java agents and Wireshark write.

One secret per line, `LABEL <client random, 64 hex digits> <secret in hex>`, found by the ClientHello's random:
`CLIENT_RANDOM` holds a TLS 1.2 master secret, the `*_TRAFFIC_SECRET_*` labels the TLS 1.3 traffic secrets.
OpenSSL may also log `CLIENT_TRAFFIC_SECRET_N` and `SERVER_TRAFFIC_SECRET_N` for N > 0 after KeyUpdates; those
follow from the first ones, so they are counted and ignored. Lines are never echoed: they are secrets.
"""

from __future__ import annotations

from dataclasses import dataclass

MASTER = "CLIENT_RANDOM"
CLIENT_HANDSHAKE = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HANDSHAKE = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_TRAFFIC = "CLIENT_TRAFFIC_SECRET_0"
SERVER_TRAFFIC = "SERVER_TRAFFIC_SECRET_0"
KEPT = {MASTER: (48,), CLIENT_HANDSHAKE: (32, 48), SERVER_HANDSHAKE: (32, 48), CLIENT_TRAFFIC: (32, 48), SERVER_TRAFFIC: (32, 48)}
"""The labels kdissect uses, and the secret lengths each may have (SHA-256 or SHA-384 suites)."""
KNOWN = {"EXPORTER_SECRET", "EARLY_EXPORTER_SECRET", "CLIENT_EARLY_TRAFFIC_SECRET", "RSA", "PMS_CLIENT_RANDOM"}
"""Labels of the format kdissect has no use for: ignored, not malformed."""


@dataclass(frozen=True, slots=True)
class KeyLogCount:
    """What one piece of key log held."""

    secrets: int
    ignored: int
    malformed: int


class KeyLog:
    """Every secret read so far, by (label, client random). Grows as key logs arrive (a file, pcapng blocks)."""

    __slots__ = ("secrets", "in_use")

    def __init__(self) -> None:
        self.secrets: dict[tuple[str, bytes], bytes] = {}
        self.in_use = False
        """A key log was given (even an empty one, as a live session's that clients are about to write): records
        whose secrets are not in it yet are worth holding for a while."""

    def __len__(self) -> int:
        return len(self.secrets)

    def get(self, label: str, client_random: bytes) -> bytes | None:
        return self.secrets.get((label, client_random))

    def add(self, text: bytes) -> KeyLogCount:
        """Read NSS key log lines; blank lines and `#` comments are skipped, others counted."""
        self.in_use = True
        added = ignored = malformed = 0
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith(b"#"):
                continue
            parts = line.split()
            label = parts[0].decode("ascii", "replace")
            lengths = KEPT.get(label)
            if lengths is None:
                if label in KNOWN or _later_traffic_secret(label):
                    ignored += 1
                else:
                    malformed += 1
                continue
            try:
                random, secret = bytes.fromhex(parts[1].decode("ascii")), bytes.fromhex(parts[2].decode("ascii"))
            except (IndexError, ValueError, UnicodeDecodeError):
                malformed += 1
                continue
            if len(parts) != 3 or len(random) != 32 or len(secret) not in lengths:
                malformed += 1
                continue
            self.secrets[(label, random)] = secret
            added += 1
        return KeyLogCount(added, ignored, malformed)


def _later_traffic_secret(label: str) -> bool:
    """OpenSSL's CLIENT_TRAFFIC_SECRET_N / SERVER_TRAFFIC_SECRET_N after a KeyUpdate."""
    head, _, n = label.rpartition("_")
    return head in ("CLIENT_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET") and n.isdigit()
