"""What a reader of a payload inside a payload could not read, and where: the embedded readers say it, and the
decoder turns it into a diagnostic located in the frame."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.diagnostic import Severity
from kdissect.schema import MessageSpec
from kdissect.schema.versioned import Payload, read_payload


@dataclass(frozen=True, slots=True)
class Misread:
    code: str
    """`embedded.malformed` (the bytes do not read whole by their format), `embedded.newer-version` (a version
    newer than kdissect knows, read as far as its format allows)."""
    message: str
    at: int
    """Offset in the payload."""
    severity: Severity = "warning"

    def deeper(self, start: int) -> Misread:
        """The same, for a payload that starts `start` bytes into the one around it."""
        return Misread(self.code, self.message, start + self.at, self.severity)


def misreads(payload: Payload, what: str) -> list[Misread]:
    """What went wrong reading a version-led payload, if anything: `what` names it for people."""
    if payload.problem is None:
        return []
    return [Misread("embedded.malformed", f"{what}: {payload.problem}", payload.at or 0)]


def start_of(definitions: tuple[MessageSpec, ...], data: bytes, name: str) -> int:
    """Where the bytes of the payload's field `name` start in `data` (a payload inside it), read again with spans: only
    when something inside went wrong, so that it can be told where."""
    struct = read_payload(definitions, data, spans=True).struct
    span = struct.span(name) if struct is not None else None
    value = struct.get(name) if struct is not None else None
    return 0 if span is None or not isinstance(value, bytes) else span[1] - len(value)
