"""`kdissect stats`: what a capture adds up to, per API, topic, client and consumer group (its rebalances as
`doctor/rebalances.py` reconstructs them, as the doctor sees them)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from kdissect.decode.body import Body
from kdissect.diagnostic import Diagnostic
from kdissect.doctor.rebalances import Rebalances, Round
from kdissect.events import ConnectionEnd, Exchange
from kdissect.printable import printable
from kdissect.schema import ApiKey, error_name
from kdissect.schema.tree import Struct
from kdissect.views.summary import Latencies, exchange_errors
from kdissect.views.terminal import TableColumn, duration, elide, fitted_table, size, stamp, why_hidden


def _fields(message: Any) -> Struct | None:
    body = getattr(message, "body", None)
    return body.fields if isinstance(body, Body) else None


def _round_row(r: Round) -> dict[str, Any]:
    return {
        "group": r.group,
        "generation": r.generation,
        "start": stamp(r.start),
        "duration_ms": None if r.end is None else (r.end - r.start) / 1e6,
        "completed": r.synced,
        "members": len(r.members),
        "protocol": r.protocol,
        "leader": r.leader,
        "reasons": dict(r.reasons),
    }


def _latency_cells(values: Latencies) -> dict[str, float | None]:
    cell = lambda q: None if not values else values.percentile(q) / 1e6  # type: ignore[operator]
    return {"p50_ms": cell(50), "p95_ms": cell(95), "p99_ms": cell(99), "max_ms": values.largest / 1e6 if values else None}  # type: ignore[operator]


MAX_CLIENTS = 1_000
"""Client ids with a row of their own; the exchanges of later ones add up in one row, `OTHER_CLIENTS`."""
OTHER_CLIENTS = f"(client ids past the first {MAX_CLIENTS})"


class Stats:
    """Consumes exchanges and keeps running totals; memory grows with APIs, topics, clients and groups only, and
    with clients only up to `MAX_CLIENTS`: a capture can name a new client id in every request."""

    def __init__(self, values: Any = None) -> None:
        self.values = values
        """The run's `values.reader.ValueReader`: what records' values say, per topic (the serialization table)."""
        self.serialization: dict[tuple[str | None, str, str], dict[str, Any]] = {}
        """(topic, format, framing) -> schema ids, subjects, produced and fetched records."""
        self.apis: dict[tuple[int | None, int | None], dict[str, Any]] = {}
        self.topics: dict[tuple[str | None, int | None], Counter[str]] = defaultdict(Counter)
        self.clients: dict[str, dict[str, Any]] = {}
        self.rebalances = Rebalances()
        self.tls: list[ConnectionEnd] = []
        """The TLS connections, as their summaries tell them."""

    def add_connection(self, end: ConnectionEnd) -> None:
        if end.tls is not None:
            self.tls.append(end)

    def add(self, exchange: Exchange) -> None:
        header, latency = exchange.request_header, exchange.latency
        api_key = header.api_key if header else None
        api = self.apis.setdefault(
            (api_key, header.api_version if header else None),
            {"name": exchange.api_name, "count": 0, "errors": Counter(), "latencies": Latencies(), "statuses": Counter()},
        )
        api["count"] += 1
        api["statuses"][exchange.status] += 1
        errors = [code for _, code, _ in exchange_errors(exchange)]
        api["errors"].update(error_name(code) for code in errors)
        if latency is not None:
            api["latencies"].append(latency)
        who = (header.client_id if header else None) or "(none)"
        if who not in self.clients and len(self.clients) >= MAX_CLIENTS:
            who = OTHER_CLIENTS
        client = self.clients.setdefault(who, {"exchanges": 0, "bytes": 0, "errors": 0, "apis": Counter(), "latencies": Latencies()})
        client["exchanges"] += 1
        client["bytes"] += sum(m.size for m in (exchange.request, exchange.response) if m is not None)
        client["errors"] += len(errors)
        client["apis"][exchange.api_name or "?"] += 1
        if latency is not None:
            client["latencies"].append(latency)
        if api_key in (ApiKey.PRODUCE, ApiKey.FETCH):
            self._records(exchange)
        self.rebalances.exchange(exchange)

    def _records(self, exchange: Exchange) -> None:
        for message, kind in ((exchange.request, "produced"), (exchange.response, "fetched")):
            if message is None:
                continue
            body = message.body
            if not isinstance(body, Body):
                continue
            for placed in body.records:
                counts = self.topics[(placed.topic, placed.partition)]
                counts[f"{kind}_records"] += placed.records.data_count
                counts[f"{kind}_bytes"] += placed.records.size
                if self.values is not None:
                    self._serialization(placed, kind)

    def _serialization(self, placed: Any, kind: str) -> None:
        """Count each data record's value by how it reads: format, framing, schema id and subject."""
        from kdissect.values.reader import plain_format

        read, topic = self.values.read, placed.topic
        for record in placed.records.data_records():
            if record.value is None:
                continue
            decoded = read("value", record.value, record.headers, topic, placed.records)
            if decoded is None or decoded.plain:
                fmt, framing = plain_format(record.value), "none"
            else:
                fmt, framing = decoded.format, decoded.framing
            row = self.serialization.get((topic, fmt, framing))
            if row is None:
                row = self.serialization[(topic, fmt, framing)] = {"schema_ids": [], "subjects": [], "produced": 0, "fetched": 0}
            row[kind] += 1
            if decoded is not None and decoded.schema_id is not None and decoded.schema_id not in row["schema_ids"]:
                row["schema_ids"].append(decoded.schema_id)
            subject = decoded.subject if decoded is not None else None
            if subject is not None and subject not in row["subjects"]:
                row["subjects"].append(subject)

    def tables(self) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        yield (
            "apis",
            [
                {
                    "api_key": k,
                    "api_name": a["name"] or "?" if k is not None else None,
                    "api_version": v,
                    "count": a["count"],
                    "statuses": dict(a["statuses"]),
                    "errors": dict(a["errors"]),
                    **_latency_cells(a["latencies"]),
                }
                for (k, v), a in sorted(self.apis.items(), key=lambda item: (item[0][0] is None, item[0]))
            ],
        )
        yield (
            "topics",
            [
                {
                    "topic": t,
                    "partition": p,
                    "produced_records": c["produced_records"],
                    "produced_bytes": c["produced_bytes"],
                    "fetched_records": c["fetched_records"],
                    "fetched_bytes": c["fetched_bytes"],
                }
                for (t, p), c in sorted(self.topics.items(), key=lambda item: (str(item[0][0]), item[0][1] or 0))
            ],
        )
        yield (
            "clients",
            [
                {
                    "client_id": cid,
                    "exchanges": c["exchanges"],
                    "bytes": c["bytes"],
                    "errors": c["errors"],
                    "apis": dict(c["apis"]),
                    **_latency_cells(c["latencies"]),
                }
                for cid, c in sorted(self.clients.items())
            ],
        )
        yield (
            "groups",
            [
                {
                    "group": name,
                    "members": len(g.members),
                    "generations": sorted(g.generations),
                    "rebalances": len(g.rows(name)),
                    "offset_commits": g.commits,
                    "committed": [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(g.committed.items(), key=str)],
                }
                for name, g in sorted(self.rebalances.groups.items())
            ],
        )
        yield "rebalances", [_round_row(r) for name, g in self.rebalances.groups.items() for r in g.rows(name)]
        if any(fmt not in ("text", "bytes") for _, fmt, _ in self.serialization):  # only where values say more than bytes
            yield (
                "serialization",
                [
                    {
                        "topic": topic,
                        "format": fmt,
                        "framing": framing,
                        "schema_ids": row["schema_ids"],
                        "subjects": row["subjects"],
                        "produced_records": row["produced"],
                        "fetched_records": row["fetched"],
                    }
                    for (topic, fmt, framing), row in sorted(self.serialization.items(), key=lambda item: (str(item[0][0]), item[0][1:]))
                ],
            )
        if self.tls:
            yield "tls", [_tls_row(end) for end in sorted(self.tls, key=lambda e: e.connection.id)]


def _tls_row(end: ConnectionEnd) -> dict[str, Any]:
    tls, totals = end.connection.tls, end.tls
    assert totals is not None
    return {
        "connection": end.connection.id,
        "client": str(end.connection.client),
        "broker": str(end.connection.broker),
        "version": tls.version if tls else None,
        "cipher_suite": tls.cipher_suite if tls else None,
        "sni": tls.sni if tls else None,
        "alpn": list(tls.alpn) if tls else [],
        "secret": tls.secret if tls else None,
        "records": list(totals.records),
        "decrypted": list(totals.decrypted),
        "bytes": list(end.bytes),
        "plaintext": list(totals.plaintext),
        "exchanges": end.requests,
        "exchanges_hidden": totals.exchanges_hidden,
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else duration(int(value * 1e6))


TableLayout = tuple[str, str, list[TableColumn], Callable[[dict[str, Any], int], tuple[str | Text, ...]]]
"""(table, title, columns, the cells of a row at a width) for each table `print_stats` draws."""
LAYOUTS: list[TableLayout] = [
    (
        "apis",
        "APIs",
        [
            TableColumn("API"),
            TableColumn("version", "right"),
            TableColumn("count", "right", summed=True),
            TableColumn("errors", wrap=True, keep=1),
            TableColumn("p50", "right", keep=5),
            TableColumn("p95", "right", keep=6),
            TableColumn("p99", "right", keep=2),
            TableColumn("max", "right", keep=4),
            TableColumn("not ok", wrap=True, keep=3),
        ],
        lambda row, width: (
            row["api_name"] or "?",
            "" if row["api_version"] is None else str(row["api_version"]),
            str(row["count"]),
            ", ".join(f"{n}×{c}" for n, c in row["errors"].items()),
            _ms(row["p50_ms"]),
            _ms(row["p95_ms"]),
            _ms(row["p99_ms"]),
            _ms(row["max_ms"]),
            ", ".join(f"{s}×{c}" for s, c in row["statuses"].items() if s != "ok"),
        ),
    ),
    (
        "topics",
        "Topics",
        [
            TableColumn("topic", wrap=True),
            TableColumn("partition", "right"),
            TableColumn("produced records", "right", summed=True),
            TableColumn("produced bytes", "right", keep=1),
            TableColumn("fetched records", "right", summed=True),
            TableColumn("fetched bytes", "right", keep=1),
        ],
        lambda row, width: (
            str(row["topic"]),
            str(row["partition"]),
            str(row["produced_records"]),
            size(row["produced_bytes"]),
            str(row["fetched_records"]),
            size(row["fetched_bytes"]),
        ),
    ),
    (
        "clients",
        "Clients",
        [
            TableColumn("client id"),
            TableColumn("exchanges", "right", summed=True),
            TableColumn("bytes", "right", keep=2),
            TableColumn("errors", "right", summed=True),
            TableColumn("p50", "right", keep=3),
            TableColumn("p99", "right", keep=1),
            TableColumn("APIs", wrap=True, keep=4),
        ],
        lambda row, width: (
            elide(row["client_id"], max(20, width // 6), "middle"),  # one line each: ids lose their middle
            str(row["exchanges"]),
            size(row["bytes"]),
            str(row["errors"]),
            _ms(row["p50_ms"]),
            _ms(row["p99_ms"]),
            ", ".join(f"{a}×{n}" for a, n in sorted(row["apis"].items(), key=lambda i: -i[1])),
        ),
    ),
    (
        "serialization",
        "Serialization of values (docs/values.md)",
        [
            TableColumn("topic", wrap=True),
            TableColumn("format"),
            TableColumn("framing", keep=2),
            TableColumn("schema ids", wrap=True),
            TableColumn("subjects", wrap=True, keep=1),
            TableColumn("produced records", "right"),
            TableColumn("fetched records", "right"),
        ],
        lambda row, width: (
            str(row["topic"]),
            row["format"],
            row["framing"],
            ", ".join(map(str, row["schema_ids"])) or "-",
            ", ".join(row["subjects"]) or "-",
            str(row["produced_records"]),
            str(row["fetched_records"]),
        ),
    ),
    (
        "groups",
        "Consumer groups",
        [
            TableColumn("group", wrap=True),
            TableColumn("members", "right"),
            TableColumn("generations", wrap=True),
            TableColumn("rebalances", "right", summed=True),
            TableColumn("offset commits", "right", keep=1, summed=True),
        ],
        lambda row, width: (
            row["group"],
            str(row["members"]),
            ", ".join(map(str, row["generations"])),
            str(row["rebalances"]),
            str(row["offset_commits"]),
        ),
    ),
    (
        "tls",
        "TLS connections",
        [
            TableColumn("#", "right"),
            TableColumn("client → broker"),
            TableColumn("version", keep=3),
            TableColumn("cipher suite", keep=1),
            TableColumn("SNI", wrap=True, keep=4),
            TableColumn("ALPN", wrap=True, keep=5),
            TableColumn("bytes →", "right", keep=6),
            TableColumn("bytes ←", "right", keep=6),
            TableColumn("decrypted records", "right", keep=2),
            TableColumn("exchanges", "right", summed=True),
            TableColumn("hidden", "right", wrap=True),
        ],
        lambda row, width: (
            str(row["connection"]),
            f"{row['client']} → {row['broker']}",
            row["version"] or "?",
            row["cipher_suite"] or "?",
            row["sni"] or "-",
            "/".join(row["alpn"]) or "-",
            size(row["bytes"][0]),
            size(row["bytes"][1]),
            f"{sum(row['decrypted'])}/{sum(row['records'])}",
            str(row["exchanges"]),
            Text(
                str(row["exchanges_hidden"]) + (why_hidden(row["secret"], row["version"]) if row["exchanges_hidden"] else ""),
                style="yellow" if row["exchanges_hidden"] else "",
            ),
        ),
    ),
    (
        "rebalances",
        "Rebalances",
        [
            TableColumn("group", wrap=True),
            TableColumn("generation", "right"),
            TableColumn("started (UTC)", wrap=True),
            TableColumn("duration", wrap=True),
            TableColumn("members", "right", keep=1),
            TableColumn("protocol", keep=2),
            TableColumn("reasons", wrap=True),
        ],
        lambda row, width: (
            row["group"],
            "-" if row["generation"] is None else str(row["generation"]),
            row["start"],
            _ms(row["duration_ms"]) + ("" if row["completed"] else " (incomplete)"),
            str(row["members"]),
            row["protocol"] or "-",
            "; ".join(f"{r}" + (f" ×{n}" if n > 1 else "") for r, n in row["reasons"].items()),
        ),
    ),
]
ALWAYS = ("apis", "clients")
"""Tables drawn even when empty; the others only when the capture has something for them."""


def print_stats(stats: Stats, console: Console, notes: Sequence[Diagnostic] = ()) -> None:
    """The tables, each fitted to the console's width; `notes` say why the totals are partial, if they are."""
    tables = dict(stats.tables())
    width = console.width
    for name, title, columns, cells in LAYOUTS:
        if tables.get(name) or name in ALWAYS:
            console.print(fitted_table(title, columns, (cells(row, width) for row in tables[name]), width))
    for note in notes:
        console.print(Text(printable(f"{note.code}: {note.message}"), style="magenta"), highlight=False)
