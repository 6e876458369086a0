"""The run's deadline: one end time per run (a problem file of `verify`, `audit` or
`certify`, a certificate of `check-cert`, a task of `batch`), which every LP, exact pivot
loop and search inside the run respects (issue 25, "Every run bounded").

`within(seconds)` sets the deadline for the block (a context variable, as the progress
listener of verifiers/progress.py: it belongs to the run, not to the mathematics, so it
reaches the solvers without being threaded through every function); `current()` is the
one in force. The solving context (verifiers/solving.py) gives each LP at most the time
left (`Deadline.remaining`), and the exact loops call `check()` once per step: past the
end it raises `TimedOut`, a `BaseException` like KeyboardInterrupt, so that no
`except Exception` on the way turns it into a result. A run that times out has verdict
`error`, reason `timeout` (exit status 3), never a verdict from half a computation.

No imports beyond the standard library: every layer may use it (the base of
docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

from dpverify.records import record

__all__ = ["Deadline", "TimedOut", "check", "current", "within"]


class TimedOut(BaseException):  # noqa: N818  (a signal, like KeyboardInterrupt)
    """The run's time limit passed."""


@record
class Deadline:
    """A monotonic end time (`end`, `time.monotonic()` seconds; None: no limit) and the
    limit it came from (`seconds`, for messages)."""

    end: float | None = None
    seconds: float | None = None

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        """The deadline `seconds` from now (None or 0: none)."""
        if not seconds:
            return cls()
        return cls(time.monotonic() + seconds, seconds)

    def remaining(self) -> float | None:
        """Seconds left (at least 0.0), or None without a limit."""
        if self.end is None:
            return None
        return max(0.0, self.end - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end

    def check(self) -> None:
        """Raise TimedOut when the deadline has passed."""
        if self.expired:
            raise TimedOut

    def earlier(self, other: Deadline) -> Deadline:
        """The deadline that ends first (a nested limit cannot extend an outer one)."""
        if other.end is None:
            return self
        if self.end is None or other.end < self.end:
            return other
        return self


NO_DEADLINE = Deadline()
_CURRENT: contextvars.ContextVar[Deadline] = contextvars.ContextVar(
    "dpverify_deadline", default=NO_DEADLINE)


def current() -> Deadline:
    """The deadline of the run in progress (no limit outside one)."""
    return _CURRENT.get()


def check() -> None:
    """Raise TimedOut when the run's deadline has passed: what every exact loop calls once
    per step (a pivot, an iteration, a restart)."""
    _CURRENT.get().check()


@contextlib.contextmanager
def within(seconds: float | None) -> Iterator[Deadline]:
    """The block as a run with a time limit of `seconds` (None or 0: none, unless an
    enclosing run has one: the earlier end wins). Yields the deadline in force."""
    deadline = _CURRENT.get().earlier(Deadline.after(seconds))
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)
