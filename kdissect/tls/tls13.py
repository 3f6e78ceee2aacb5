"""The TLS 1.3 key schedule from a traffic secret on (RFC 8446 §7): record keys, IVs, and KeyUpdate.

A key log gives the traffic secrets themselves, so the schedule's upper half (early, handshake and master
secrets) is never needed: HKDF-Expand-Label turns a secret into its record key and IV, and into the next
secret when its sender announces a KeyUpdate.
"""

from __future__ import annotations

import struct

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

HASHES = {"sha256": hashes.SHA256, "sha384": hashes.SHA384}
IV_LENGTH = 12


def expand_label(hash_name: str, secret: bytes, label: bytes, context: bytes, length: int) -> bytes:
    """HKDF-Expand-Label(Secret, Label, Context, Length) of RFC 8446 §7.1."""
    full = b"tls13 " + label
    info = struct.pack(">HB", length, len(full)) + full + bytes([len(context)]) + context
    return HKDFExpand(HASHES[hash_name](), length, info).derive(secret)


def traffic_keys(hash_name: str, secret: bytes, key_length: int) -> tuple[bytes, bytes]:
    """(write key, write IV) of a traffic secret (RFC 8446 §7.3)."""
    return expand_label(hash_name, secret, b"key", b"", key_length), expand_label(hash_name, secret, b"iv", b"", IV_LENGTH)


def next_secret(hash_name: str, secret: bytes) -> bytes:
    """application_traffic_secret_N+1 after a KeyUpdate (RFC 8446 §7.2)."""
    return expand_label(hash_name, secret, b"traffic upd", b"", len(secret))
