"""The charts tab: latency per API on a log scale, exchanges per second, and each consumer group's rebalances."""

from __future__ import annotations

import math
from collections import defaultdict

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kdissect.browse.index import Index
from kdissect.views.terminal import duration

BLOCKS = " ▁▂▃▄▅▆▇█"
BUCKETS = [(10**e, label) for e, label in ((5, "<100µs"), (6, "<1ms"), (7, "<10ms"), (8, "<100ms"), (9, "<1s"), (10, "<10s"))]
"""Upper bounds in ns, one decade each; a last bucket holds the rest."""


def bar(value: int, top: int) -> str:
    """A block whose height grows with the log of value, so one busy bucket does not flatten the others."""
    if not value or not top:
        return BLOCKS[0]
    return BLOCKS[max(1, round(math.log1p(value) / math.log1p(top) * (len(BLOCKS) - 1)))]


def latency_table(index: Index) -> Table:
    per_api: dict[str, list[int]] = defaultdict(lambda: [0] * (len(BUCKETS) + 1))
    for (key, _version), api in index.stats.apis.items():
        counts = per_api[api["name"] or f"api {key}" if key is not None else "?"]
        for latency in api["latencies"]:
            counts[next((i for i, (bound, _) in enumerate(BUCKETS) if latency < bound), len(BUCKETS))] += 1
    table = Table(title="Latency per API (log scale: one decade a column)", title_justify="left", title_style="bold", header_style="bold")
    table.add_column("API")
    for _, label in [*BUCKETS, (0, "≥10s")]:
        table.add_column(label, justify="right")
    top = max((max(c) for c in per_api.values()), default=0)
    for name, counts in sorted(per_api.items(), key=lambda item: -sum(item[1])):
        if sum(counts):
            table.add_row(name, *(Text(f"{bar(n, top)} {n}" if n else "·", style="cyan" if n else "dim") for n in counts))
    return table


def rate_line(index: Index, width: int) -> Text:
    """Exchanges per second over the capture, one block per time slice."""
    count = len(index)
    text = Text("Exchanges per second", style="bold")
    if not count:
        return text + Text("\n(none yet)", style="dim")
    times = [index.ts(0), index.ts(count - 1)]
    span = max(1, times[1] - times[0])
    slices = max(1, min(width, math.ceil(span / 1e9)))
    counts = [0] * slices
    for i in range(count):
        counts[min(slices - 1, (index.ts(i) - times[0]) * slices // span)] += 1
    seconds = span / 1e9 / slices
    top = max(counts)
    text.append(f"  ({duration(span)} in {slices} slices of {seconds:.2f} s; peak {top / seconds:.1f}/s)\n", style="dim")
    text.append("".join(bar(n, top) for n in counts), style="green")
    return text


def group_timeline(index: Index, width: int) -> RenderableType:
    """Each group's rebalances along the capture: when, how long, which generation, who, why."""
    groups = index.stats.groups
    title = Text("Consumer groups", style="bold")
    if not groups:
        return Group(title, Text("(no group traffic)", style="dim"))
    first = index.ts(0) if len(index) else 0
    last = index.ts(len(index) - 1) if len(index) else 1
    span = max(1, last - first)
    lines: list[RenderableType] = [title]
    for name, group in sorted(groups.items()):
        lane = [" "] * width
        rounds = group.rows(name)
        for r in rounds:
            start = max(0, min(width - 1, (r.start - first) * width // span))
            end = start if r.end is None else max(start, min(width - 1, (r.end - first) * width // span))
            for x in range(start, end + 1):
                lane[x] = "█" if r.synced else "░"
        lines.append(
            Text(f"{name}", style="bold cyan")
            + Text(f"  {len(group.members)} members, generations {sorted(group.generations)}, {len(rounds)} rebalances", style="dim")
        )
        lines.append(Text("".join(lane), style="yellow"))
        for r in rounds:
            took = "unfinished" if r.end is None else duration(r.end - r.start)
            reasons = ", ".join(f"{reason}×{n}" for reason, n in r.reasons.most_common(2))
            lines.append(Text(f"  gen {r.generation}: +{duration(r.start - first)}, {took}, {len(r.members)} members; {reasons}"))
    return Group(*lines)


def charts(index: Index, width: int) -> RenderableType:
    with index.lock:
        return Group(latency_table(index), Text(), rate_line(index, width), Text(), group_timeline(index, width))
