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

A worker runs `run_task` and returns plain data (a dict), never a library object or a
library exception: SpecError and friends take required arguments and do not unpickle.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import socket
import sys
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from dpverify import __version__
from dpverify.errors import InputError
from dpverify.verify.options import VerifyOptions

from .store import CRASHED, DONE, FAILED, INVALID, TIMEOUT

POLL_SECONDS = 0.25  # how often the loop wakes to check deadlines when nothing finishes
STARTUP_GRACE = 60.0  # allowance for a task whose start was never reported (worker start-up)
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass(frozen=True)
class Task:
    """One problem to verify: its text travels with it, so a remote worker needs no shared
    file system and the result is for exactly the bytes that were hashed."""

    id: int
    source: str
    text: str
    options: VerifyOptions


@dataclass(frozen=True)
class Outcome:
    """What became of one task. `result` is spec.md's result object (with `source`)."""

    task_id: int
    status: str  # store.DONE, INVALID, TIMEOUT, CRASHED or FAILED
    result: dict[str, Any]
    values: tuple[tuple[str, str, float | None], ...] = ()
    expect: tuple[tuple[str, str, float, str], ...] = ()
    seconds: float = 0.0
    worker: str = ""

    @property
    def verdict(self) -> str:
        return str(self.result.get("verdict", "error"))

    @property
    def reason(self) -> str:
        return one_line_reason(self.result)


def one_line_reason(result: dict[str, Any]) -> str:
    """A failure's reason in one line: the problem's, else its first non-optimal result's."""
    if result.get("reason"):
        return str(result["reason"]).splitlines()[0]
    for r in result.get("results", ()):
        if r.get("verdict") != "optimal":
            what = f"{r.get('agent')} {r.get('accuracy')}"
            if r.get("reason"):
                return f"{what}: {str(r['reason']).splitlines()[0]}"
            if r.get("gap") is not None:
                return f"{what}: gap {r['gap']:.3g}"
            return f"{what}: {r.get('verdict')}"
    return ""


def error_result(source: str, reason: str, *, problem: str | None = None,
                 invalid: bool = False) -> dict[str, Any]:
    """spec.md's result object for a problem that could not be decided (verdict `error`)."""
    out: dict[str, Any] = {"problem": problem or Path(source).stem, "source": source,
                           "kind": "unknown", "verdict": "error", "reason": reason}
    if invalid:
        out["invalid"] = True
    out["results"] = []
    return out


# -- the worker side ----------------------------------------------------------------------
_start_queue: Any = None


def _init_worker(start_queue: Any) -> None:
    """Process-pool worker set-up: Ctrl-C is the parent's business; stray prints go to
    stderr (never into `--json` output); the verifier is imported once, up front."""
    global _start_queue
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.dup2(2, 1)
    _start_queue = start_queue
    _exit_with_parent()
    warm_up()


def _exit_with_parent() -> None:
    """Exit when the parent dies (even by SIGKILL): an orphaned pool worker would otherwise
    wait forever, since it holds the write end of its own task queue."""
    import threading

    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    ppid = os.getppid()

    def watch() -> None:
        if sentinel is not None:
            multiprocessing.connection.wait([sentinel])
        else:
            while os.getppid() == ppid:
                time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="dpverify-parent-watch", daemon=True).start()


def warm_up() -> str:
    """Import the verifier (so the first task's clock does not include it); the version."""
    import dpverify.verify.multiparty
    import dpverify.verify.run  # noqa: F401

    return __version__


def run_task(task: Task) -> dict[str, Any]:
    """Verify one problem in a worker; plain data back (see the module docstring)."""
    if _start_queue is not None:
        with contextlib.suppress(Exception):  # timing only: a lost message costs the grace
            _start_queue.put_nowait((task.id, os.getpid(), time.time()))
    start = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    from dpverify.errors import DpverifyError, SpecError
    from dpverify.spec import loads
    from dpverify.verify.run import verify_spec

    def out(status: str, result: dict[str, Any], values=(), expect=()) -> dict[str, Any]:
        return {"status": status, "result": result, "values": list(values),
                "expect": list(expect), "seconds": time.perf_counter() - start,
                "worker": worker}

    try:
        spec = loads(task.text, source=task.source, default_name=Path(task.source).stem)
        result = verify_spec(spec, task.options)
    except SpecError as exc:
        return out(INVALID, error_result(task.source, str(exc), invalid=True))
    except DpverifyError as exc:  # refused (size limit) or a solver failure: undecided
        return out(DONE, error_result(task.source, str(exc)))
    except MemoryError:
        return out(FAILED, error_result(task.source, "out of memory"))
    except Exception as exc:  # noqa: BLE001  a bug must not stop the batch: an error, never a pass
        return out(FAILED, error_result(task.source, f"internal error: "
                                                     f"{type(exc).__name__}: {exc}"))
    values = [(r.agent, r.accuracy, _finite(r.optimum)) for r in result.results]
    expect = [(e.agent, e.accuracy, float(e.value), e.verdict)
              for e in getattr(spec, "expect", ())]
    return out(DONE, result.to_json(), values, expect)


START_TOPIC = "dpverify-task-start"


def run_task_dask(task: Task) -> dict[str, Any]:
    """`run_task` on a Dask worker, first telling the client that the task has started."""
    import distributed

    with contextlib.suppress(Exception):  # timing only: a lost event costs the grace
        worker = distributed.get_worker()
        worker.log_event(START_TOPIC, {"key": str(worker.get_current_task())})
    return run_task(task)


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def outcome_from(task: Task, payload: dict[str, Any]) -> Outcome:
    return Outcome(task_id=task.id, status=payload["status"], result=payload["result"],
                   values=tuple(tuple(v) for v in payload["values"]),
                   expect=tuple(tuple(e) for e in payload["expect"]),
                   seconds=float(payload["seconds"]), worker=payload["worker"])


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

    def _poll_starts(self, flights: dict[cf.Future, _Flight]) -> None:
        """Record when tasks really started (if the executor can tell)."""

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

    def _abort(self) -> None:
        """Stop everything in flight at once (Ctrl-C, or the caller stopped listening)."""

    def close(self) -> None:
        """Release the workers."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, tasks: Iterable[Task], timeout: float | None
            ) -> Generator[Outcome, None, None]:
        state = _State(pending=deque(tasks))
        finished = False
        try:
            while state.pending or state.suspects or state.flights:
                self._fill(state)
                wait = POLL_SECONDS
                if timeout is not None and state.flights:
                    now = time.time()
                    first = min(f.deadline(timeout) for f in state.flights.values())
                    wait = max(0.01, min(wait, first - now))
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

    def _fill(self, state: _State) -> None:
        if state.suspects:
            # Suspects of a crash run alone, so a crash can be attributed.
            if not state.flights:
                self._launch(state, state.suspects.popleft(), solo=True)
            return
        while state.pending and len(state.flights) < self.capacity:
            self._launch(state, state.pending.popleft())

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
        self._ctx = multiprocessing.get_context("spawn")
        self._pool: cf.ProcessPoolExecutor | None = None
        self._queue: Any = None
        self._saved_env: dict[str, str | None] = {}

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
            return self._ensure_pool().submit(self._target, task), None
        except BrokenProcessPool as exc:  # a worker died since the last look: a break
            fut: cf.Future = cf.Future()
            fut.set_exception(exc)
            return fut, None

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
        procs = self._processes()
        early = []
        for p in procs:  # the dead worker has exited already; the pool terminates the rest
            with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
                p.join(timeout=2)
            early.append(getattr(p, "exitcode", None))
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


def _one_thread(options: VerifyOptions) -> VerifyOptions:
    from dataclasses import replace

    return options if options.threads == 1 else replace(options, threads=1)


# -- Dask -----------------------------------------------------------------------------------
def import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise InputError("--scheduler needs Dask's distributed package, which is not "
                         "installed: pip install 'dpverify[dask]'") from None
    return distributed


class DaskExecutor(Executor):
    """The same loop on a Dask cluster: `address` of a scheduler, or `local` for a
    LocalCluster of `workers` single-threaded worker processes."""

    name = "dask"

    def __init__(self, address: str, workers: int | None = None, *,
                 connect_timeout: float = 10.0) -> None:
        distributed = import_distributed()
        self._distributed = distributed
        self.address = address
        self._cluster: Any = None
        self._client: Any = None
        self._starts: dict[str, float] = {}
        self._live: dict[str, Any] = {}  # Dask futures in flight, by key
        try:
            if address == "local":
                self._cluster = distributed.LocalCluster(
                    n_workers=max(1, workers or usable_cpus()), threads_per_worker=1,
                    processes=True, dashboard_address=None, silence_logs=logging.ERROR,
                    # No dashboard; the scheduler's small HTTP server on any free port.
                    scheduler_kwargs={"dashboard_address": ":0"})
                self._client = distributed.Client(self._cluster, set_as_default=False)
            else:
                self._client = distributed.Client(address, timeout=connect_timeout,
                                                  set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            self.close()
            raise InputError(f"--scheduler {address}: cannot connect to the Dask scheduler: "
                             f"{exc}") from None
        self._check_workers()

    def _check_workers(self) -> None:
        """Every worker imports the verifier up front and runs this very version (the store
        keys results by version)."""
        try:
            versions = self._client.run(warm_up)
        except ImportError as exc:
            self.close()
            raise InputError(f"--scheduler {self.address}: the Dask workers cannot import "
                             f"dpverify ({exc}); install it on every worker") from None
        if not versions:
            self.close()
            raise InputError(f"--scheduler {self.address}: the cluster has no workers")
        wrong = {w: v for w, v in versions.items() if v != __version__}
        if wrong:
            self.close()
            worker, version = next(iter(wrong.items()))
            raise InputError(f"--scheduler {self.address}: worker {worker} runs dpverify "
                             f"{version}, this is {__version__}; install the same version "
                             "on every worker")
        self.workers = max(1, sum(self._client.nthreads().values()))
        self._client.subscribe_topic(START_TOPIC, self._on_start)

    def _on_start(self, event: Any) -> None:
        # Runs in the client's event loop; the client's clock (worker clocks may differ).
        _, msg = event
        if isinstance(msg, dict) and "key" in msg:
            self._starts[msg["key"]] = time.time()

    @property
    def capacity(self) -> int:
        # Twice the threads keeps workers busy across the scheduler's round trips; each
        # task's clock starts when its worker reports that it started.
        return 2 * self.workers

    def _submit(self, task: Task) -> tuple[cf.Future, Any]:
        task = Task(task.id, task.source, task.text, _one_thread(task.options))
        dfut = self._client.submit(run_task_dask, task, pure=False,
                                   key=f"dpverify-{task.id}-{time.time_ns()}")
        cfut: cf.Future = cf.Future()
        cfut.set_running_or_notify_cancel()

        def transfer(f: Any) -> None:
            try:
                cfut.set_result(f.result())
            except BaseException as exc:  # noqa: BLE001  handed to the loop, not swallowed
                with contextlib.suppress(cf.InvalidStateError):
                    cfut.set_exception(exc)

        self._live[dfut.key] = dfut
        dfut.add_done_callback(transfer)
        dfut.add_done_callback(lambda f: self._live.pop(f.key, None))
        return cfut, dfut

    def _poll_starts(self, flights: dict[cf.Future, _Flight]) -> None:
        for flight in flights.values():
            if flight.started is None:
                started = self._starts.pop(flight.handle.key, None)
                if started is not None:
                    flight.started = started

    def _kill(self, late: list[_Flight], flights: dict[cf.Future, _Flight]) -> list[_Flight]:
        keys = {f.handle.key: f for f in late}
        try:
            processing = self._client.processing()
        except Exception:  # noqa: BLE001  best effort: the task is reported as a timeout anyway
            processing = {}
        stuck = [w for w, ks in processing.items() if any(k in keys for k in ks)]
        for f in late:
            f.handle.cancel()
            self._starts.pop(f.handle.key, None)
        if stuck:
            try:
                self._client.restart_workers(stuck, raise_for_error=False)
            except Exception as exc:  # noqa: BLE001  e.g. workers without a nanny
                print(f"dpverify: could not restart Dask worker(s) {', '.join(stuck)}: {exc}",
                      file=sys.stderr)
        return []  # other tasks keep running on their own workers

    def _abort(self) -> None:
        live, self._live = list(self._live.values()), {}
        if live and self._client is not None:
            with contextlib.suppress(Exception):  # shutting down anyway
                self._client.cancel(live, force=True)

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
            self._client = None
        if self._cluster is not None:
            with contextlib.suppress(Exception):
                self._cluster.close()
            self._cluster = None


def make_executor(jobs: int | None = None, scheduler: str | None = None) -> Executor:
    """A LocalPool of `jobs` workers, or a DaskExecutor when a scheduler is named."""
    if scheduler:
        return DaskExecutor(scheduler, jobs)
    return LocalPool(jobs)
