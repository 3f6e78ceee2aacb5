"""SASL payloads inside SaslAuthenticate: PLAIN, SCRAM and OAUTHBEARER messages read into their parts.

Passwords, proofs, signatures and tokens are redacted unless `show_secrets` is set; so is the whole payload of
a mechanism whose secrets kdissect cannot tell apart (GSSAPI, unknown ones).
"""

from __future__ import annotations

from typing import Any

from kdissect.decode.redaction import Redacted

SCRAM_SECRETS = frozenset({"p", "v"})
"""The client proof and the server signature."""


def _secret(text: str, show: bool) -> Any:
    return text if show else Redacted(len(text.encode("utf-8")))


def _scram(text: str, show: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    parts = text.split(",")
    if parts and parts[0] in ("n", "y") or parts and parts[0].startswith("p="):
        out["gs2_header"] = ",".join(parts[:2])
        parts = parts[2:]
    for part in parts:
        key, _, value = part.partition("=")
        out[key] = _secret(value, show) if key in SCRAM_SECRETS else value
    return out


def _plain(text: str, show: bool) -> dict[str, Any]:
    authzid, _, rest = text.partition("\0")
    username, _, password = rest.partition("\0")
    return {"authzid": authzid, "username": username, "password": _secret(password, show)}


def _oauthbearer(text: str, show: bool) -> dict[str, Any]:
    gs2, _, rest = text.partition("\x01")
    out: dict[str, Any] = {"gs2_header": gs2}
    for pair in rest.split("\x01"):
        if not pair:
            continue
        key, _, value = pair.partition("=")
        if key == "auth":
            scheme, _, token = value.partition(" ")
            out["auth"] = {"scheme": scheme, "token": _secret(token, show)}
        else:
            out[key] = value
    return out


READERS = {"PLAIN": _plain, "SCRAM-SHA-256": _scram, "SCRAM-SHA-512": _scram, "OAUTHBEARER": _oauthbearer}


def read_sasl(mechanism: str | None, data: bytes, from_client: bool, show: bool) -> dict[str, Any]:
    """The parts of one SASL message; {"mechanism", ...} with secrets redacted unless `show`."""
    out: dict[str, Any] = {"mechanism": mechanism}
    if not data:
        return out
    reader = READERS.get(mechanism or "")
    if reader is _plain and not from_client:
        return out
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if reader is None or text is None:
        out["payload"] = data if show else Redacted(len(data))
        return out
    out.update(reader(text, show))
    return out
