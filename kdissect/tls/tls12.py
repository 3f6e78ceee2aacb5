"""TLS 1.2 keys from a master secret (RFC 5246 §5 and §6.3): the PRF and the key block of an AEAD suite.

A key log's `CLIENT_RANDOM` line gives the master secret, extended (RFC 7627) or not: how it was made does not
matter from there on. The key block is PRF(master secret, "key expansion", server random + client random),
cut into the client and server write keys and IVs (no MAC keys for AEAD suites).
"""

from __future__ import annotations

import hashlib
import hmac

HASHES = {"sha256": hashlib.sha256, "sha384": hashlib.sha384}


def prf(hash_name: str, secret: bytes, label: bytes, seed: bytes, length: int) -> bytes:
    """PRF(secret, label, seed) = P_hash(secret, label + seed), cut to `length` bytes."""
    digest = HASHES[hash_name]
    seed = label + seed
    out = bytearray()
    a = seed
    while len(out) < length:
        a = hmac.new(secret, a, digest).digest()
        out += hmac.new(secret, a + seed, digest).digest()
    return bytes(out[:length])


def key_block(hash_name: str, master: bytes, randoms: tuple[bytes, bytes], key_length: int, iv_length: int) -> tuple[bytes, ...]:
    """(client write key, server write key, client write IV, server write IV) for (client, server) randoms."""
    client_random, server_random = randoms
    block = prf(hash_name, master, b"key expansion", server_random + client_random, 2 * (key_length + iv_length))
    k, i = key_length, iv_length
    return block[:k], block[k : 2 * k], block[2 * k : 2 * k + i], block[2 * k + i : 2 * k + 2 * i]
