"""The `spawn` start method, without re-running the user's script in every worker.

A spawned worker normally runs the parent's `__main__` module again (as `__mp_main__`)
before it does anything, so that functions defined in a script can be unpickled. A batch
worker needs none of that: it runs `dpverify.runner.worker.run_task` on a `Task`, both
dpverify's own. Re-running the script is also what breaks a script that calls
`dpverify.batch()` or `dpverify.sweep()` at its top level, without an
`if __name__ == "__main__":` guard: every worker runs the batch again, multiprocessing
refuses to start processes from a process that is still starting, and every worker dies
("worker died"); from `python - <<EOF` every worker fails to find a file named `<stdin>`.

`context()` is a spawn context whose workers are told nothing about `__main__`: the
preparation data a spawned child receives (spawn.get_preparation_data) is sent without
`init_main_from_path` and `init_main_from_name`, and the child's `__main__` stays its own
bootstrap module. Everything else (sys.path, the working directory, the authentication
key) is sent as usual, by the installed Python's own launch code. POSIX only
(`popen_spawn_posix`); elsewhere the plain spawn context. The tests run unguarded scripts
(a file and standard input) through it.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import types
from typing import Any

MAIN_KEYS = ("init_main_from_path", "init_main_from_name")
GUARD = 'call dpverify under `if __name__ == "__main__":`'


def rerunning_main() -> bool:
    """Whether this process is a spawned child still setting itself up, which is when it
    runs the parent's main module again (multiprocessing's own `_inheriting` flag, the one
    its "bootstrapping phase" error checks)."""
    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def refuse_when_rerunning_main() -> None:
    """Stop, in one line, a batch started by a script that a worker process is re-running
    (Dask's `LocalCluster` workers re-run the script, as multiprocessing's spawn does):
    without this, the worker fails with multiprocessing's traceback and the cluster with
    "Nanny failed to start"."""
    if rerunning_main():
        raise SystemExit("dpverify: a worker process started by a dpverify batch ran the "
                         f"script again and reached the batch; {GUARD}")


def main_is_rerunnable() -> bool:
    """Whether a process spawned the usual way (Dask's workers) can run this process's
    main module again: False for a script read from standard input."""
    main = sys.modules.get("__main__")
    if main is None or getattr(getattr(main, "__spec__", None), "name", None):
        return True
    path = getattr(main, "__file__", None)
    return path is None or os.path.isfile(path)


def preparation_data(name: str) -> dict[str, Any]:
    """What a spawned child needs to set itself up, without the parent's main module."""
    from multiprocessing import spawn

    data = spawn.get_preparation_data(name)
    for key in MAIN_KEYS:
        data.pop(key, None)
    return data


def context() -> Any:
    """A spawn context whose children do not import the parent's `__main__`."""
    if sys.platform == "win32":
        return multiprocessing.get_context("spawn")
    return _MainlessSpawnContext()


if sys.platform != "win32":
    from multiprocessing import context as _context
    from multiprocessing import popen_spawn_posix, spawn

    class _SpawnWithoutMain:
        """The `multiprocessing.spawn` module as `_launch` sees it: the same, except that
        its preparation data leave the main module out."""

        get_preparation_data = staticmethod(preparation_data)

        def __getattr__(self, name: str) -> Any:
            return getattr(spawn, name)

    def _launch_without_main() -> Any:
        """The installed Python's own `popen_spawn_posix.Popen._launch`, with `spawn` in
        its globals replaced by `_SpawnWithoutMain`: the one call it makes to
        spawn.get_preparation_data gets `preparation_data` instead; nothing else changes."""
        launch = getattr(popen_spawn_posix.Popen, "_launch")  # noqa: B009 (not in typeshed)
        namespace = {**launch.__globals__, "spawn": _SpawnWithoutMain()}
        return types.FunctionType(launch.__code__, namespace, launch.__name__,
                                  launch.__defaults__, launch.__closure__)

    class _MainlessPopen(popen_spawn_posix.Popen):
        _launch = _launch_without_main()

    class _MainlessProcess(_context.SpawnProcess):
        _start_method = "spawn"

        @staticmethod
        def _Popen(process_obj: Any) -> Any:  # noqa: N802 (multiprocessing's name)
            return _MainlessPopen(process_obj)

    class _MainlessSpawnContext(_context.SpawnContext):
        Process = _MainlessProcess
