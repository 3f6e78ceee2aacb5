"""Cipher suites: the ones kdissect decrypts (AEAD) and names, and the ones it only names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Suite:
    code: int
    name: str
    cipher: str | None
    """"AES-GCM" or "CHACHA20-POLY1305": the AEADs kdissect decrypts; None for the suites it only names."""
    key_length: int = 0
    hash: str = "sha256"
    """The hash of the suite's key schedule (HKDF in TLS 1.3, the PRF in TLS 1.2)."""


def _aead(code: int, name: str) -> Suite:
    cipher = "CHACHA20-POLY1305" if "CHACHA20" in name else "AES-GCM"
    return Suite(code, name, cipher, 16 if "AES_128" in name else 32, "sha384" if name.endswith("SHA384") else "sha256")


SUITES: dict[int, Suite] = {
    suite.code: suite
    for suite in (
        _aead(0x1301, "TLS_AES_128_GCM_SHA256"),
        _aead(0x1302, "TLS_AES_256_GCM_SHA384"),
        _aead(0x1303, "TLS_CHACHA20_POLY1305_SHA256"),
        _aead(0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        _aead(0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
        _aead(0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
        _aead(0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
        _aead(0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        _aead(0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
        _aead(0xCCAA, "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        _aead(0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256"),
        _aead(0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384"),
        _aead(0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"),
        _aead(0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384"),
        Suite(0x1304, "TLS_AES_128_CCM_SHA256", None),
        Suite(0x1305, "TLS_AES_128_CCM_8_SHA256", None),
        Suite(0xC009, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", None),
        Suite(0xC00A, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", None),
        Suite(0xC013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", None),
        Suite(0xC014, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", None),
        Suite(0xC023, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", None),
        Suite(0xC024, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", None),
        Suite(0xC027, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", None),
        Suite(0xC028, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", None),
        Suite(0x002F, "TLS_RSA_WITH_AES_128_CBC_SHA", None),
        Suite(0x0035, "TLS_RSA_WITH_AES_256_CBC_SHA", None),
        Suite(0x003C, "TLS_RSA_WITH_AES_128_CBC_SHA256", None),
        Suite(0x003D, "TLS_RSA_WITH_AES_256_CBC_SHA256", None),
    )
}


def suite_name(code: int) -> str:
    suite = SUITES.get(code)
    return suite.name if suite else f"0x{code:04X}"


VERSIONS = {0x0300: "SSL 3.0", 0x0301: "TLS 1.0", 0x0302: "TLS 1.1", 0x0303: "TLS 1.2", 0x0304: "TLS 1.3"}


def version_name(code: int) -> str:
    return VERSIONS.get(code, f"0x{code:04X}")
