"""The Dask executor: the batch loop of `dpverify.runner.executors.base` on a Dask cluster
(`distributed.Client(ADDRESS)`, or a `LocalCluster` for `local`). Dask is an optional
extra (from a wheel `pip install 'dpverify[dask]'`; in the checkout `.venv/bin/pip install -e
'.[dask]'`: dpverify.install), imported only here and lazily.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from dpverify.errors import InputError
from dpverify.install import install_hint
from dpverify.runner.executors.base import (
    Executor,
    Flight,
    check_scheduler,
    one_thread,
    usable_cpus,
)
from dpverify.runner.executors.spawn import GUARD, main_is_rerunnable
from dpverify.runner.worker import START_TOPIC, Task, run_task_dask, warm_up
from dpverify.version import __version__

CONNECT_TIMEOUT = 5.0  # seconds: a scheduler that does not answer by then is unreachable


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """Dask logs each failed connection attempt with a traceback: keep stderr to our one
    line while connecting."""
    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise InputError("--scheduler needs Dask's distributed package, which is not "
                         f"installed: {install_hint('dask')}") from None
    return distributed


def _local_cluster(distributed: Any, workers: int | None) -> Any:
    """A LocalCluster of single-threaded worker processes. Its workers are spawned by Dask,
    which runs the user's main module again in each: refused from standard input (there is
    no file to run), and explained when they fail to start (an unguarded script)."""
    if not main_is_rerunnable():
        raise InputError("--scheduler local: Dask's worker processes run the main script "
                         "again, and a script read from standard input cannot be; save it "
                         f"to a file and {GUARD}, or use the default executor")
    try:
        return distributed.LocalCluster(
            n_workers=max(1, workers or usable_cpus()), threads_per_worker=1,
            processes=True, dashboard_address=None, silence_logs=logging.ERROR,
            # No dashboard; the scheduler's small HTTP server on any free port.
            scheduler_kwargs={"dashboard_address": ":0"})
    except RuntimeError as exc:  # "Nanny failed to start"
        raise InputError(f"--scheduler local: Dask's worker processes failed to start "
                         f"({exc}); they run the main script again: {GUARD}") from None


class DaskExecutor(Executor):
    """The same loop on a Dask cluster: `address` of a scheduler, or `local` for a
    LocalCluster of `workers` single-threaded worker processes."""

    name = "dask"

    def __init__(self, address: str, workers: int | None = None, *,
                 connect_timeout: float | None = None) -> None:
        check_scheduler(address)
        if connect_timeout is None:
            connect_timeout = CONNECT_TIMEOUT
        distributed = import_distributed()
        self.address = address
        self._cluster: Any = None
        self._client: Any = None
        self._starts: dict[str, float] = {}
        self._live: dict[str, Any] = {}  # Dask futures in flight, by key
        try:
            if address == "local":
                self._cluster = _local_cluster(distributed, workers)
                self._client = distributed.Client(self._cluster, set_as_default=False)
            else:
                with _quiet_logs():
                    self._client = distributed.Client(address, timeout=connect_timeout,
                                                      set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            self.close()
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise InputError(f"--scheduler {address}: cannot connect to the Dask scheduler "
                             f"within {connect_timeout:g} s: {reason}") from None
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
        task = replace(task, options=one_thread(task.options))
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

    def _poll_starts(self, flights: dict[cf.Future, Flight]) -> None:
        for flight in flights.values():
            if flight.started is None:
                started = self._starts.pop(flight.handle.key, None)
                if started is not None:
                    flight.started = started

    def _kill(self, late: list[Flight], flights: dict[cf.Future, Flight]) -> list[Flight]:
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
