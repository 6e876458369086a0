"""The batch loop shared by every executor (docs: dpverify/runner/executors/local.py's
module docstring): tasks through a `Gate` (the runner's claims), in flight on workers,
with per-task deadlines, crash attribution and Ctrl-C; one `Outcome` per task as each
finishes. An executor supplies the workers (`_submit`, `_kill`, ...): `LocalPool`
(local.py) or `DaskExecutor` (dask.py).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import re
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Self

from dpverify.errors import InputError
from dpverify.reasons import ReasonCode
from dpverify.runner.deadline import timeout_reason
from dpverify.runner.store import CRASHED, DONE, FAILED, TIMEOUT
from dpverify.runner.worker import Outcome, Task, error_result, outcome_from
from dpverify.verifiers.options import VerifyOptions

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


class Open:
    """The gate of a run without a store: every task starts at once."""

    def admit(self, task: Task) -> Outcome | bool:
        return True

    def recheck(self, tasks: Sequence[Task]) -> list[Outcome | bool]:
        return [True] * len(tasks)

    def tick(self) -> None:
        pass


# -- the shared loop ----------------------------------------------------------------------
@dataclass
class Flight:
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
class State:
    pending: deque[Task]
    suspects: deque[Task] = field(default_factory=deque)
    flights: dict[cf.Future, Flight] = field(default_factory=dict)
    waiting: list[Task] = field(default_factory=list)  # computed by another run
    rechecked: float = 0.0


def within_limit(outcome: Outcome, timeout: float | None) -> Outcome:
    """A result computed in more than `timeout` seconds (the worker's own clock) is a
    timeout, even when it arrived before the runner's next look at the deadlines: the
    limit means the same thing whatever the polling and however fast the pool starts."""
    if timeout is None or outcome.status != DONE or outcome.seconds <= timeout:
        return outcome
    problem = outcome.result.get("problem")
    return replace(outcome, status=TIMEOUT, result=error_result(
        str(outcome.result.get("source", "")), timeout_reason(timeout),
        code=ReasonCode.TIMEOUT,
        problem=str(problem) if problem else None), values=(), expect=())


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

    def _poll_starts(self, flights: dict[cf.Future, Flight]) -> None:  # noqa: B027
        """Record when tasks really started (if the executor can tell; a no-op here)."""

    @abstractmethod
    def _kill(self, late: list[Flight], flights: dict[cf.Future, Flight]) -> list[Flight]:
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
        gate = gate or Open()
        state = State(pending=deque(tasks))
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
                broken: list[Flight] = []
                for fut in done:
                    flight = state.flights.pop(fut)
                    exc = fut.exception()
                    if exc is None:
                        yield within_limit(outcome_from(flight.task, fut.result()), timeout)
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

    def _fill(self, state: State, gate: Gate) -> Iterator[Outcome]:
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

    def _recheck(self, state: State, gate: Gate) -> Iterator[Outcome]:
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

    def _launch(self, state: State, task: Task, solo: bool = False) -> None:
        fut, handle = self._submit(task)
        state.flights[fut] = Flight(task, time.time(), solo=solo, handle=handle)

    def _after_break(self, state: State, broken: list[Flight]) -> Iterator[Outcome]:
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
                          error_result(flight.task.source, f"worker died{how}",
                                       code=ReasonCode.WORKER_FAILED),
                          seconds=time.time() - (flight.started or flight.submitted))
            return
        state.suspects.extend(f.task for f in broken)

    def _check_deadlines(self, state: State, timeout: float) -> Iterator[Outcome]:
        now = time.time()
        late = [f for f in state.flights.values() if f.deadline(timeout) <= now]
        if not late:
            return
        for flight in late:
            yield Outcome(flight.task.id, TIMEOUT, error_result(
                flight.task.source, timeout_reason(timeout), code=ReasonCode.TIMEOUT),
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
    def _failed(flight: Flight, exc: BaseException) -> Outcome:
        name = type(exc).__name__
        if name == "KilledWorker":  # Dask retried it on other workers and they died too
            status, reason = CRASHED, "worker died (Dask: the task kept killing its workers)"
        else:
            text = str(exc).splitlines()[0] if str(exc) else ""
            status, reason = FAILED, f"{name}: {text}" if text else name
        return Outcome(flight.task.id, status, error_result(flight.task.source, reason,
                                                     code=ReasonCode.WORKER_FAILED),
                       seconds=time.time() - (flight.started or flight.submitted))


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def idle_cpus() -> float:
    """The usable CPUs less the machine's load (the 1-minute load average: the processes
    running or waiting to run), at most usable_cpus()."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this system: all idle
        load = 0.0
    return min(float(usable_cpus()), usable_cpus() - load)


def default_workers(tasks: int) -> int:
    """The workers of a local pool when --jobs is not given: one per idle CPU (rounded),
    at most one per task, at least one. A worker helps only with a core of its own: each
    starts a Python process and imports the verifiers (0.3 s of CPU), and on the 2-core
    machine with the other core busy, `batch --jobs 2` over 40 small problems took 1.3x
    as long as `--jobs 1` (docs/benchmarks.md, bench_batch.py); with both cores idle
    it was 1.7-1.9x faster."""
    return max(1, min(usable_cpus(), tasks, int(idle_cpus() + 0.5)))




def one_thread(options: VerifyOptions) -> VerifyOptions:
    """The options of a task on a worker: one HiGHS thread (each worker is one CPU)."""
    return options if options.threads == 1 else replace(options, threads=1)


# -- scheduler addresses -------------------------------------------------------------------
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
