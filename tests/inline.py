"""An executor for tests that runs each task in the test's own process: the runner's logic
(runner/executors/base.py) without spawning anything."""

from __future__ import annotations

import concurrent.futures as cf

from dpverify.runner.executors.base import Executor
from dpverify.runner.worker import Task, run_task


class InlineExecutor(Executor):
    """Runs each task in this process; `submitted` lists them in order."""

    name = "inline"

    def __init__(self) -> None:
        self.submitted: list[Task] = []

    def _submit(self, task: Task):
        self.submitted.append(task)
        fut: cf.Future = cf.Future()
        fut.set_result(run_task(task))
        return fut, None

    def _kill(self, late, flights):
        return []
