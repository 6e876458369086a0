"""Shared test set-up: the `slow` marker behind `--runslow`, derandomized property tests,
and problem-file helpers."""

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
