"""Stages of a long computation, for a progress display: which problem, which agent and
accuracy, which method is running now.

The verifiers call `stage(...)` as they start each agent and accuracy (and each route they
try); nothing happens unless a caller is listening (`listening(on_stage)`, which
`dpverify.api`'s `verify_paths`, `audit_paths` and `certify_paths` wrap around a run when
given `on_stage`). The listener is a context variable, so it reaches the verifiers
without passing through `VerifyOptions` (whose fields are the store's key) and is never
seen by a batch worker, which runs in its own process. No printing here: the console
draws what it hears (console/progress.py), on a terminal only.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

from dpverify.records import record

__all__ = ["Stage", "listening", "stage"]


@record
class Stage:
    """What is being computed: the problem's name, the agent (`observer`, `party:2`,
    `consumer`; "" for the whole problem), the accuracy (`worst`, `average`; "" when it
    does not apply) and the method (a `defaults.Method` value, `certificate`, ...)."""

    problem: str
    agent: str = ""
    accuracy: str = ""
    method: str = ""

    def describe(self) -> str:
        """`observer worst, method proof` (the parts that are set)."""
        who = " ".join(x for x in (self.agent, self.accuracy) if x)
        return ", ".join(x for x in (who, f"method {self.method}" if self.method else "") if x)


_LISTENER: contextvars.ContextVar[Callable[[Stage], None] | None] = contextvars.ContextVar(
    "dpverify_stage_listener", default=None)


def stage(problem: str, agent: str = "", accuracy: str = "", method: str = "") -> None:
    """Tell the listener (if any) that this stage starts."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(Stage(problem, str(agent), str(accuracy), str(method)))


@contextlib.contextmanager
def listening(on_stage: Callable[[Stage], None] | None) -> Iterator[None]:
    """Send every `stage(...)` inside the block to `on_stage` (None: to nobody)."""
    token = _LISTENER.set(on_stage)
    try:
        yield
    finally:
        _LISTENER.reset(token)
