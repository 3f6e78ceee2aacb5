"""error_codes.tsv held against Apache Kafka's own source: each code's name, and whether the Java client retries it.

The table's code and name columns copy `org.apache.kafka.common.protocol.Errors`; its retriable column says whether
the exception each error maps to extends `RetriableException`. A checkout of apache/kafka answers both, so
`python -m kdissect.schema.generate --kafka-source DIR` checks them (the meanings are kdissect's own words).
"""

from __future__ import annotations

import re
from pathlib import Path

from kdissect.schema.model import KafkaError

ERRORS_JAVA = "clients/src/main/java/org/apache/kafka/common/protocol/Errors.java"
_ENTRY = re.compile(r"\n\s+([A-Z][A-Z_0-9]+)\(\s*(-?\d+),.*?,\s*(?:([A-Za-z]+)::new|[a-z]+ -> null)\)", re.S)
_CLASS = re.compile(r"public\s+(?:abstract\s+)?class\s+(\w+)(?:<[^>]*>)?\s+extends\s+(\w+)")


def kafka_errors(source: Path) -> dict[int, tuple[str, bool]]:
    """(name, retriable) of every error code an apache/kafka checkout defines."""
    text = (source / ERRORS_JAVA).read_text(encoding="utf-8")
    parents: dict[str, str] = {}
    for java in (source / "clients" / "src" / "main" / "java").rglob("*.java"):
        for child, parent in _CLASS.findall(java.read_text(encoding="utf-8", errors="replace")):
            parents[child] = parent

    def retriable(exception: str) -> bool:
        seen = set()
        while exception != "RetriableException" and exception in parents and exception not in seen:
            seen.add(exception)
            exception = parents[exception]
        return exception == "RetriableException"

    body = text[text.index("public enum Errors") :]
    return {int(code): (name, bool(exception) and retriable(exception)) for name, code, exception in _ENTRY.findall(body)}


def disagreements(table: dict[int, KafkaError], source: Path) -> list[str]:
    """Where the table says otherwise than the checkout; codes newer than the checkout are not judged."""
    out = []
    for code, (name, retriable) in sorted(kafka_errors(source).items()):
        ours = table.get(code)
        if ours is None:
            out.append(f"{code} {name}: missing from error_codes.tsv")
        elif ours.name != name:
            out.append(f"{code}: error_codes.tsv says {ours.name}, Kafka says {name}")
        elif ours.retriable != retriable:
            out.append(f"{code} {name}: error_codes.tsv says retriable={ours.retriable}, Kafka's exception says {retriable}")
    return out
