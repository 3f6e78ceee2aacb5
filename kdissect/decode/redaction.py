"""Secrets stay out of kdissect's output unless the user asks for them (`--show-secrets`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Redacted:
    """Stands in for a secret (a password, a SCRAM proof, a token): only its size is shown."""

    size: int

    def __str__(self) -> str:
        return f"<redacted, {self.size} bytes>"
