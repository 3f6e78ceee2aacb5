"""Secrets stay out of kdissect's output unless the user asks for them (`--show-secrets`).

Which fields hold one is decided when the specs are read (`Field.secret`, schema/secrets.py); the decoder
replaces their values here, so every output (terminal, JSON, fields, filters, Spark tables) sees only the size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kdissect.schema import Catalog
from kdissect.schema.model import Field
from kdissect.schema.tree import Struct


@dataclass(frozen=True, slots=True)
class Redacted:
    """Stands in for a secret (a password, a SCRAM proof, a token): only its size is shown."""

    size: int

    def __str__(self) -> str:
        return f"<redacted, {self.size} bytes>"


def conceal(value: Any) -> Any:
    """A secret's stand-in; what is already redacted, or null, stays as it is."""
    if isinstance(value, bytes):
        return Redacted(len(value))
    if isinstance(value, str):
        return Redacted(len(value.encode("utf-8")))
    return value


def redact(places: list[tuple[Struct, int]]) -> None:
    """Replace each (struct, index) value with its stand-in, in place."""
    for struct, i in places:
        struct.values[i] = conceal(struct.values[i])


SECRET_CONFIG_WORDS = frozenset({"password", "passwd", "secret", "jaas", "credentials", "hmac"})
"""Words of a config's name (split at dots, dashes and underscores) that say its value is a credential:
sasl.jaas.config, ssl.keystore.password, sasl.oauthbearer.client.secret, delegation.token.secret.key."""
SECRET_CONFIG_ENDINGS = (".keystore.key",)
"""Names whose value is a private key (ssl.keystore.key: a PEM key) though no word above says so."""
_CONFIG_WORD = re.compile(r"[a-z0-9]+")


def secret_config(name: str, sensitive: bool = False) -> bool:
    """Whether a config's value is a credential, by its name (any listener prefix included) or the broker's own
    `IsSensitive`: decided here once for every API that carries configs (`Field.config_value`)."""
    lowered = name.lower()
    return sensitive or not SECRET_CONFIG_WORDS.isdisjoint(_CONFIG_WORD.findall(lowered)) or lowered.endswith(SECRET_CONFIG_ENDINGS)


def _holds_secret(fields: tuple[Field, ...]) -> bool:
    return any(f.secret or f.config_value or _holds_secret(f.fields) for f in fields)


def carries_secrets(api_key: int | None, catalog: Catalog) -> bool:
    """Whether some version of this API has a field that carries a credential, or a config's value that may: its
    frames are masked whole in a hex dump when their body does not decode, since the secret's place in them is then
    unknown."""
    api = catalog.apis.get(api_key) if api_key is not None else None
    return api is not None and any(_holds_secret(m.fields) for m in api.requests + api.responses)
