"""Tallies of things a capture file did that the format does not expect, told once each with a count."""

from __future__ import annotations

from kdissect.diagnostic import Diagnostic, Severity


class Oddities:
    """Counts each oddity and remembers where it first happened; a reader reports them when it ends.

    Real captures repeat the same quirk on every record (go-sniffer's caplen > origlen on all 20 packets),
    so one line with a count says more than twenty identical ones.
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, list] = {}

    def add(self, code: str, message: str, offset: int | None, severity: Severity = "warning") -> None:
        entry = self._seen.get(code)
        if entry is None:
            self._seen[code] = [message, offset, severity, 1]
        else:
            entry[3] += 1

    def count(self, code: str, times: int, message: str, offset: int | None) -> None:
        """Record an oddity a hot loop counted itself, to keep `add` out of the loop."""
        if times:
            self.add(code, message, offset)
            self._seen[code][3] += times - 1

    def diagnostics(self) -> list[Diagnostic]:
        out = []
        for code, (message, offset, severity, times) in self._seen.items():
            text = message if times == 1 else f"{message} ({times} times, first here)"
            out.append(Diagnostic(code, text, severity, "file", offset))
        return out
