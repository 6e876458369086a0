"""A time limit on one run in this process (a problem of `verify --timeout`, `audit`,
`certify`, a certificate of `check-cert`, the API's `timeout`), as a batch worker has
one: when it passes, the problem's verdict is `error` with reason `timeout` (exit status
3), never a verdict from half a computation.

Two mechanisms, one limit. The run's deadline (dpverify/clock.py) is what the solvers
and exact loops respect: each LP gets at most the time left, each pivot and iteration
checks it. Behind it, a real-time interval timer (SIGALRM) whose handler raises
`TimedOut` between bytecodes catches any Python loop that does not check; a single long
call into C (one HiGHS solve) ends first, and the deadline bounds those. Where no timer
can be set (not the main thread, or a platform without SIGALRM) the deadline alone holds:
`deadline` yields whether the timer is set.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from dpverify.clock import TimedOut, within

__all__ = ["TimedOut", "deadline", "timeout_reason"]


def timeout_reason(seconds: float | None) -> str:
    """The reason of a problem that ran out of time, naming the limit and the option that
    raises it (in `verify`, a batch worker and its runner alike); bare `timeout` without
    a limit in seconds."""
    return f"timeout: no verdict within {seconds:g} s (--timeout)" if seconds else "timeout"


def _can_time() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _raise(signum: int, frame: object) -> None:
    raise TimedOut


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[bool]:
    """The block as one run of at most `seconds` (None or 0: no limit): its deadline set
    for the solvers (clock.within), and TimedOut raised inside the block after `seconds`.
    Yields whether the timer is set. Nesting is not supported for the timer (the inner
    one wins); the deadline keeps the earlier end."""
    with within(seconds):
        if not seconds or not _can_time():
            yield False
            return
        previous = signal.signal(signal.SIGALRM, _raise)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield True
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
