"""`kdissect live`: sniff an interface and dissect Kafka as it happens.

`live` takes `read`'s shared options (commands/options.py) with `--count` (exchanges), plus the capture's own:
`--interface`, `--bpf`, `--write`, `--packets`, `--duration`, `--promisc`, and `--browse`, which shows the
exchanges in the browser of `kdissect browse` as they come (browse/live.py); cli.py registers it.

The loop is single-threaded: it waits on the capture socket and on a wake-up pipe for signals, reads what
is ready, feeds the packets to the core in capture order and hands the events to the JSON writer or the
view, and to the doctor. SIGINT (Ctrl-C) and SIGTERM end the session like `--count`, `--packets` and `--duration`
do: the core settles the open connections and the final summary is printed with the doctor's findings (with
--json, one finding object each); exit status 0. A second Ctrl-C quits at once.
"""

from __future__ import annotations

import select
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kdissect.commands.options import Common, PipeClosed, UserError, takes
from kdissect.commands.signals import Stopper

BATCH = 512
"""Packets read per turn of the loop before the view and the stop conditions get a look."""
TICK = 0.25
"""Longest wait for packets, in seconds: how often the view and --duration are looked at when all is quiet."""
IDLE_EVERY = 10.0
"""Seconds between two looks for connections idle past --metrics-idle, in a tap."""


@takes(
    "input",
    "values",
    "decoding",
    "filters",
    "output",
    "count",
    "secrets",
    "metrics",
    helps={
        "port": "Kafka broker ports (default 9092). The capture filter is TCP on these ports.",
        "quiet": "The final summary only (no screen updated in place, no 'listening on' line); with --json, no summary on stderr.",
    },
)
def live(
    common: Common,
    interface: Annotated[
        Optional[str],
        typer.Option(
            "--interface",
            "-i",
            metavar="IFACE",
            help="The network interface to capture on (lo, eth0, ...; `any` for all on Linux).",
            show_default=False,
        ),
    ] = None,
    bpf: Annotated[
        Optional[str],
        typer.Option(
            "--bpf",
            metavar="FILTER",
            help="A capture filter in tcpdump's syntax, instead of TCP on the --port ports (e.g. 'tcp portrange 9092-9094').",
        ),
    ] = None,
    write: Annotated[Optional[Path], typer.Option("--write", "-w", help="Also save the captured packets to this pcap file.")] = None,
    packets: Annotated[
        Optional[int], typer.Option("--packets", metavar="N", help="Stop after N packets.", rich_help_panel="Limits")
    ] = None,
    duration: Annotated[
        Optional[float], typer.Option("--duration", metavar="SECONDS", help="Stop after this many seconds.", rich_help_panel="Limits")
    ] = None,
    promisc: Annotated[
        bool, typer.Option("--promisc", help="Put the interface in promiscuous mode (to see traffic of other hosts on a mirror port).")
    ] = False,
    all_events: Annotated[
        bool,
        typer.Option("--all-events", help="With --json, also write stream notices and connection summaries.", rich_help_panel="Output"),
    ] = False,
    browse: Annotated[
        bool,
        typer.Option(
            "--browse",
            help="Browse the exchanges as they are captured (the browser of `kdissect browse`); the packets are kept in "
            "the --write file, or in a temporary one removed when the browser closes. --packets and --duration stop "
            "the capture, not the browser.",
            rich_help_panel="Output",
        ),
    ] = False,
    metrics: Annotated[
        Optional[str],
        typer.Option(
            "--metrics",
            metavar="[ADDR:]PORT",
            help="Serve Prometheus metrics (OpenMetrics) on this port, every interface unless ADDR is given "
            "(docs/metrics.md). The session is then a tap: no exchange rows unless --json or -T asks for them.",
            rich_help_panel="Metrics",
        ),
    ] = None,
    otlp: Annotated[
        Optional[str],
        typer.Option(
            "--otlp",
            metavar="URL",
            help="Push the same metrics over OTLP/HTTP to this collector (http://HOST:4318), every --otlp-interval.",
            rich_help_panel="Metrics",
        ),
    ] = None,
    otlp_interval: Annotated[
        float, typer.Option("--otlp-interval", metavar="SECONDS", help="Seconds between two OTLP pushes.", rich_help_panel="Metrics")
    ] = 15.0,
    ring_size: Annotated[
        str,
        typer.Option(
            "--ring-size",
            metavar="SIZE",
            help="What the kernel holds for kdissect while it is busy (the capture ring; KiB, MiB or GiB). Past it the "
            "kernel drops packets, and kdissect counts and tells what it dropped.",
            rich_help_panel="Limits",
        ),
    ] = "32MiB",
    backend: Annotated[
        Optional[str],
        typer.Option(
            "--backend",
            metavar="NAME",
            help="How packets are read: ring (a memory-mapped TPACKET_V3 ring, the default on Linux), socket (one "
            "recvmsg per packet), libpcap (the default elsewhere).",
            rich_help_panel="Input",
        ),
    ] = None,
) -> None:
    """Capture live: Kafka exchanges as they complete, on a screen updated in place (or as NDJSON with --json).
    Ctrl-C, --count, --packets or --duration ends the session with the final summary. With --metrics or --otlp, a
    tap that exports metrics for as long as it runs."""
    from kdissect.capture.live import LiveError, capture_filter, interfaces, open_live

    if (packets is not None and packets < 1) or (duration is not None and duration < 0):
        raise UserError("--packets takes a number from 1 up, --duration seconds from 0 up")
    ring = _size(ring_size)
    from kdissect.capture.live import BACKENDS

    if backend is not None and backend not in BACKENDS:
        raise UserError(f"--backend {backend}: choose one of {', '.join(BACKENDS)}")
    tapping = metrics is not None or otlp is not None
    if tapping and browse:
        raise UserError("--browse shows the exchanges in the browser: --metrics and --otlp do not go with it")
    if otlp_interval <= 0:
        raise UserError("--otlp-interval takes seconds above 0")
    if not interface:
        known = ", ".join([*interfaces(), "any"] if sys.platform.startswith("linux") else interfaces())
        raise UserError(f"say which interface to capture on: -i IFACE ({known})")
    if browse and (common.json or common.count is not None or all_events):
        raise UserError("--browse shows every exchange in the browser: --json, --count and --all-events do not go with it")
    expression = capture_filter(common.options.ports, bpf)

    pcap = None
    if write is not None:
        try:
            pcap = open(write, "wb")
        except OSError as exc:
            raise UserError(f"{write}: {exc.strerror or exc}") from None
    try:
        try:
            capture = open_live(interface, expression, promisc=promisc, buffer_bytes=ring, backend=backend)
        except LiveError as exc:
            raise UserError(str(exc)) from None
        tap = None
        try:
            if browse:
                _browse(capture, common, pcap, packets, duration)
                return
            if tapping:
                from kdissect.commands.tapping import LiveTap

                tap = LiveTap(common.tap, common.wanted, metrics, otlp, otlp_interval, interface)
            with common.open_output() as stream:
                session = _Session(capture, common, stream, all_events, pcap, tap)  # a mistake in -T or -e: before listening
                if common.tls_keylog is not None:
                    from kdissect.tls.follow import KeyLogFollower

                    session.keylog = KeyLogFollower(common.tls_keylog, len(common.options.tls_keylog), session.dissector.add_tls_keylog)
                failure = session.run(packets, duration)
        except BrokenPipeError:
            raise PipeClosed from None
        finally:
            if tap is not None:
                tap.close_quietly()
            capture.close()
    finally:
        if pcap is not None:
            pcap.close()
    if failure:
        print(f"kdissect: error: {failure}", file=sys.stderr)
        raise typer.Exit(1)


def _size(text: str) -> int:
    """A size option's bytes: a number of bytes, or one that ends in KiB, MiB or GiB."""
    from kdissect.commands.options import UNITS

    unit = next((u for u in UNITS if text.endswith(u)), None)
    number = text[: -len(unit)] if unit else text
    if not number.isdigit() or int(number) < 1:
        raise UserError(f"--ring-size {text}: give a size such as 64MiB")
    return int(number) * (UNITS[unit] if unit else 1)


def _browse(capture: Any, common: Common, store: Any, packets: int | None, duration: float | None) -> None:
    """The browser on a live capture: its packets kept in `store` (the --write file) or a temporary file."""
    from kdissect.browse.app import BrowseApp  # Textual: 0.49 s of imports no other command pays
    from kdissect.browse.live import LiveFeed

    with tempfile.NamedTemporaryFile(prefix="kdissect-live-", suffix=".pcap") if store is None else store as kept:
        app = BrowseApp(
            Path(kept.name),
            common.options,
            common.wanted.text,
            live=LiveFeed(capture, kept, packets, duration, common.tls_keylog),
            values=common.values,
        )
        app.run()
        app.indexer.ended.wait(timeout=5)  # it stops within a tick; then the capture and the file can close
    if app.return_code:  # the browser failed (Textual printed why)
        raise typer.Exit(app.return_code)


class _Session:
    """One live session: the capture, the core, and where the events go (the view or the writer, the doctor, and
    with --metrics/--otlp the tap, whose own doctor then stands in for the session's)."""

    def __init__(self, capture: Any, common: Common, stream: Any, all_events: bool, pcap: Any, tap: Any = None) -> None:
        from kdissect.dissector import make_dissector
        from kdissect.events import Exchange

        self.capture = capture
        self.stream = stream
        self.quiet = common.quiet
        self.exchanges = common.count
        """Stop after this many exchanges shown (--count)."""
        self._exchange = Exchange
        self.dissector = make_dissector(common.options)
        self.keylog: Any = None
        """A `tls.follow.KeyLogFollower` with --tls-keylog."""
        self.pcap_writer = None
        self.pcap = pcap
        if pcap is not None:
            from kdissect.capture.writer import PcapWriter

            self.pcap_writer = PcapWriter(pcap, capture.linktype, nanosecond=True)
        self.text = common.format == "text"
        self.tap = tap
        """A `commands.tapping.LiveTap` with --metrics or --otlp."""
        self.output: Any = None
        self.sink: Any = None
        self.summary: Any = None
        self.live_view: Any = None
        """The screen updated in place, on a terminal."""
        self.doctor: Any = None
        if tap is None or not self.text:  # a tap writes rows only when --json or -T asks for them: it runs for days
            self._writes(common, stream, all_events)
        if tap is None:
            from kdissect.doctor.engine import Doctor

            self.doctor = Doctor(wanted=common.wanted, values=common.values)

    def _writes(self, common: Common, stream: Any, all_events: bool) -> None:
        from kdissect.capture.linktypes import name as linktype_name
        from kdissect.views.output import Title
        from kdissect.views.sink import EventSink

        capture = self.capture
        self.output = common.make_output("live", stream, all_events=all_events, live=capture)
        shown = f", filter '{capture.expression}'" if capture.expression else ""
        self.output.begin(Title(f"live on {capture.interface}", linktype_name(capture.linktype) + shown))
        self.sink = EventSink(common.wanted, self.output)
        summary = self.sink.summary
        assert summary is not None, "a live session's sink keeps its totals"
        self.summary = summary
        self.live_view = self.output.screen(summary) if self.text else None

    def handle(self, event: Any) -> None:
        """Route one event: to the doctor (or the tap), and to the view or the writer (as the filter says); once
        --count exchanges were shown, only what the summary needs of the rest."""
        if self.tap is not None:
            self.tap.tap.add(event)
        else:
            self.doctor.add(event)
        if self.sink is None:
            return
        if self.exchanges is not None and self.summary.shown >= self.exchanges and isinstance(event, self._exchange):
            return
        self.sink.add(event)

    @property
    def counted(self) -> bool:
        if self.exchanges is None:
            return False
        shown = self.summary.shown if self.summary is not None else self.dissector.counters.exchanges
        return shown >= self.exchanges

    def run(self, count: int | None, duration: float | None) -> str | None:
        """Capture until a stop; returns what went wrong when the capture itself failed, else None."""
        from kdissect.capture.linktypes import name as linktype_name

        capture = self.capture
        tap = self.tap
        if not self.quiet:
            shown = f", filter '{capture.expression}'" if capture.expression else ""
            serving = f"; {tap.listening()}" if tap is not None else ""
            print(
                f"kdissect: listening on {capture.interface}, link type {linktype_name(capture.linktype)}{shown}{serving}",
                file=sys.stderr,
                flush=True,
            )
        stopper = Stopper()
        stopper.install()
        poller = select.poll()
        poller.register(capture.fileno(), select.POLLIN)
        poller.register(stopper.fileno(), select.POLLIN)
        if tap is not None and tap.fileno() is not None:
            poller.register(tap.fileno(), select.POLLIN)
        deadline = None if duration is None else time.monotonic() + duration
        feed, handle = self.dissector.feed, self.handle
        pcap_writer = self.pcap_writer
        stats = capture.stats
        failure = None
        timed_out = False
        next_stats = next_idle = time.monotonic() + 1.0
        if self.live_view is not None:
            self.live_view.start()
        try:
            wait = 0.0
            while stopper.stopping is None:
                if deadline is not None:
                    wait = min(wait, max(0.0, deadline - time.monotonic()))
                if wait:
                    poller.poll(wait * 1000)
                    stopper.drain()
                limit = BATCH if count is None else min(BATCH, count - stats.packets)
                if self.keylog is not None:
                    self.keylog.poll()
                try:
                    packets = capture.read(limit)
                except OSError as exc:
                    failure = f"the capture on {capture.interface} failed: {exc.strerror or exc}"
                    break
                for packet in packets:
                    if pcap_writer is not None:
                        pcap_writer.write(packet)
                    events = feed(packet)
                    if events:
                        for event in events:
                            handle(event)
                # read again at once while packets keep coming; otherwise wait for them
                wait = 0.0 if len(packets) == limit else TICK
                now = time.monotonic()
                if (count is not None and stats.packets >= count) or self.counted:
                    break
                if deadline is not None and now >= deadline:
                    timed_out = True
                    break
                fresh = now >= next_stats
                if fresh:
                    capture.update_stats()
                    next_stats = now + 1.0
                    if self.pcap is not None:
                        self.pcap.flush()
                if tap is not None:
                    tap.turn(capture, fresh)
                    if now >= next_idle:
                        for event in self.dissector.evict_idle(time.time_ns() - tap.idle):
                            handle(event)
                        next_idle = now + IDLE_EVERY
                if self.live_view is not None:
                    self.live_view.update(stats.packets, stats.bytes, stats.kernel_drops)
            if (stopper.stopping is not None or timed_out) and failure is None:
                self._drain(count)
            for event in self.dissector.finish():
                handle(event)
            capture.update_stats()
        finally:
            stopper.restore()
            if self.live_view is not None:
                self.live_view.stop()
        self._closing()
        return failure

    def _drain(self, count: int | None, budget: float = 1.0) -> None:
        """Take the packets the kernel already holds when a signal or --duration ends the session (for at
        most `budget` seconds), so that what happened before the stop is all there."""
        capture, stats = self.capture, self.capture.stats
        until = time.monotonic() + budget
        while time.monotonic() < until:
            limit = BATCH if count is None else min(BATCH, count - stats.packets)
            if limit <= 0:
                return
            try:
                packets = capture.read(limit)
            except OSError:
                return
            for packet in packets:
                if self.pcap_writer is not None:
                    self.pcap_writer.write(packet)
                for event in self.dissector.feed(packet):
                    self.handle(event)
            if len(packets) < limit:
                return

    def _closing(self) -> None:
        from kdissect.diagnostic import Diagnostic
        from kdissect.views.output import Closing
        from kdissect.views.terminal import size

        capture, stats, summary, counters = self.capture, self.capture.stats, self.summary, self.dissector.counters
        if self.pcap is not None:
            self.pcap.flush()
        report = self.tap.close(capture) if self.tap is not None else self.doctor.report()
        if self.output is None:  # a tap without rows: the totals and the last window's verdict
            if not self.quiet:
                drops = f", {stats.kernel_drops} dropped by the kernel" if stats.kernel_drops else ""
                print(
                    f"kdissect: {stats.packets} packets ({size(stats.bytes)}) captured on {capture.interface}{drops}; "
                    f"{counters.exchanges} exchanges on {counters.kafka_connections} Kafka connections",
                    file=sys.stderr,
                    flush=True,
                )
            if report is not None:
                print(f"Doctor (the last {self.tap.tap.settings.window:g} s): {report.verdict}", file=self.stream)
            return
        if not self.text:
            self.output.end(Closing(report=report))
            if not self.quiet:
                drops = f", {stats.kernel_drops} dropped by the kernel" if stats.kernel_drops else ""
                shown = f" ({summary.shown} written)" if summary.shown != summary.exchanges else ""
                print(
                    f"kdissect: {stats.packets} packets ({size(stats.bytes)}) captured on {capture.interface}{drops}; "
                    f"{summary.exchanges} exchanges{shown} on {counters.kafka_connections} Kafka connections",
                    file=sys.stderr,
                    flush=True,
                )
            return
        notes = []
        if stats.kernel_drops:
            notes.append(
                Diagnostic(
                    "capture.dropped",
                    f"{stats.kernel_drops} packets were dropped by the kernel before kdissect read them; "
                    "the connections they belong to have gaps",
                    "warning",
                )
            )
        self.output.end(Closing(summary, counters, (capture.linktype,), tuple(notes), report=report))
