"""Shared test set-up: the `slow` marker behind `--runslow`, derandomized property tests,
problem-file helpers, and batch worker pools kept warm for the session."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (CI must not pass or fail by luck);
# `--hypothesis-profile explore` draws new ones.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow")


def pytest_configure(config: pytest.Config) -> None:
    # pyproject.toml declares the marker too; repeating it keeps `--strict-markers` happy
    # when the tests run from another rootdir.
    config.addinivalue_line("markers", "slow: long-running tests (opt in with --runslow)")
    config.addinivalue_line("markers", "fresh_pool: batches of this test start their own "
                            "worker processes (not the session's warm pool)")
    import budget  # tests/budget.py: the property tests' examples, all with --runslow

    budget.FULL = bool(config.getoption("--runslow"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def write_toml(tmp_path: Path):
    """write_toml(text, name="problem") -> Path of a dedented TOML file under tmp_path."""

    def write(text: str, name: str = "problem", subdir: str = "") -> Path:
        folder = tmp_path / subdir if subdir else tmp_path
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def load_toml(write_toml):
    """load_toml(text, name="problem") -> the spec loaded from a file (through `load`)."""
    from dpverify.spec import load

    def run(text: str, name: str = "problem"):
        return load(write_toml(text, name))

    return run


@pytest.fixture
def inline_executor():
    """A batch executor that runs each task in this process (no worker pool to start)."""
    import concurrent.futures as cf

    from dpverify.runner.executors.local import Executor, run_task

    class InlineExecutor(Executor):
        name = "inline"

        def _submit(self, task):
            fut: cf.Future = cf.Future()
            fut.set_result(run_task(task))
            return fut, None

        def _kill(self, late, flights):
            return []

    return InlineExecutor()


# -- warm worker pools ---------------------------------------------------------------------
# A batch, check, sweep or survey run in this process starts a pool of spawned workers,
# each importing dpverify, numpy and scipy afresh: most of the time of a small batch. The
# tests share one pool per worker count for the session instead (the pool's workers run
# the same `run_task` on the same tasks; nothing of a test reaches them but its tasks).
# Tests about the pool's own life (timeouts that kill workers, crashes, Ctrl-C) are
# marked `fresh_pool`, and those that pass their own executor or run the CLI in a
# subprocess get real new processes anyway.
@pytest.fixture(scope="session")
def _warm_pools():
    pools: dict[int, object] = {}
    yield pools
    for pool in pools.values():
        pool.shut()  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _share_warm_pools(request, _warm_pools, monkeypatch):
    if request.node.get_closest_marker("fresh_pool") is not None:
        yield
        return
    from dpverify.runner import batch
    from dpverify.runner.executors import local

    make_executor = local.make_executor

    class WarmPool(local.LocalPool):
        def drain(self) -> None:
            self._poll_starts({})  # the start times of earlier tests' tasks: not ours

        def close(self) -> None:  # the run is over: keep the workers, restore the env
            self.drain()
            self.restore_env()

        def shut(self) -> None:
            local.LocalPool.close(self)

    def warm(jobs=None, scheduler=None):
        if scheduler:
            return make_executor(jobs, scheduler)
        n = max(1, jobs or local.usable_cpus())
        pool = _warm_pools.get(n)
        if pool is None:
            pool = _warm_pools[n] = WarmPool(n)
        pool.drain()
        return pool

    monkeypatch.setattr(batch, "make_executor", warm)
    yield
