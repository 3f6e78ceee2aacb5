"""Tallies of things a capture file did that the format does not expect, told once each with a count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from kdissect.diagnostic import Diagnostic, Severity


@dataclass(frozen=True, slots=True)
class Oddity:
    """One kind of oddity: what was first said about it, where, and how many times it happened."""

    code: str
    message: str
    offset: int | None
    severity: Severity
    times: int


class Oddities:
    """Counts each oddity and remembers where it first happened; a reader reports them when it ends.

    Real captures repeat the same quirk on every record (go-sniffer's caplen > origlen on all 20 packets),
    so one line with a count says more than twenty identical ones.
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, list] = {}

    def add(self, code: str, message: str, offset: int | None, severity: Severity = "warning", times: int = 1) -> None:
        entry = self._seen.get(code)
        if entry is None:
            self._seen[code] = [message, offset, severity, times]
        else:
            entry[3] += times

    def count(self, code: str, times: int, message: str, offset: int | None) -> None:
        """Record an oddity a hot loop counted itself, to keep `add` out of the loop."""
        if times:
            self.add(code, message, offset, times=times)

    def entries(self) -> list[Oddity]:
        return [Oddity(code, *entry) for code, entry in self._seen.items()]

    def merge(self, entries: Iterable[Oddity]) -> None:
        """Add up what readers of several byte ranges of one file found: counts summed, the first message and
        offset of each code kept (give the ranges in file order)."""
        for o in entries:
            self.add(o.code, o.message, o.offset, o.severity, o.times)

    def diagnostics(self) -> list[Diagnostic]:
        out = []
        for code, (message, offset, severity, times) in self._seen.items():
            text = message if times == 1 else f"{message} ({times} times, first here)"
            out.append(Diagnostic(code, text, severity, "file", offset))
        return out
