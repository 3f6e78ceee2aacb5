"""The charts pane: latency per API on a log scale, exchanges per second, and each consumer group's rebalances,
drawn for the exchanges the list shows (all of them, or those of the active filter).

The counting runs in a worker over copies of the index's columns, so a million exchanges do not stall the screen;
the groups' rebalances come from the index's pass (`lanes`, made on its thread from a `views.stats.Stats`).
"""

from __future__ import annotations

import copy
import math
from array import array
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from kdissect.browse.index import NONE, Index
from kdissect.browse.wire_text import wire
from kdissect.doctor.rebalances import Round
from kdissect.views.stats import Stats
from kdissect.views.terminal import duration

BLOCKS = " ▁▂▃▄▅▆▇█"
BUCKETS = [(10**e, label) for e, label in ((5, "<100µs"), (6, "<1ms"), (7, "<10ms"), (8, "<100ms"), (9, "<1s"), (10, "<10s"))]
"""Upper bounds in ns, one decade each; a last bucket holds the rest."""
BOUNDS = [bound for bound, _ in BUCKETS]


@dataclass(frozen=True, slots=True)
class Lane:
    """One consumer group's rebalances, copied out of the pass's `Stats` for the charts."""

    name: str
    members: int
    generations: tuple[int, ...]
    rounds: tuple[Round, ...]


def lanes(stats: Stats) -> tuple[Lane, ...]:
    """Each group's lane as it stands: made on the pass's thread, which goes on changing its rounds."""
    return tuple(
        Lane(name, len(group.members), tuple(sorted(group.generations)), tuple(copy.deepcopy(group.rows(name))))
        for name, group in sorted(stats.rebalances.groups.items())
    )


@dataclass(frozen=True, slots=True)
class Drawing:
    """What a drawing counts: copies of the index's columns, taken on the UI thread."""

    api: array
    latency: array
    ts: array
    groups: array
    group_sets: list[tuple[str, ...]]
    positions: Sequence[int]
    """The exchanges the list shows: a filter's matches or a sorted order; a range for all of them."""
    filtered: str
    """The filter the list shows, "" for none."""
    lanes: tuple[Lane, ...]
    width: int
    names: Mapping[int, str]
    """The run's API names."""


def bar(value: int, top: int) -> str:
    """A block whose height grows with the log of value, so one busy bucket does not flatten the others."""
    if not value or not top:
        return BLOCKS[0]
    return BLOCKS[max(1, round(math.log1p(value) / math.log1p(top) * (len(BLOCKS) - 1)))]


def latency_table(drawing: Drawing) -> Table:
    per_api: dict[str, list[int]] = defaultdict(lambda: [0] * (len(BUCKETS) + 1))
    api, latency = drawing.api, drawing.latency
    for i in drawing.positions:
        ns = latency[i]
        if ns != NONE:
            key = api[i]
            per_api[drawing.names.get(key, f"api {key}") if key >= 0 else "?"][bisect_right(BOUNDS, ns)] += 1
    table = Table(title="Latency per API (log scale: one decade a column)", title_justify="left", title_style="bold", header_style="bold")
    table.add_column("API")
    for _, label in [*BUCKETS, (0, "≥10s")]:
        table.add_column(label, justify="right")
    top = max((max(c) for c in per_api.values()), default=0)
    for name, counts in sorted(per_api.items(), key=lambda item: -sum(item[1])):
        table.add_row(name, *(Text(f"{bar(n, top)} {n}" if n else "·", style="cyan" if n else "dim") for n in counts))
    return table


def rate_line(drawing: Drawing) -> Text:
    """Exchanges per second over the time the exchanges span, one block per time slice."""
    text = Text("Exchanges per second", style="bold")
    times = [drawing.ts[i] for i in drawing.positions]
    if not times:
        return text + Text("\n(none yet)", style="dim")
    first = min(times)
    span = max(1, max(times) - first)
    slices = max(1, min(drawing.width, math.ceil(span / 1e9)))
    counts = [0] * slices
    for ts in times:
        counts[min(slices - 1, (ts - first) * slices // span)] += 1
    seconds = span / 1e9 / slices
    top = max(counts)
    text.append(f"  ({duration(span)} in {slices} slices of {seconds:.2f} s; peak {top / seconds:.1f}/s)\n", style="dim")
    text.append("".join(bar(n, top) for n in counts), style="green")
    return text


def group_timeline(drawing: Drawing) -> RenderableType:
    """Each group's rebalances along the capture: when, how long, which generation, who, why. With a filter, the
    groups its exchanges name, each with all its rebalances."""
    width, ts = drawing.width, drawing.ts
    shown = drawing.lanes
    title = Text("Consumer groups", style="bold")
    if drawing.filtered:
        named = {name for n in {drawing.groups[i] for i in drawing.positions} for name in drawing.group_sets[n]}
        shown = tuple(lane for lane in shown if lane.name in named)
        title.append("  the listed exchanges name (each with all its rebalances)", style="dim")
    if not shown:
        return Group(title, Text("(no group traffic)", style="dim"))
    first = min(ts) if ts else 0
    span = max(1, (max(ts) if ts else 1) - first)
    lines: list[RenderableType] = [title]
    for lane in shown:
        cells = [" "] * width
        for r in lane.rounds:
            start = max(0, min(width - 1, (r.start - first) * width // span))
            end = start if r.end is None else max(start, min(width - 1, (r.end - first) * width // span))
            for x in range(start, end + 1):
                cells[x] = "█" if r.synced else "░"
        about = f"  {lane.members} members, generations {list(lane.generations)}, {len(lane.rounds)} rebalances"
        lines.append(wire(lane.name, style="bold cyan") + Text(about, style="dim"))
        lines.append(Text("".join(cells), style="yellow"))
        for r in lane.rounds:
            took = "unfinished" if r.end is None else duration(r.end - r.start)
            reasons = ", ".join(f"{reason}×{n}" for reason, n in r.reasons.most_common(2))
            lines.append(wire(f"  gen {r.generation}: +{duration(r.start - first)}, {took}, {len(r.members)} members; {reasons}"))
    return Group(*lines)


def which(drawing: Drawing) -> Text:
    """The line that says which exchanges the charts count."""
    count = len(drawing.positions)
    if not drawing.filtered:
        return Text(f"All {count} exchanges indexed so far", style="bold")
    return Text(f"The {count} exchanges the filter lists: ", style="bold") + wire(drawing.filtered, style="cyan")


class ChartsPane(VerticalScroll):
    """The charts pane; `draw` counts in a worker, the last drawing asked for is the one shown."""

    class Drawn(Message):
        def __init__(self, charts: RenderableType) -> None:
            super().__init__()
            self.charts = charts

    def compose(self) -> ComposeResult:
        yield Static("", id="charts")

    def draw(self, index: Index, positions: Sequence[int], filtered: str, lanes: tuple[Lane, ...], width: int) -> None:
        """Draw the exchanges at `positions` (a range for all of them): the columns are copied here, on the UI
        thread that extends them, and counted in a worker that replaces any drawing still under way."""
        taken = positions if isinstance(positions, range) else list(positions)
        columns = (index.api[:], index.latency[:], index.ts[:], index.groups[:])
        self._count(Drawing(*columns, list(index.group_sets), taken, filtered, lanes, width, index.names))

    @work(thread=True, exclusive=True, group="charts")
    def _count(self, drawing: Drawing) -> None:
        charts = Group(which(drawing), Text(), latency_table(drawing), Text(), rate_line(drawing), Text(), group_timeline(drawing))
        if not get_current_worker().is_cancelled:
            self.post_message(self.Drawn(charts))

    @on(Drawn)
    def drawn(self, message: Drawn) -> None:
        self.query_one("#charts", Static).update(message.charts)
