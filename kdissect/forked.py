"""What a worker process forked by `read --jobs` or `tables --jobs` does first, so that the first process alone
decides when work ends."""

from __future__ import annotations

import os
import signal

_PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when the thread that forked it ends (Linux only)."""


def become_worker(first: int) -> None:
    """Ctrl-C reaches the whole process group: the first process (pid `first`) decides, and ends the workers with
    SIGTERM. If it dies without a word (SIGKILL, the OOM killer), the kernel sends the SIGTERM: a worker that writes
    its share of the tables only at the end would otherwise read on alone to the end of its share. The signal comes
    when the thread that forked ends: both fork from the command's main thread, which lasts as long as the process."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    import ctypes

    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the worker notices when its pipe breaks
    if os.getppid() != first:  # the first process ended before the request was made
        os._exit(1)
