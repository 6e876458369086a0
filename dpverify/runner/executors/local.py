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
import re
import signal
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from dpverify.errors import InputError
from dpverify.runner.executors.spawn import context as spawn_context
from dpverify.runner.store import CRASHED, FAILED, TIMEOUT
from dpverify.runner.worker import (
    WORKER_ENV,
    Outcome,
    Task,
    _init_worker,
    error_result,
    one_line_reason,
    outcome_from,
    run_task,
)
from dpverify.verifiers.options import VerifyOptions

__all__ = ["Executor", "LocalPool", "Outcome", "Task", "check_scheduler", "describe_exit",
           "error_result", "make_executor", "one_line_reason", "run_task", "usable_cpus"]

POLL_SECONDS = 0.25  # how often the loop wakes to check deadlines when nothing finishes
STARTUP_GRACE = 60.0  # allowance for a task whose start was never reported (worker start-up)
RECHECK_SECONDS = 1.0  # how often tasks waiting for another run are looked at again


class Gate(Protocol):
    """Whether a task may start here (the runner's claims in the results store)."""

    def admit(self, task: Task) -> Outcome | bool:
        """True: start it (it is claimed now); False: another run is computing it, ask
        again later; an Outcome (`cached`): another run has computed it."""

    def recheck(self, tasks: Sequence[Task]) -> list[Outcome | bool]:
        """For tasks that waited: an Outcome when their result is stored, True when they
        are free to be admitted again, False while another run still holds them."""

    def tick(self) -> None:
        """Called on every turn of the loop (the claims' heartbeat)."""


class _Open:
    """The gate of a run without a store: every task starts at once."""

    def admit(self, task: Task) -> Outcome | bool:
        return True

    def recheck(self, tasks: Sequence[Task]) -> list[Outcome | bool]:
        return [True] * len(tasks)

    def tick(self) -> None:
        pass


# -- the shared loop ----------------------------------------------------------------------
@dataclass
class _Flight:
    task: Task
    submitted: float
    solo: bool = False
    started: float | None = None
    handle: Any = None  # executor-specific (a Dask future)

    def deadline(self, timeout: float) -> float:
        if self.started is not None:
            return self.started + timeout
        return self.submitted + timeout + STARTUP_GRACE


@dataclass
class _State:
    pending: deque[Task]
    suspects: deque[Task] = field(default_factory=deque)
    flights: dict[cf.Future, _Flight] = field(default_factory=dict)
    waiting: list[Task] = field(default_factory=list)  # computed by another run
    rechecked: float = 0.0


class Executor(ABC):
    """Runs tasks in workers; `run` yields an Outcome per task as each finishes."""

    name = "executor"
    workers = 1

    @property
    def capacity(self) -> int:
        """How many tasks to keep in flight."""
        return self.workers

    # Executor-specific hooks.
    @abstractmethod
    def _submit(self, task: Task) -> tuple[cf.Future, Any]:
        """Start a task; its future and a handle for `_kill`."""

    def _poll_starts(self, flights: dict[cf.Future, _Flight]) -> None:  # noqa: B027
        """Record when tasks really started (if the executor can tell; a no-op here)."""

    @abstractmethod
    def _kill(self, late: list[_Flight], flights: dict[cf.Future, _Flight]) -> list[_Flight]:
        """Stop the workers running `late`; return the other flights that were lost with
        them (to be resubmitted, not charged)."""

    def _broken(self, exc: BaseException) -> bool:
        """Whether `exc` means the whole pool broke under a task (see the module docstring)."""
        return False

    def _reset_after_break(self) -> str:
        """Discard a broken pool; a description of how its workers died."""
        return ""

    def _abort(self) -> None:  # noqa: B027 (optional hook: a no-op by default)
        """Stop everything in flight at once (Ctrl-C, or the caller stopped listening)."""

    def close(self) -> None:  # noqa: B027 (optional hook: a no-op by default)
        """Release the workers."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, tasks: Iterable[Task], timeout: float | None, gate: Gate | None = None
            ) -> Generator[Outcome, None, None]:
        gate = gate or _Open()
        state = _State(pending=deque(tasks))
        finished = False
        try:
            while state.pending or state.suspects or state.flights or state.waiting:
                gate.tick()
                yield from self._recheck(state, gate)
                yield from self._fill(state, gate)
                wait = POLL_SECONDS
                if timeout is not None and state.flights:
                    now = time.time()
                    first = min(f.deadline(timeout) for f in state.flights.values())
                    wait = max(0.01, min(wait, first - now))
                if not state.flights:  # only tasks another run computes: cf.wait would not wait
                    time.sleep(wait)
                done, _ = cf.wait(list(state.flights), timeout=wait,
                                  return_when=cf.FIRST_COMPLETED)
                self._poll_starts(state.flights)
                broken: list[_Flight] = []
                for fut in done:
                    flight = state.flights.pop(fut)
                    exc = fut.exception()
                    if exc is None:
                        yield outcome_from(flight.task, fut.result())
                    elif self._broken(exc):
                        broken.append(flight)
                    else:  # an infrastructure failure (Dask's KilledWorker, a lost connection)
                        yield self._failed(flight, exc)
                if broken:
                    yield from self._after_break(state, broken)
                if timeout is not None:
                    yield from self._check_deadlines(state, timeout)
            finished = True
        finally:
            if not finished:
                self._abort()

    def _fill(self, state: _State, gate: Gate) -> Iterator[Outcome]:
        if state.suspects:
            # Suspects of a crash run alone, so a crash can be attributed.
            if not state.flights:
                self._launch(state, state.suspects.popleft(), solo=True)
            return
        while state.pending and len(state.flights) < self.capacity:
            task = state.pending.popleft()
            admitted = gate.admit(task)
            if admitted is True:
                self._launch(state, task)
            elif admitted is False:
                state.waiting.append(task)
            else:
                yield admitted

    def _recheck(self, state: _State, gate: Gate) -> Iterator[Outcome]:
        """Tasks another run was computing: their stored results, or back in the queue
        when that run let them go (or died)."""
        now = time.monotonic()
        if not state.waiting or now - state.rechecked < RECHECK_SECONDS:
            return
        state.rechecked = now
        still: list[Task] = []
        for task, answer in zip(state.waiting, gate.recheck(state.waiting), strict=True):
            if answer is True:
                state.pending.append(task)
            elif answer is False:
                still.append(task)
            else:
                yield answer
        state.waiting = still

    def _launch(self, state: _State, task: Task, solo: bool = False) -> None:
        fut, handle = self._submit(task)
        state.flights[fut] = _Flight(task, time.time(), solo=solo, handle=handle)

    def _after_break(self, state: _State, broken: list[_Flight]) -> Iterator[Outcome]:
        # The pool is gone: whatever else is in flight finishes (it may just have) or fails.
        done, not_done = cf.wait(list(state.flights), timeout=10)
        for fut in done:
            flight = state.flights.pop(fut)
            if fut.exception() is None:
                yield outcome_from(flight.task, fut.result())
            else:
                broken.append(flight)
        for fut in not_done:
            broken.append(state.flights.pop(fut))
        how = self._reset_after_break()
        if len(broken) == 1:  # alone in the pool when it broke (or run alone): at fault
            flight = broken[0]
            yield Outcome(flight.task.id, CRASHED,
                          error_result(flight.task.source, f"worker died{how}"),
                          seconds=time.time() - (flight.started or flight.submitted))
            return
        state.suspects.extend(f.task for f in broken)

    def _check_deadlines(self, state: _State, timeout: float) -> Iterator[Outcome]:
        now = time.time()
        late = [f for f in state.flights.values() if f.deadline(timeout) <= now]
        if not late:
            return
        for flight in late:
            yield Outcome(flight.task.id, TIMEOUT, error_result(flight.task.source, "timeout"),
                          seconds=now - (flight.started or flight.submitted))
        lost = self._kill(late, state.flights)
        late_ids = {id(f) for f in late}
        for fut in [f for f, fl in state.flights.items() if id(fl) in late_ids]:
            del state.flights[fut]
        lost_ids = {id(f) for f in lost}
        for fut in [f for f, fl in state.flights.items() if id(fl) in lost_ids]:
            flight = state.flights.pop(fut)
            (state.suspects if flight.solo else state.pending).appendleft(flight.task)

    @staticmethod
    def _failed(flight: _Flight, exc: BaseException) -> Outcome:
        name = type(exc).__name__
        if name == "KilledWorker":  # Dask retried it on other workers and they died too
            status, reason = CRASHED, "worker died (Dask: the task kept killing its workers)"
        else:
            text = str(exc).splitlines()[0] if str(exc) else ""
            status, reason = FAILED, f"{name}: {text}" if text else name
        return Outcome(flight.task.id, status, error_result(flight.task.source, reason),
                       seconds=time.time() - (flight.started or flight.submitted))


def usable_cpus() -> int:
    """The CPUs this process may run on (the default number of workers)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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
                                                initializer=_init_worker,
                                                initargs=(self._queue,))
        return self._pool

    def _submit(self, task: Task) -> tuple[cf.Future, Any]:
        # One HiGHS thread per worker (fixed at a process's first HiGHS run).
        task = Task(task.id, task.source, task.text, _one_thread(task.options))
        try:
            fut = self._ensure_pool().submit(self._target, task)
            self._started.update({p.pid: p for p in self._processes()})  # spawned on submit
            return fut, None
        except BrokenProcessPool as exc:  # a worker died since the last look: a break
            broken: cf.Future = cf.Future()
            broken.set_exception(exc)
            return broken, None

    def _poll_starts(self, flights: dict[cf.Future, _Flight]) -> None:
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

    def _kill(self, late: list[_Flight], flights: dict[cf.Future, _Flight]) -> list[_Flight]:
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
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}


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


def _one_thread(options: VerifyOptions) -> VerifyOptions:
    from dataclasses import replace

    return options if options.threads == 1 else replace(options, threads=1)


# -- choosing an executor --------------------------------------------------------------------
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])"
_ADDRESS = re.compile(rf"(?:(?:tcp|tls|ws|wss)://)?(?P<host>{_HOST}):(?P<port>[0-9]{{1,5}})")


def check_scheduler(address: str) -> str:
    """`address` if it has the form of a Dask scheduler address: `local`, or
    `tcp://HOST:PORT` (also tls, ws, wss) or `HOST:PORT`; else InputError (exit 2), before
    anything tries to connect."""
    match = _ADDRESS.fullmatch(address)
    if address == "local" or (match and 1 <= int(match["port"]) <= 65535):
        return address
    raise InputError(f"--scheduler {address!r}: not a scheduler address; write `local` (a "
                     "LocalCluster), `tcp://HOST:PORT` or `HOST:PORT` (port 1-65535)")


def make_executor(jobs: int | None = None, scheduler: str | None = None) -> Executor:
    """A LocalPool of `jobs` workers, or a DaskExecutor when a scheduler is named."""
    if scheduler:
        from dpverify.runner.executors.dask import DaskExecutor

        return DaskExecutor(check_scheduler(scheduler), jobs)
    return LocalPool(jobs)
