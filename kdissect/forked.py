"""Worker processes forked by `read --jobs` and `tables --jobs`: each with a pipe to the first process, which
alone decides when work ends, and ends them."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable

_PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when the thread that forked it ends (Linux only)."""


def fork_worker(others: Iterable[int], pipe_bytes: int = 0) -> tuple[int, int]:
    """Fork a worker with a pipe to this process: (0, the pipe's write end) in the worker, its signals set
    (`become_worker`) and the read ends of the `others` closed; (its pid, the read end) here. `pipe_bytes`: the
    pipe's size, where the system lets it be set (0: its default)."""
    sys.stdout.flush()  # a worker inherits what the buffers hold, and could write it again
    sys.stderr.flush()
    read, write = os.pipe()
    if pipe_bytes:
        try:
            import fcntl

            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, pipe_bytes)
        except (ImportError, AttributeError, OSError):
            pass  # a smaller pipe only lets the worker run less far ahead
    first = os.getpid()
    pid = os.fork()
    if pid == 0:
        become_worker(first)
        os.close(read)
        for other in others:
            os.close(other)
        return 0, write
    os.close(write)
    return pid, read


def end_workers(children: Iterable[tuple[int, int]]) -> None:
    """End forked workers, given as (pid, read end of its pipe): their pipes closed, SIGTERM, each reaped."""
    children = list(children)
    for pid, read in children:
        os.close(read)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for pid, _ in children:
        os.waitpid(pid, 0)


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
