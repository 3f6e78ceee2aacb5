"""One pass over a capture file for read, show, stats and records: packets into the core with a progress display
that never mixes with the output, a stop at Ctrl-C or after --count exchanges, and the exit status the run earns
(0 clean, 1 the capture lost bytes, 130 interrupted: README's "Exit codes")."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import replace
from types import TracebackType
from typing import Any

from kdissect.commands.options import Common, ExitStatus, OutputError, UserError
from kdissect.commands.signals import Stopper

PROGRESS_EVERY = 0x1000
"""Packets between two updates of the progress display (a mask: 4096)."""


def open_source(names: tuple[str, ...]) -> Any:
    """The capture to read, or several read as one (capture/merge.py); a UserError names what cannot be read."""
    from kdissect.capture import CaptureError
    from kdissect.capture.merge import open_captures

    try:
        return open_captures(list(names or ("-",)))
    except CaptureError as exc:
        raise UserError(str(exc)) from None


def dissector_for(source: Any, options: Any, decoder: Any = None) -> Any:
    """The core for a capture's packets (`dissector.file_dissector`), with the taps joined and timed when several
    captures are read as one (kdissect/taps/); `decoder`, when given, is the one it decodes with."""
    from kdissect.dissector import MAKE, file_dissector
    from kdissect.taps.dissector import tapped

    return tapped(file_dissector(source, options, MAKE if decoder is None else decoder), source, options.limits)


class Reading:
    """A command's run over `common.capture`: `with Reading(common) as run:` opens the capture and the output stream,
    `run.writes(command)` makes the run's `Output` on it, `run.events()` yields the core's events, `run.took()` counts
    an exchange the command showed; once the output is complete, `run.finish()` raises the `ExitStatus` the run
    earned, if it is not 0.

    Ctrl-C (or SIGTERM) stops the reading between two packets and the command still writes what it has, marked
    partial (`notes()`); a second Ctrl-C quits at once. Dissecting stops there too: the core is not finished,
    so requests in flight are not reported as unanswered.
    """

    def __init__(
        self,
        common: Common,
        options: Any = None,
        jobs: int = 1,
        every_body: bool = False,
        captures: list[str] | None = None,
        indexing: bool = False,
    ) -> None:
        """`captures`: the captures to read as one, merged by time (`report` names its own); else `common.captures`.
        `indexing`: keep the capture's index in the cache when the run reads the whole file (kdissect/index/)."""
        self.common = common
        self.captures = tuple(captures) if captures else common.captures
        self.options = options or common.options
        self.jobs = jobs
        """Processes to read the capture with (`commands/jobs.py`); 1 unless the capture is a large enough file."""
        self.every_body = every_body
        """Whether this process decodes the bodies of the other processes' exchanges too: a doctor here reads them
        all (the others still test and write theirs)."""
        self.workers: Any = None
        self.output: Any = None
        """The run's `views.output.Output`, once `writes` made it."""
        self.stopper = Stopper()
        self.stopped_by: str | None = None
        """"count" when --count was reached, "done" when the command has all it wanted."""
        self.shown = 0
        self.damage: Counter[str] = Counter()
        """Diagnostics of severity error, by code: what makes the exit status 1."""
        self.indexing = indexing
        self.keeper: Any = None
        """The `index.keeping.Keeper` making the capture's index, when this run makes one."""
        self.selection: Any = None
        """The exchanges -w cuts into a capture (`rewrite.cut.Selection`), as the command chooses them."""
        if common.write is not None:
            from kdissect.rewrite.cut import Selection

            self.selection = Selection()
        self._stack = ExitStack()

    def __enter__(self) -> Reading:
        with ExitStack() as stack:
            self.source = stack.enter_context(open_source(self.captures))
            self.source.stops_when(lambda: self.stopper.stopping is not None)  # a long search over corrupt bytes too
            self.stream = stack.enter_context(self.common.open_output())
            self.stopper.install()
            stack.callback(self.stopper.restore)
            self._stack = stack.pop_all()
        options = self.options
        if self.jobs > 1 and len(self.common.captures) == 1:
            from kdissect.commands import jobs

            self.jobs = jobs.splits(self.common.capture, self.jobs)
            if self.jobs > 1:
                self.workers = jobs.Workers(self.jobs)
                self._stack.callback(self.workers.stop)
                if not self.every_body:
                    options = replace(options, keep=jobs.owned(0, self.jobs, options.keep))
        self.dissector = dissector_for(self.source, options, self._keeper())
        return self

    def _keeper(self) -> Any:
        """The decoder of an index-making run (None for the core's own): a plain pcap file, read whole, is indexed
        unless its index is already kept (one found damaged was removed as it was loaded)."""
        if not self.indexing:
            return None
        from kdissect.index import entry

        if not entry.indexable(self.source):
            return None
        capture = entry.usable(self.captures, self.options)
        if capture is None or entry.kept(capture, self.options) is not None:
            return None
        from kdissect.dissector import make_decoder
        from kdissect.index.keeping import Keeper

        decoder = make_decoder(self.options)
        if decoder is None:
            return None
        self.keeper = Keeper(capture, self.options, decoder)
        return decoder

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        return self._stack.__exit__(kind, exc, tb)

    def writes(self, command: str, **settings: Any) -> Any:
        """The run's output: `command`'s results in the chosen format, on the run's stream (`Common.make_output`);
        its title is written at once."""
        from kdissect.views.output import Title

        self.output = self.common.make_output(command, self.stream, **settings)
        self.output.begin(Title(self.source.name, self.source.format, self.source.compression))
        return self.output

    @property
    def interrupted(self) -> bool:
        return self.stopper.stopping is not None

    def took(self, exchange: Any = None) -> None:
        """The command showed one more exchange (-w cuts it into its capture); at --count the reading stops."""
        if self.selection is not None and exchange is not None:
            self.selection.add(exchange)
        self.shown += 1
        if self.common.count is not None and self.shown >= self.common.count:
            self.stopped_by = "count"

    def stop(self) -> None:
        """The command has everything it wanted: stop reading, quietly."""
        self.stopped_by = self.stopped_by or "done"

    def events(self, worker_sink: Callable[[Any], Any] | None = None) -> Iterator[Any]:
        """The core's events, packet by packet, until the capture ends or the run is stopped.

        Read with other processes (`jobs`), the exchanges of their connections come as `views.sink.Settled`:
        `worker_sink(stream)` makes the `EventSink` each of them writes with, as the command's own would."""
        from kdissect.events.damage import lost_codes
        from kdissect.views.sink import Settled

        dissected = self._dissected()
        keeper = self.keeper
        if self.workers is not None:
            assert worker_sink is not None, "a command read by several processes gives their sink"
            self.workers.start(self.common.capture, self.options, self.common.wanted, worker_sink, self.stream.flush)
            dissected = self.workers.merge(dissected)
        with closing(dissected) as events:
            for event in events:
                if type(event) is Settled:
                    self.damage.update(event.damage)
                else:
                    self.damage.update(lost_codes(event))
                if keeper is not None:
                    keeper.take(event)
                yield event
                if self.stopped_by or self.stopper.stopping:
                    return

    def _dissected(self) -> Generator[Any, None, None]:
        stopper, feed, counters = self.stopper, self.dissector.feed, self.dissector.counters
        packets = self.source.packets()
        if self.keeper is not None:
            packets = self.keeper.packets(packets)
        with self._progress() as advance:
            for packet in packets:
                yield from feed(packet)
                if stopper.stopping:
                    return
                if not counters.packets % PROGRESS_EVERY:
                    advance()
        if not stopper.stopping:  # the reader may have ended its packets early for it
            yield from self.dissector.settle()

    def notes(self) -> list[Any]:
        """What the closing view says about the capture file, and why the output stops early if it does."""
        from kdissect.diagnostic import Diagnostic

        notes = self.source.diagnostics()
        packets = self.dissector.counters.packets
        if self.interrupted:
            notes.append(
                Diagnostic(
                    "run.interrupted",
                    f"interrupted ({self.stopper.stopping}) after packet {packets}: the output is partial",
                    "warning",
                )
            )
        elif self.stopped_by == "count":
            notes.append(
                Diagnostic("run.count", f"stopped after {self.shown} exchanges (--count), at packet {packets}", "note"),
            )
        return notes

    def cut(self) -> None:
        """Write -w's capture: the chosen exchanges' packets, read again from the capture (rewrite/cut.py)."""
        if self.selection is None or self.common.write is None:
            return
        from kdissect.capture.destination import DestinationError
        from kdissect.rewrite.cut import CutError, cut_into

        with open_source(self.common.captures) as source:
            try:
                cut_into(self.common.write, source, self.selection, self.options.limits, self.options.tls_keylog)
            except (DestinationError, CutError) as exc:
                raise OutputError(str(exc)) from None

    def finish(self) -> None:
        """Write -w's capture, then raise the run's exit status when it is not 0: interrupted, or the capture lost bytes."""
        self.cut()
        if self.interrupted:
            unwritten = f", and {self.common.write} was not written" if self.common.write is not None and self.selection is None else ""
            raise ExitStatus(
                self.stopper.exit_code, f"interrupted after packet {self.dissector.counters.packets}: the output is partial{unwritten}"
            )
        for d in self.source.diagnostics():
            if d.lost:
                self.damage[d.code] += 1
        if self.keeper is not None and self.stopped_by is None:
            from kdissect.commands.value_sources import met_registry

            registry = met_registry(self.common.values, self.options.side_streams)
            self.keeper.save(self.dissector.counters.packets, self.damage, registry)
        damaged(self.damage)

    @contextmanager
    def _progress(self) -> Iterator[Callable[[], None]]:
        """A progress bar while reading: on the output's own console when the output is the terminal (rich prints
        the rows above it and redraws it below), else on standard error when that is a terminal; cleared at the end."""
        console = self._progress_console()
        if console is None:
            yield lambda: None
            return
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        done, total = self.source.progress()
        columns = (BarColumn(), DownloadColumn(), TimeRemainingColumn()) if total else (DownloadColumn(), TimeElapsedColumn())
        with Progress(TextColumn("[bold]reading"), *columns, console=console, transient=True) as progress:
            task = progress.add_task("read", total=total or None, completed=done)
            yield lambda: progress.update(task, completed=self.source.progress()[0])

    def _progress_console(self) -> Any:
        if self.common.quiet:
            return None
        if self.common.output is None and sys.stdout.isatty():
            return self.output.console if self.output is not None else None  # what is drawn on the terminal shares it
        if sys.stderr.isatty():
            from rich.console import Console

            return Console(stderr=True)
        return None


def damaged(damage: Counter[str] | dict[str, int]) -> None:
    """The exit status 1 of a capture that lost bytes, with what it lost (diagnostics of severity error, by code)."""
    if damage:
        found = ", ".join(code + (f" ×{n}" if n > 1 else "") for code, n in Counter(damage).most_common())
        raise ExitStatus(1, f"warning: the capture is damaged ({found}): what was lost is missing from the output")
