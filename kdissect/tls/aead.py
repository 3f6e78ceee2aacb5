"""Opening one record, and sealing one again: the AEADs of TLS 1.2 and 1.3 (AES-GCM, ChaCha20-Poly1305) with
`cryptography`. Sealing is for rewriting a capture (`-w` keeps a TLS connection's chosen bytes, sealed at their new
sequence numbers, so the same key log opens them).

TLS 1.3 (RFC 8446 §5.2): nonce = IV xor sequence number, the additional data is the record header.
TLS 1.2 AES-GCM (RFC 5288): nonce = 4-byte IV + the 8-byte explicit nonce the record starts with.
TLS 1.2 ChaCha20 (RFC 7905): nonce as in TLS 1.3. TLS 1.2's additional data is sequence number, type,
version and plaintext length.
"""

from __future__ import annotations

import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

TAG = 16
EXPLICIT_NONCE = 8
_HEADER = struct.Struct(">BHH").pack
_AAD12 = struct.Struct(">QBHH").pack


class RecordCipher:
    """Opens (and seals) the records one direction sends under one key."""

    __slots__ = ("aead", "iv", "salt", "tls13", "gcm12", "shortest")

    def __init__(self, cipher: str, key: bytes, iv: bytes, tls13: bool) -> None:
        self.aead = ChaCha20Poly1305(key) if cipher == "CHACHA20-POLY1305" else AESGCM(key)
        self.tls13 = tls13
        self.gcm12 = not tls13 and len(iv) == 4
        """TLS 1.2 AES-GCM: its 4-byte IV is the implicit half of the nonce (`salt`)."""
        self.salt = iv if self.gcm12 else b""
        self.iv = 0 if self.gcm12 else int.from_bytes(iv, "big")
        """The 12-byte IV the sequence number is xored with, for the other ciphers."""
        self.shortest = TAG + (EXPLICIT_NONCE if self.gcm12 else 0)
        """The fewest bytes a record can carry under this cipher: its explicit nonce (TLS 1.2 AES-GCM) and its tag."""

    def open(self, seq: int, ctype: int, version: int, fragment: bytes) -> bytes | None:
        """The plaintext (TLS 1.3: the inner plaintext, type and padding included), or None: it does not
        authenticate under this key at this sequence number (a record shorter than `shortest` never does)."""
        if len(fragment) < self.shortest:
            return None
        try:
            if self.tls13:
                nonce = (self.iv ^ seq).to_bytes(12, "big")
                return self.aead.decrypt(nonce, fragment, _HEADER(ctype, version, len(fragment)))
            if self.gcm12:
                body = fragment[EXPLICIT_NONCE:]
                return self.aead.decrypt(self.salt + fragment[:EXPLICIT_NONCE], body, _AAD12(seq, ctype, version, len(body) - TAG))
            return self.aead.decrypt((self.iv ^ seq).to_bytes(12, "big"), fragment, _AAD12(seq, ctype, version, len(fragment) - TAG))
        except (InvalidTag, ValueError):
            return None

    def seal(self, seq: int, ctype: int, version: int, plaintext: bytes) -> bytes:
        """The record fragment that carries `plaintext` (TLS 1.3: the inner plaintext, type byte included) at sequence
        number `seq`; a TLS 1.2 AES-GCM record carries its sequence number as explicit nonce, as implementations do."""
        if self.tls13:
            nonce = (self.iv ^ seq).to_bytes(12, "big")
            return self.aead.encrypt(nonce, plaintext, _HEADER(ctype, version, len(plaintext) + TAG))
        if self.gcm12:
            explicit = seq.to_bytes(EXPLICIT_NONCE, "big")
            return explicit + self.aead.encrypt(self.salt + explicit, plaintext, _AAD12(seq, ctype, version, len(plaintext)))
        return self.aead.encrypt((self.iv ^ seq).to_bytes(12, "big"), plaintext, _AAD12(seq, ctype, version, len(plaintext)))

    def overhead(self) -> int:
        """Bytes a record carries beyond its plaintext (TLS 1.3: and its content type byte)."""
        return TAG + (1 if self.tls13 else EXPLICIT_NONCE if self.gcm12 else 0)
