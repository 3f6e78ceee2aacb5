"""Ctrl-C and SIGTERM as a request to stop, for the commands that end with what they have so far."""

from __future__ import annotations

import os
import signal
from typing import Any


class Stopper:
    """Turns SIGINT and SIGTERM into a request to stop (`stopping` names the signal), seen at once by a loop
    that polls `fileno()` and at its next turn by one that looks at `stopping`.

    A second SIGINT while stopping raises KeyboardInterrupt, so a stuck run can always be left."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.stopping: str | None = None
        self._reader = self._writer = -1
        """The wake-up pipe, open from `install` to `restore` (a pipe: the socket module costs start-up time)."""
        self._saved: dict[int, Any] = {}
        self._saved_fd: int | None = None

    @property
    def exit_code(self) -> int:
        """The shell's status for a run ended by the signal: 128 + its number (130 for Ctrl-C)."""
        return 128 + signal.Signals[self.stopping or "SIGINT"].value

    def fileno(self) -> int:
        return self._reader

    def install(self) -> None:
        self._reader, self._writer = os.pipe()
        os.set_blocking(self._reader, False)
        os.set_blocking(self._writer, False)
        try:
            self._saved_fd = signal.set_wakeup_fd(self._writer, warn_on_full_buffer=False)
            for signum in self.SIGNALS:
                self._saved[signum] = signal.signal(signum, self._handle)
        except ValueError:  # not the main thread: signals stay as they were
            self._saved_fd = None

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.stopping is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.stopping = signal.Signals(signum).name

    def drain(self) -> None:
        try:
            while os.read(self._reader, 64):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def restore(self) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        self._saved.clear()
        if self._saved_fd is not None:
            signal.set_wakeup_fd(self._saved_fd)
            self._saved_fd = None
        if self._reader >= 0:
            os.close(self._reader)
            os.close(self._writer)
            self._reader = self._writer = -1
