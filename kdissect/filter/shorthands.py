"""The fixed filter options (--api, --version, --topic, ...) as expressions of the filter language, so one
matcher serves them and -Y alike."""

from __future__ import annotations

from kdissect.filter.errors import FilterError
from kdissect.filter.lexer import MAX_DIGITS, quote
from kdissect.schema import Catalog


def parse_apis(text: str, catalog: Catalog) -> list[int]:
    """ "Produce,Fetch,18" -> API keys of the catalogue; names are matched without regard to case."""
    by_name = {name.lower(): key for key, name in catalog.names.items()}
    keys = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.isascii() and item.isdigit() and len(item) <= MAX_DIGITS["whole"]:
            keys.append(int(item))
        elif item.lower() in by_name:
            keys.append(by_name[item.lower()])
        else:
            raise FilterError(f"unknown API {item!r} (give a name such as Produce or a key such as 0)", source="--api")
    if not keys:
        raise FilterError(f"no API in {text!r} (give names such as Produce or keys such as 0, comma-separated)", source="--api")
    return keys


def parse_versions(text: str) -> list[str]:
    """ "9", "3-7" or "1,4-5", as set members: "9", "3..7"."""
    out = []
    for item in (part.strip() for part in text.split(",")):
        lo, _, hi = item.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            first = last = -1
        if not 0 <= first <= last:
            raise FilterError(f"bad version {item!r} (give N, N-M, or a comma-separated list)", source="--version")
        out.append(str(first) if first == last else f"{first}..{last}")
    return out


def parse_ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        ids = []
    if not ids:
        raise FilterError(f"bad connection id {text!r} (give numbers, comma-separated)", source="--connection")
    return ids


def _member(field: str, items: list[str]) -> str:
    return f"{field} in {{{', '.join(items)}}}"


def shorthands(
    catalog: Catalog,
    api: str | None = None,
    version: str | None = None,
    topic: list[str] | None = None,
    client_id: list[str] | None = None,
    group: list[str] | None = None,
    errors: bool = False,
    connection: str | None = None,
    min_latency: float | None = None,
) -> list[tuple[str, str]]:
    """(option, expression) for each fixed option given; a FilterError (with the option's own wording) for a bad one."""
    out = []
    if api:
        out.append(("--api", _member("api_key", [str(k) for k in parse_apis(api, catalog)])))
    if version:
        out.append(("--version", _member("version", parse_versions(version))))
    if topic:
        out.append(("--topic", _member("topic", [quote(t) for t in topic])))
    if client_id:
        out.append(("--client-id", _member("client_id", [quote(c) for c in client_id])))
    if group:
        out.append(("--group", _member("group", [quote(g) for g in group])))
    if errors:
        out.append(("--errors", "error or diagnostic"))
    if connection:
        out.append(("--connection", _member("connection", [str(i) for i in parse_ids(connection)])))
    if min_latency is not None:
        out.append(("--min-latency", f"(latency_ms >= {min_latency!r} or status == unanswered)"))  # never answered: the slowest
    return out
