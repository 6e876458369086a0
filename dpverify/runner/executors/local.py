"""Executors: run problems in worker processes, with per-problem timeouts and crash recovery.

One interface, two implementations:

* `LocalPool`: a `concurrent.futures.ProcessPoolExecutor` with the `spawn` start method
  (design.md: a HiGHS run in a forked child has been seen to return 0.0 with no error)
  and one HiGHS thread per worker.
* `DaskExecutor`: the same work on a Dask cluster (`distributed.Client(ADDRESS)`, or a
  `LocalCluster` for `local`). Dask is an optional extra, imported only here and lazily.

Both drive `concurrent.futures` futures through one loop (`Executor.run`), which yields an
`Outcome` per task as it finishes. The loop owns the limits:

* **Timeout.** A task running longer than the timeout gets status `timeout` (verdict
  `error`, reason `timeout`) and its worker is replaced. A process pool cannot kill one
  worker without breaking itself, so `LocalPool` kills all its workers, starts a new pool
  and resubmits the other tasks that were in flight (they were not at fault and are not
  charged). Dask restarts the one worker through its nanny.
* **A dead worker** (out of memory, a crash) breaks a process pool, and every task in
  flight fails with `BrokenProcessPool`; which one was at fault is unknown. Each becomes a
  *suspect* and is run again alone: a suspect that kills its worker alone is at fault
  (status `crashed`); the others finish normally. (A task that was alone in flight when
  the pool broke is at fault at once.) Dask retries a task on another worker itself and
  reports `KilledWorker` when it keeps killing them.
* **Ctrl-C / the caller stops listening**: every worker is killed at once. Workers also
  exit by themselves when the parent dies, even by SIGKILL.
* **Another run on the same store** (a `Gate`, the runner's claims): a task is started
  only once the gate admits it; a task that another run is computing waits, and its
  result, once that run stores it, is yielded as a `cached` outcome.
* **The user's script**: spawned workers do not re-run the `__main__` module (spawn.py):
  a worker needs dpverify's modules only, so `dpverify.batch()` works at the top level of
  a script without an `if __name__ == "__main__":` guard, and from standard input.

A worker runs `dpverify.runner.worker.run_task`; the Dask executor is in
`dpverify.runner.executors.dask`.
"""


from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import queue
import signal
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from typing import Any

from dpverify.runner.executors.base import (
    Executor,
    Flight,
    Gate,
    check_scheduler,
    one_thread,
    usable_cpus,
)
from dpverify.runner.executors.spawn import context as spawn_context
from dpverify.runner.worker import (
    WORKER_ENV,
    Outcome,
    Task,
    error_result,
    init_worker,
    one_line_reason,
    run_task,
)

__all__ = ["Executor", "Gate", "LocalPool", "Outcome", "Task", "check_scheduler",
           "describe_exit", "error_result", "make_executor", "one_line_reason", "run_task",
           "usable_cpus"]


def describe_exit(code: int | None) -> str:
    if code is None:
        return "unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exit status {code}"


# -- the local process pool ---------------------------------------------------------------
class LocalPool(Executor):
    """A spawn ProcessPoolExecutor with `workers` processes (one HiGHS thread each)."""

    name = "local"

    def __init__(self, workers: int | None = None, *, target: Any = None) -> None:
        self.workers = max(1, workers or usable_cpus())
        self._target = target or run_task  # what a worker runs for a task (a module function)
        self._ctx = spawn_context()  # spawn, without re-running the user's __main__
        self._pool: cf.ProcessPoolExecutor | None = None
        self._queue: Any = None
        self._saved_env: dict[str, str | None] = {}
        # Every worker process this pool started, kept here: a broken pool forgets its
        # processes, and a dead worker's exit code is what names its cause (SIGKILL...).
        self._started: dict[int, Any] = {}

    @property
    def capacity(self) -> int:
        # One queued task beyond the workers keeps them busy while the parent stores results.
        return self.workers + 1

    def _ensure_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            # Spawned workers inherit the environment at spawn time: one BLAS/OpenMP thread.
            for key, value in WORKER_ENV.items():
                if key not in self._saved_env:
                    self._saved_env[key] = os.environ.get(key)
                os.environ[key] = value
            self._queue = self._ctx.Queue()
            self._pool = cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx,
                                                initializer=init_worker,
                                                initargs=(self._queue,))
            stop_tracker_at_exit()
        return self._pool

    def _submit(self, task: Task) -> tuple[cf.Future, Any]:
        # One HiGHS thread per worker (fixed at a process's first HiGHS run).
        task = replace(task, options=one_thread(task.options))
        try:
            fut = self._ensure_pool().submit(self._target, task)
            self._started.update({p.pid: p for p in self._processes()})  # spawned on submit
            return fut, None
        except BrokenProcessPool as exc:  # a worker died since the last look: a break
            broken: cf.Future = cf.Future()
            broken.set_exception(exc)
            return broken, None

    def _poll_starts(self, flights: dict[cf.Future, Flight]) -> None:
        if self._queue is None:
            return
        by_id = {f.task.id: f for f in flights.values()}
        while True:
            try:
                task_id, _pid, started = self._queue.get_nowait()
            except (queue.Empty, OSError, ValueError, EOFError):
                return
            flight = by_id.get(task_id)
            if flight is not None and flight.started is None:
                flight.started = started

    def _broken(self, exc: BaseException) -> bool:
        return isinstance(exc, BrokenProcessPool)

    def _processes(self) -> list[Any]:
        # CPython keeps the worker processes in `_processes`; there is no public way to kill
        # them before Python 3.14's kill_workers().
        if self._pool is None:
            return []
        return list((getattr(self._pool, "_processes", None) or {}).values())

    def _discard_pool(self) -> list[int | None]:
        """Kill every worker and drop the pool; their exit codes."""
        pool, procs = self._pool, self._processes()
        self._pool = None
        self._started = {}
        if pool is None:
            return []
        for p in procs:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                p.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        codes = []
        for p in procs:
            with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
                p.join(timeout=5)
            codes.append(getattr(p, "exitcode", None))
        if self._queue is not None:
            with contextlib.suppress(OSError, ValueError):
                self._queue.close()
                self._queue.cancel_join_thread()
            self._queue = None
        return codes

    def _reset_after_break(self) -> str:
        procs = list(self._started.values())
        self._started = {}
        # the dead worker has exited already; the pool terminates the rest
        deadline = time.monotonic() + 5.0
        early = [_exit_code(p, deadline) for p in procs]
        self._discard_pool()
        # SIGTERM is how the pool stops the survivors; any other code is the dead worker's.
        causes = [c for c in early if c not in (None, 0, -signal.SIGTERM)]
        return f": {describe_exit(causes[0])}" if causes else ""

    def _kill(self, late: list[Flight], flights: dict[cf.Future, Flight]) -> list[Flight]:
        self._discard_pool()
        late_ids = {id(f) for f in late}
        return [f for f in flights.values() if id(f) not in late_ids]

    def _abort(self) -> None:
        self._discard_pool()

    def close(self) -> None:
        """Stop the workers. `run` has collected every result by now, so they are idle:
        killing them is safe, and saves the ~0.2 s a graceful shutdown spends waiting for
        each interpreter to tear numpy and scipy down (a tenth of a small batch)."""
        self._discard_pool()
        self.restore_env()

    def restore_env(self) -> None:
        """Put back the environment variables the pool set for its workers."""
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}


_TRACKER_STOP: list[Any] = []  # the exit hook, registered once per process


def stop_tracker_at_exit() -> None:
    """Stop (and reap) the process `multiprocessing` starts beside a spawn pool to track its
    semaphores, when this process exits: it exits by itself once this process is gone, but
    nobody then waits for it (where no init reaps orphans, in a container, it stays in the
    caller's process group, running or a zombie). The hook is one of multiprocessing's own
    exit finalizers at the lowest priority: it runs after every semaphore's finalizer has
    unregistered it, so the tracker has nothing left to warn about."""
    if _TRACKER_STOP:
        return
    from multiprocessing import util

    _TRACKER_STOP.append(util.Finalize(None, stop_resource_tracker, exitpriority=-100))


def stop_resource_tracker() -> None:
    """Stop the resource tracker of this process and wait for it (stop_tracker_at_exit)."""
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker, "_resource_tracker", None)
    with contextlib.suppress(OSError, AttributeError, ChildProcessError):
        tracker._stop()  # type: ignore[union-attr]  # the stdlib's only way to stop it


def _exit_code(process: Any, deadline: float) -> int | None:
    """A worker process's exit code once it has exited (None if it has not by `deadline`,
    a time.monotonic() value).

    The pool's own thread may be reaping the same process: between its waitpid() and its
    recording the code, `exitcode` reads None (waitpid finds no child), so wait for the
    code to be recorded rather than report the cause of death as unknown."""
    with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    code = getattr(process, "exitcode", None)
    while code is None and time.monotonic() < deadline:
        time.sleep(0.01)
        code = getattr(process, "exitcode", None)
    return code


# -- choosing an executor --------------------------------------------------------------------
def make_executor(jobs: int | None = None, scheduler: str | None = None) -> Executor:
    """A LocalPool of `jobs` workers, or a DaskExecutor when a scheduler is named."""
    if scheduler:
        from dpverify.runner.executors.dask import DaskExecutor

        return DaskExecutor(check_scheduler(scheduler), jobs)
    return LocalPool(jobs)
