"""The report as one self-contained HTML file: the frame (assets/page.html), the style and scripts inlined, and the
report's data as one JSON document the page's script draws from.

Text from the wire travels only inside that JSON: every string in it is made `printable` first (control and
bidirectional characters shown as escapes), `<`, `>` and `&` are written as `\\u003c`-style escapes so neither
`</script>` nor `<!--` can end the element, and the script sets every string as text, never as markup. The page's
Content-Security-Policy allows its own two scripts (by their hashes) and nothing from the network.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import operator
import shlex
from dataclasses import dataclass
from importlib import resources
from typing import IO, Any, TypeVar

import orjson

from kdissect import __version__
from kdissect.diagnostic import Diagnostic
from kdissect.doctor.clients import Clients
from kdissect.doctor.engine import Report
from kdissect.doctor.finding import Finding
from kdissect.doctor.rebalances import Round
from kdissect.printable import printable
from kdissect.report.axis import Axis, Series
from kdissect.report.collector import Collector
from kdissect.report.index import ExchangeIndex
from kdissect.report.ladder import Episode
from kdissect.report.lanes import Lanes
from kdissect.report.timelines import ApiLines, ClientLines, Named, TopicLines, series_of
from kdissect.views.doctor import check_line
from kdissect.views.json_lines import finding_json, verdict_json

DRAWN = 16
"""Lines a chart draws apart (the busiest); the others are drawn as one line of the rest."""
LAGS_DRAWN = 12
LISTED = 100
"""Evidence exchanges a finding lists (all it kept are marked on the timelines)."""
MARKUP = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}
"""What JSON inside a script element must not hold as itself: `</script>` and `<!--` start with `<`."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Told:
    """What the page says about the run: the captures as the user named them, the filter, and why it is partial."""

    captures: tuple[str, ...]
    filter: str = ""
    notes: tuple[Diagnostic, ...] = ()

    @property
    def capture(self) -> str:
        """The capture the page's commands (`kdissect read ...`) name: several are read merged by time, as mergecap
        merges them into one file."""
        return self.captures[0] if len(self.captures) == 1 else "MERGED.pcap"


def write_page(stream: IO[str], collector: Collector, report: Report, clients: Clients, told: Told) -> None:
    stream.write(page(collector, report, clients, told))


def page(collector: Collector, report: Report, clients: Clients, told: Told) -> str:
    data = orjson.dumps(_safe(page_data(collector, report, clients, told))).decode().translate(MARKUP)
    script, charts = _asset("page.js"), _asset("uPlot.iife.min.js")
    frame = _asset("page.html")
    parts = {
        "/*KD:CSP*/": " ".join(f"'sha256-{_digest(code)}'" for code in (charts, script)),
        "/*KD:STYLE*/": _asset("uPlot.min.css") + "\n" + _asset("page.css"),
        "/*KD:DATA*/": data,
        "/*KD:CHARTS*/": charts,
        "/*KD:SCRIPT*/": script,
    }
    for marker, text in parts.items():
        before, found, after = frame.partition(marker)
        assert found, f"page.html lost its {marker} marker"
        frame = before + text + after
    return frame


def _asset(name: str) -> str:
    return resources.files("kdissect.report").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def _digest(code: str) -> str:
    return base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()


def _safe(value: Any) -> Any:
    """Every string of the data `printable`, keys too."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(k) if isinstance(k, str) else k: _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return value


def page_data(collector: Collector, report: Report, clients: Clients, told: Told) -> dict[str, Any]:
    """The page's data: what `stats --json` and `doctor --json` write (the same objects), and the timelines, lanes,
    episodes and inventory that only the page draws."""
    axis, timelines, stats = collector.axis, collector.timelines, collector.stats
    count = axis.count
    rebalances = stats.rebalances
    capture = told.capture
    tables = dict(stats.tables())
    return {
        "kdissect": __version__,
        "captures": list(told.captures),
        "capture": capture,
        "read": f"kdissect read {shlex.quote(capture)}",
        "show": f"kdissect show {shlex.quote(capture)} --exchange",
        "filter": told.filter,
        "notes": [f"{n.code}: {n.message}" for n in told.notes],
        "verdict": verdict_json(report),
        "findings": [_finding(f, collector.index, axis, capture) for f in report.findings],
        "stats": tables,
        "axis": {"start": (axis.origin or 0) / 1e9, "width": axis.width / 1e9, "count": count},
        "apis": _apis(timelines.apis, count),
        "errors": [{"name": name, "count": s.used(count)} for name, s in _busiest(timelines.errors, lambda s: s, count)],
        "topics": _topics(timelines.topics, count),
        "lags": _lags(timelines.lags.lines, count),
        "connections": _connections(timelines.clients, count),
        "groups": [
            _group(name, lanes, rebalances.groups[name].rows(name) if name in rebalances.groups else [])
            for name, lanes in sorted(collector.lanes.groups.items(), key=lambda item: (-len(item[1].moves), item[0]))
        ],
        "groups_untracked": collector.lanes.untracked,
        "episodes": [_episode(e) for e in collector.ladder.episodes([r for n, g in rebalances.groups.items() for r in g.rows(n)])],
        "episode_exchanges_unkept": collector.ladder.unkept,
        "clients": _clients(collector, clients, tables["clients"]),
        "flows": [
            {
                "connection": f.connection,
                "client": f.client,
                "broker": f.broker,
                "client_id": f.client_id,
                "exchanges": f.exchanges,
                "bytes_out": f.bytes[0],
                "bytes_in": f.bytes[1],
                "first": f.first_ts / 1e9,
                "last": f.last_ts / 1e9,
                "ended": f.ended,
                "closed_by": f.closed_by,
                "tls": f.tls,
            }
            for f in collector.inventory.busiest()
        ],
        "flows_left_out": collector.inventory.flows_left_out,
    }


def _finding(finding: Finding, index: ExchangeIndex, axis: Axis, capture: str) -> dict[str, Any]:
    e = finding.evidence
    listed = [index.listed(i) for i in e.ids[:LISTED] if index.known(i)]
    return {
        **finding_json(finding),
        "check": check_line(finding, capture),
        "window": None if e.first_ts is None or e.last_ts is None else [e.first_ts / 1e9, e.last_ts / 1e9],
        "marks": sorted(index.buckets(e.ids, axis).items()),
        "kept": len(e.ids),
        "listed": [
            [
                x.id,
                x.ts / 1e9,
                x.api,
                x.client_id,
                x.connection,
                None if x.latency is None else round(x.latency / 1e6, 3),
                None if x.queued is None else round(x.queued / 1e6, 3),
                x.status,
                x.error,
            ]
            for x in listed
        ],
    }


def _ms(values: list[int | None]) -> list[float | None]:
    return [None if v is None else round(v / 1e6, 3) for v in values]


def _busiest(named: Named[Any, T], count_of: Any, buckets: int, most: int = DRAWN) -> list[tuple[Any, T]]:
    """The `most` lines with the largest totals, the others as one (`None`, merged); `count_of(lines)` is the Series
    whose total ranks them."""
    ranked = sorted(named.lines.items(), key=lambda item: (item[0] is None, -count_of(item[1]).total(), str(item[0])))
    kept, rest = ranked[:most], [lines for _, lines in ranked[most:]]
    if kept and kept[-1][0] is None:  # the line of the rest stays the rest
        rest.insert(0, kept.pop()[1])
    if rest:
        kept.append((None, _merged(rest)))
    return kept


def _merged(lines: list[T]) -> T:
    """Several lines as one: their series added (or the most kept) bucket by bucket, in a copy of the first."""
    out = copy.deepcopy(lines[0])
    for other in lines[1:]:
        for mine, theirs in zip(series_of(out), series_of(other)):
            combine = max if mine.most else operator.add
            mine.values[:] = [combine(a, b) for a, b in zip(mine.values, theirs.values)]
    return out


def _apis(apis: Named[str, ApiLines], count: int) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "count": lines.count.used(count),
            "service_ms": _ms(lines.service.used(count)),
            "queue_ms": _ms(lines.queue.used(count)),
            "polls": lines.polls.used(count),
            "poll_ms": _ms(lines.poll_wait.used(count)),
        }
        for name, lines in _busiest(apis, lambda lines: lines.count, count)
    ]


def _topics(topics: Named[str, TopicLines], count: int) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "produced_bytes": lines.produced_bytes.used(count),
            "produced_records": lines.produced_records.used(count),
            "fetched_bytes": lines.fetched_bytes.used(count),
            "fetched_records": lines.fetched_records.used(count),
        }
        for name, lines in _busiest(topics, lambda lines: _both(lines.produced_bytes, lines.fetched_bytes), count)
    ]


def _both(a: Series, b: Series) -> Series:
    both = Series()
    both.values = [x + y for x, y in zip(a.values, b.values)]
    return both


def _lags(lags: dict[Any, Series], count: int) -> list[dict[str, Any]]:
    """The partitions whose lag grew the most (the largest at any time), each as consumer, topic and partition."""
    ranked = sorted(((key, s) for key, s in lags.items() if key is not None), key=lambda item: (-item[1].total(), str(item[0])))
    return [
        {"consumer": consumer, "topic": topic, "partition": partition, "lag": s.used(count)}
        for (consumer, topic, partition), s in ranked[:LAGS_DRAWN]
    ]


def _connections(clients: Named[str, ClientLines], count: int) -> list[dict[str, Any]]:
    return [
        {"name": name, "opened": lines.opened.used(count), "closed": lines.closed.used(count)}
        for name, lines in _busiest(clients, lambda lines: lines.opened, count)
    ]


def _group(name: str, lanes: Lanes, rounds: list[Round]) -> dict[str, Any]:
    return {
        "name": name,
        "members": [list(m) for m in lanes.members],
        "moves": [[m.kind, m.lane, m.ts / 1e9, None if m.end is None else m.end / 1e9, m.exchange, m.note] for m in lanes.moves],
        "dropped": lanes.dropped,
        "rounds": [
            {
                "generation": r.generation,
                "start": r.start / 1e9,
                "end": None if r.end is None else r.end / 1e9,
                "completed": r.synced,
                "members": len(r.members),
                "reasons": dict(r.reasons),
            }
            for r in rounds
        ],
    }


def _clients(collector: Collector, clients: Clients, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    stats = {row["client_id"]: row for row in rows}
    out = []
    for client_id, use in sorted(collector.inventory.clients.items()):
        software = clients.by_client_id.get(client_id)
        row = stats.get(client_id or "(none)", {})
        out.append(
            {
                "client_id": client_id,
                "software": None if software is None else str(software),
                "versions": dict(use.versions.most_common()),
                "removed": dict(use.removed.most_common()),
                "connections": len(use.connections),
                "exchanges": row.get("exchanges"),
                "errors": row.get("errors"),
            }
        )
    return out


def _episode(episode: Episode) -> dict[str, Any]:
    return {
        "title": episode.title,
        "left_out": episode.left_out,
        "steps": [
            [
                s.id,
                s.client,
                s.client_id,
                s.broker,
                s.api,
                s.correlation_id,
                s.ts / 1e9,
                None if s.end is None else s.end / 1e9,
                s.asked,
                s.answered,
                s.status,
            ]
            for s in episode.steps
        ],
    }
