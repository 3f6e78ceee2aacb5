"""Key logs in the NSS format: what browsers, curl, Python's `ssl`, Java agents and Wireshark write.

One secret per line, `LABEL <client random, 64 hex digits> <secret in hex>`, found by the ClientHello's random:
`CLIENT_RANDOM` holds a TLS 1.2 master secret, the `*_TRAFFIC_SECRET_*` labels the TLS 1.3 traffic secrets.
OpenSSL may also log `CLIENT_TRAFFIC_SECRET_N` and `SERVER_TRAFFIC_SECRET_N` for N > 0 after KeyUpdates; those
follow from the first ones, so they are counted and ignored. Lines are never echoed: they are secrets.

A key log file can be as large as whoever writes it makes it: it is read once, a line at a time, and what stays
in memory is the secrets kept, each under a 33-byte key (its label's number and its client random).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MASTER = "CLIENT_RANDOM"
CLIENT_HANDSHAKE = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HANDSHAKE = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_TRAFFIC = "CLIENT_TRAFFIC_SECRET_0"
SERVER_TRAFFIC = "SERVER_TRAFFIC_SECRET_0"
KEPT = {MASTER: (48,), CLIENT_HANDSHAKE: (32, 48), SERVER_HANDSHAKE: (32, 48), CLIENT_TRAFFIC: (32, 48), SERVER_TRAFFIC: (32, 48)}
"""The labels kdissect uses, and the secret lengths each may have (SHA-256 or SHA-384 suites)."""
KNOWN = {"EXPORTER_SECRET", "EARLY_EXPORTER_SECRET", "CLIENT_EARLY_TRAFFIC_SECRET", "RSA", "PMS_CLIENT_RANDOM"}
"""Labels of the format kdissect has no use for: ignored, not malformed."""
LABELS = {label: bytes([number]) for number, label in enumerate(KEPT)}
"""Each kept label's one-byte number, the first byte of its secrets' keys."""
MAX_LINE = 4096
"""The longest line read whole (a key log line is under 250 bytes): a longer one is malformed, and read past."""
SECRETS, IGNORED, MALFORMED, SKIPPED = 0, 1, 2, 3
"""Where `KeyLog._line` counts a line: the first three are `KeyLogCount`'s."""


@dataclass(frozen=True, slots=True)
class KeyLogCount:
    """What one piece of key log held."""

    secrets: int
    ignored: int
    malformed: int


class KeyLog:
    """Every secret read so far, by label and client random. Grows as key logs arrive (a file, pcapng blocks); a
    `base` key log (a file read once, shared by every dissector made from the same options) is looked in after."""

    __slots__ = ("secrets", "in_use", "base")

    def __init__(self, base: KeyLog | None = None) -> None:
        self.secrets: dict[bytes, bytes] = {}
        self.base = base
        self.in_use: bool = base is not None and base.in_use
        """A key log was given (even an empty one, as a live session's that clients are about to write): records
        whose secrets are not in it yet are worth holding for a while."""

    def get(self, label: str, client_random: bytes) -> bytes | None:
        key = LABELS[label] + client_random
        found = self.secrets.get(key)
        if found is None and self.base is not None:
            return self.base.secrets.get(key)
        return found

    def add(self, text: bytes) -> KeyLogCount:
        """Read NSS key log lines; blank lines and `#` comments are skipped, others counted."""
        self.in_use = True
        counts = [0, 0, 0, 0]
        for line in text.splitlines():
            counts[self._line(line)] += 1
        return KeyLogCount(*counts[:SKIPPED])

    def read(self, stream: BinaryIO) -> KeyLogCount:
        """`add` over a stream, a line at a time: memory holds one line and the secrets kept, not the stream."""
        counts = [0, 0, 0, 0]
        while line := stream.readline(MAX_LINE):
            self.in_use = True
            if len(line) == MAX_LINE and not line.endswith(b"\n"):
                while (rest := stream.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass
                counts[MALFORMED] += 1
                continue
            counts[self._line(line)] += 1
        return KeyLogCount(*counts[:SKIPPED])

    def _line(self, raw: bytes) -> int:
        """Keep one line's secret; which count it adds to (blank lines and comments to none: `SKIPPED`)."""
        line = raw.strip()
        if not line or line.startswith(b"#"):
            return SKIPPED
        parts = line.split()
        label = parts[0].decode("ascii", "replace")
        lengths = KEPT.get(label)
        if lengths is None:
            return IGNORED if label in KNOWN or _later_traffic_secret(label) else MALFORMED
        try:
            random, secret = bytes.fromhex(parts[1].decode("ascii")), bytes.fromhex(parts[2].decode("ascii"))
        except (IndexError, ValueError, UnicodeDecodeError):
            return MALFORMED
        if len(parts) != 3 or len(random) != 32 or len(secret) not in lengths:
            return MALFORMED
        self.secrets[LABELS[label] + random] = secret
        return SECRETS

    def text(self) -> bytes:
        """The secrets kept, as key log lines (what the Spark job sends its executors)."""
        names = {number[0]: label for label, number in LABELS.items()}
        return b"".join(f"{names[key[0]]} {key[1:].hex()} {secret.hex()}\n".encode() for key, secret in self.secrets.items())


def own_key_log(given: bytes | KeyLog) -> KeyLog:
    """A run's own key log, to which the secrets a capture embeds are added: over a key log file already read (looked
    in, not copied), or holding the lines given."""
    if isinstance(given, KeyLog):
        return KeyLog(base=given)
    keys = KeyLog()
    if given:
        keys.add(given)
    return keys


class KeyLogFile(KeyLog):
    """A key log file, read once. Its length is the bytes read, as the bytes it stands for had: where following the
    file (`live --tls-keylog`, tls/follow.py) goes on."""

    __slots__ = ("size", "count")

    def __init__(self, path: Path) -> None:
        """Read `path`; OSError when it cannot be."""
        super().__init__()
        with open(path, "rb") as log:
            self.count = self.read(log)
            self.size = log.tell()

    def __len__(self) -> int:
        return self.size


def _later_traffic_secret(label: str) -> bool:
    """OpenSSL's CLIENT_TRAFFIC_SECRET_N / SERVER_TRAFFIC_SECRET_N after a KeyUpdate."""
    head, _, n = label.rpartition("_")
    return head in ("CLIENT_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET") and n.isdigit()
