"""A time limit on one problem verified in this process (`verify --timeout`, the API's
`timeout`), as a batch worker has one: when it passes, the problem's verdict is `error`
with reason `timeout` (exit status 3), never a verdict from half a computation.

The limit is a real-time interval timer (SIGALRM) whose handler raises `TimedOut`, a
`BaseException` like KeyboardInterrupt, so that no `except Exception` on the way turns
it into a result. Python runs the handler between bytecodes: a single long call into C
(one HiGHS solve) ends first, and HiGHS's own time limits bound those. Where no timer can
be set (not the main thread, or a platform without SIGALRM) the limit is not enforced:
`deadline` then does nothing, and says so through `enforced`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class TimedOut(BaseException):  # noqa: N818  (a signal, like KeyboardInterrupt)
    """The problem's time limit passed."""


def _can_time() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _raise(signum: int, frame: object) -> None:
    raise TimedOut


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[bool]:
    """Raise TimedOut inside the block after `seconds` (None or 0: no limit). Yields
    whether the limit is enforced. Nesting is not supported: the inner limit wins."""
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
