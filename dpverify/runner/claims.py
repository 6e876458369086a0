"""A batch's claims in its results store: the `Gate` through which the executor loop starts
tasks, so that two runs on one store compute each problem once (store.py, "Claims").

A task is claimed when it is about to start, not up front, so two runs started together
share the work; a task another run holds waits, and is taken from the store once that run
has stored it (or claimed here once that run lets it go or dies). The owner's heartbeat is
refreshed on the loop's turns; every claim of the run is dropped when it ends, however it
ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence

from dpverify.errors import InputError
from dpverify.runner.store import CLAIM_STALE, ClaimAction, ClaimResult, Store, new_owner
from dpverify.runner.worker import Outcome, Task

HEARTBEAT_SECONDS = CLAIM_STALE / 12  # how often a run says it is alive (every 5 s)


class StoreGate:
    """Claims in `store` for the tasks of one run: `keys[task.id]` is the task's content
    hash; `okey` and `build` complete the store's key. `since` is when the run started
    (Store.now): rows stored since then by another run are taken as they are, even with
    `force`. `on_wait(owner)` is told, once per other run, that we wait for it."""

    def __init__(self, store: Store, keys: dict[int, str], okey: str, build: str, *,
                 since: str, force: bool,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.store, self.keys, self.okey, self.build = store, keys, okey, build
        self.since, self.force, self.on_wait = since, force, on_wait
        self.owner = new_owner()
        self.waited_for: set[str] = set()
        self._beat = time.monotonic()

    def key(self, task_id: int) -> tuple[str, str, str]:
        return (self.keys[task_id], self.okey, self.build)

    def admit(self, task: Task) -> Outcome | bool:
        return self._answer(task, self.store.claim(self.key(task.id), self.owner,
                                                   since=self.since, force=self.force))

    def recheck(self, tasks: Sequence[Task]) -> list[Outcome | bool]:
        looked = self.store.look([self.key(t.id) for t in tasks], self.owner,
                                 since=self.since, force=self.force)
        return [self._answer(t, r) for t, r in zip(tasks, looked, strict=True)]

    def _answer(self, task: Task, result: ClaimResult) -> Outcome | bool:
        if result.action is ClaimAction.RUN:
            return True
        if result.action is ClaimAction.WAIT:
            if result.owner not in self.waited_for:
                self.waited_for.add(result.owner)
                if self.on_wait is not None:
                    self.on_wait(result.owner)
            return False
        row = result.row
        assert row is not None  # REUSE always carries its row
        return Outcome(task.id, row.status, row.result, row.values, row.expect, row.seconds,
                       row.worker, build=row.version, cached=True)

    def tick(self) -> None:
        now = time.monotonic()
        if now - self._beat >= HEARTBEAT_SECONDS:
            self._beat = now
            with contextlib.suppress(InputError):  # a busy store: the next beat retries
                self.store.heartbeat(self.owner)

    def release(self, task_id: int) -> None:
        self.store.release(self.owner, self.key(task_id))

    def close(self) -> None:
        """Drop every claim of this run (it has stored all it will store)."""
        with contextlib.suppress(InputError):  # they expire anyway (CLAIM_STALE)
            self.store.release(self.owner)
