"""Which fields carry credentials: decided from their names once, when a spec is read, and kept as `Field.secret`.

Kafka's specs do not mark secrets, but their names say it: a password (SaltedPassword), a secret, an HMAC
(a delegation token's password), a token (as the last word: TokenId only names one), SASL's AuthBytes. A salt
is secret beside the salted password it was made with. Only bytes and strings can hold one.

A config's value (a struct of a string `Name` and a string `Value`: AlterConfigs, IncrementalAlterConfigs,
CreateTopics, DescribeConfigs and its synonyms) is marked `config_value`: whether it is secret depends on the name
it travels with, so the decoder decides per value (decode/redaction.py's `secret_config`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from kdissect.schema.model import Field

SECRET_WORDS = frozenset({"password", "passwd", "secret", "hmac", "credentials"})
"""Words that make a field secret wherever they stand in its name."""
LAST_WORDS = frozenset({"token"})
"""Words that make it secret as the name's last word (TokenId, TokenRequesterPrincipalName are not)."""
NAMES = frozenset({"AuthBytes"})
"""Whole names the rules above do not catch."""
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def words(name: str) -> list[str]:
    """ "SaltedPassword" -> ["salted", "password"]; "HMACKey" -> ["hmac", "key"]."""
    return [w.lower() for w in _WORD.findall(name)]


def _by_name(field: Field) -> bool:
    if field.type not in ("bytes", "string") or field.is_struct:
        return False
    said = words(field.name)
    return field.name in NAMES or not SECRET_WORDS.isdisjoint(said) or bool(said) and said[-1] in LAST_WORDS


def mark_secrets(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    """The same fields, those that carry credentials marked; a salt is marked when a sibling is a salted secret."""
    secret = [_by_name(f) for f in fields]
    salted = any(s and "salted" in words(f.name) for f, s in zip(fields, secret))
    if salted:
        secret = [s or (f.type == "bytes" and words(f.name) == ["salt"]) for f, s in zip(fields, secret)]
    strings = {f.name for f in fields if f.type == "string" and not f.array}
    config = "Name" in strings and "Value" in strings
    if not (any(secret) or config):
        return fields
    return tuple(
        replace(f, secret=True) if s and not f.secret else replace(f, config_value=True) if config and f.name == "Value" else f
        for f, s in zip(fields, secret)
    )
