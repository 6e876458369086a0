"""The worker side of a batch: what runs in a worker process for one problem file.

A worker runs `run_task` and returns plain data (a dict), never a library object or a
library exception: SpecError and friends take required arguments and do not unpickle.
It verifies through `dpverify.runner.files.verify_source`, exactly as `dpverify verify`
does, so both report every file (an invalid one, a refused one) the same way.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import time
from typing import Any

from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.runner.fingerprint import build_id
from dpverify.runner.store import DONE, FAILED, INTERNAL, INVALID, TIMEOUT
from dpverify.status import out_of_memory
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import plain
from dpverify.version import __version__

WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@record
class Task:
    """One problem to verify: its text travels with it, so a remote worker needs no shared
    file system and the result is for exactly the bytes that were hashed."""

    id: int
    source: str
    text: str
    options: VerifyOptions
    timeout: float | None = None  # the run's deadline in the worker (the parent's limit too)


@record
class Outcome:
    """What became of one task. `result` is spec.md's result object (with `source`)."""

    task_id: int
    status: str  # a store.TaskStatus: DONE, INVALID, TIMEOUT, CRASHED, FAILED or INTERNAL
    result: dict[str, Any]
    values: tuple[tuple[str, str, float | None], ...] = ()
    expect: tuple[tuple[str, str, float, str], ...] = ()
    seconds: float = 0.0
    worker: str = ""
    build: str = ""  # the build of dpverify that computed it (fingerprint.build_id)
    cached: bool = False  # read from the store (another run computed it), not computed here

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


def error_result(source: str, reason: str, *, code: ReasonCode, problem: str | None = None,
                 invalid: bool = False) -> dict[str, Any]:
    """spec.md's result object for a problem that could not be decided (verdict `error`),
    as `dpverify verify --json` gives it (`dpverify.runner.files.error_json`)."""
    from dpverify.runner.files import error_json

    return error_json(source, reason, problem=problem, invalid=invalid, code=code)


# -- the worker side ----------------------------------------------------------------------
_start_queue: Any = None


def init_worker(start_queue: Any) -> None:
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


# What a worker imports before its first task (warm_up): the parser and the verifier of
# every kind, each imported lazily by spec/loader.py and verifiers/dispatch.py, and the
# independent checker. Without them the first task on each fresh worker carried one to
# three seconds of imports on its clock (numpy's and HiGHS's included), enough to time out
# a trivial problem under a short --timeout on a loaded machine. tests/test_batch.py checks
# that after warm_up no verification of a small problem of each kind imports a module of
# dpverify, scipy or highspy. scipy is not warmed: of a worker's start-up (0.6 s of CPU with
# it, 0.3 s without) it was half, and only the dense worst-case method and the orbit
# method's game use it (problems that are not trivial), which import it on first use.
WARM_MODULES = (
    "dpverify.runner.files",
    "dpverify.spec.multiparty_loader",
    "dpverify.spec.count_loader",
    "dpverify.spec.protocol_loader",
    "dpverify.verifiers.multiparty.planner",
    "dpverify.verifiers.multisymbol.verifier",
    "dpverify.verifiers.approximate.problem",
    "dpverify.verifiers.count.verifier",
    "dpverify.verifiers.audit.protocol",
    "dpverify.checker",
    "highspy",  # imported by lp/highs.py at the first solve (no HiGHS instance made here)
    "numpy.ma",  # imported by numpy.unique at its first call
    "flint",  # imported where used: the exact and arb routines
)


def warm_up() -> str:
    """Import the verifiers and the checker (WARM_MODULES: so that the first task's clock,
    which starts in run_task, does not include them) and fingerprint the build; the
    version. A module that cannot be imported is left to the task that needs it (which
    then reports the error as its own): warming up is timing only."""
    for name in WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    build_id()
    return __version__


def run_task(task: Task) -> dict[str, Any]:
    """Verify one problem in a worker; plain data back (see the module docstring)."""
    if _start_queue is not None:
        with contextlib.suppress(Exception):  # timing only: a lost message costs the grace
            _start_queue.put_nowait((task.id, os.getpid(), time.time()))
    start = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    from dpverify.runner.deadline import timeout_reason
    from dpverify.runner.files import FileStatus, verify_source

    def out(status: str, result: dict[str, Any], values=(), expect=()) -> dict[str, Any]:
        return {"status": status, "result": plain(result), "values": list(values),
                "expect": list(expect), "seconds": time.perf_counter() - start,
                "worker": worker, "build": build_id()}

    try:
        outcome = verify_source(task.text, task.source, task.options, timeout=task.timeout)
    except Exception as exc:  # noqa: BLE001  a bug must not stop the batch, nor pass: exit 4
        if out_of_memory(exc):
            return out(FAILED, error_result(task.source, "out of memory",
                                            code=ReasonCode.WORKER_FAILED))
        return out(INTERNAL, error_result(task.source, f"internal error: "
                                                       f"{type(exc).__name__}: {exc}",
                                             code=ReasonCode.INTERNAL))
    if outcome.status is FileStatus.INVALID:
        return out(INVALID, outcome.to_json())
    if outcome.timed_out:  # the worker's own deadline: as when the runner stops it
        return out(TIMEOUT, error_result(task.source, timeout_reason(task.timeout),
                                         code=ReasonCode.TIMEOUT))
    values = [(r.agent, r.accuracy, _finite(r.optimum)) for r in outcome.result.results]
    expect = [(e.agent, e.accuracy, float(e.value), e.verdict)
              for e in getattr(outcome.spec, "expect", ())]
    return out(DONE, outcome.to_json(), values, expect)


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
                   seconds=float(payload["seconds"]), worker=payload["worker"],
                   build=str(payload.get("build") or build_id()))
