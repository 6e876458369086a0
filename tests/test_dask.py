"""The Dask executor, for real: a LocalCluster with 2 workers gives the same results as the
local process pool, through the same executor interface. Skipped only when Dask's
`distributed` is not installed (`.venv/bin/pip install -e '.[dask]'`)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("distributed")

from dpverify.cli import main
from dpverify.errors import InputError
from dpverify.runner import Store, run_batch
from dpverify.runner.executors.dask import DaskExecutor
from dpverify.verifiers.options import VerifyOptions

sys.path.insert(0, str(Path(__file__).parent))
from test_batch import SLOW, comparable, write_problems


@pytest.fixture(scope="module")
def cluster():
    executor = DaskExecutor("local", 2)
    try:
        yield executor
    finally:
        executor.close()


def test_dask_matches_local_pool(cluster, tmp_path: Path) -> None:
    folder = tmp_path / "p"
    paths = write_problems(folder, 10)
    assert cluster.workers == 2 and cluster.name == "dask"
    with Store(tmp_path / "dask.sqlite") as store:
        on_dask = run_batch([folder], VerifyOptions(), store=store, executor=cluster)
        assert store.count() == 10
    local = run_batch([folder], VerifyOptions(), store=None, jobs=2)  # a local pool
    assert on_dask.exit_status() == local.exit_status() == 0
    a = {i.source: comparable(i.to_dict()) for i in on_dask.items}
    b = {i.source: comparable(i.to_dict()) for i in local.items}
    assert set(a) == {str(p) for p in paths} and a == b
    # The Dask workers ran the tasks, not this process.
    workers = {r.worker for r in Store(tmp_path / "dask.sqlite").all()}
    assert workers and all(":" in w for w in workers)


# A second LocalCluster (seconds): the cluster's results are test_dask_matches_local_pool's,
# the CLI's --scheduler reaching make_executor is test_batch's scheduler tests' and
# test_scripts' (scheduler="local" through the API).
@pytest.mark.slow
def test_cli_scheduler_local(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    write_problems(folder, 4)
    res = CliRunner().invoke(main, ["batch", str(folder), "--scheduler", "local", "-j", "2",
                                    "--store", str(tmp_path / "s.sqlite"), "--json"])
    assert res.exit_code == 0, res.output
    objs = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(objs) == 4 and {o["verdict"] for o in objs} == {"optimal"}


def test_unreachable_scheduler_is_exit_2() -> None:
    start = time.perf_counter()
    with pytest.raises(InputError, match="cannot connect to the Dask scheduler"):
        DaskExecutor("tcp://127.0.0.1:9", connect_timeout=1)
    assert time.perf_counter() - start < 20


def test_an_unreachable_scheduler_is_one_line_after_a_short_timeout(tmp_path: Path,
                                                                     monkeypatch) -> None:
    from dpverify.runner.executors import dask as dask_executor

    assert dask_executor.CONNECT_TIMEOUT <= 5  # the default: short
    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT", 1.0)  # keeps the test short
    write_problems(tmp_path / "p", 1)
    start = time.perf_counter()
    res = CliRunner().invoke(main, ["batch", str(tmp_path / "p"), "--scheduler",
                                    "tcp://127.0.0.1:9", "--store", str(tmp_path / "s.sqlite")])
    assert time.perf_counter() - start < 5
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot connect to the Dask scheduler within 1 s" in lines[0]
    assert "Traceback" not in res.output


@pytest.mark.slow
def test_dask_timeout_restarts_the_worker(cluster, tmp_path: Path) -> None:
    folder = tmp_path / "p"
    write_problems(folder, 3)
    (folder / "slow.toml").write_text(SLOW)
    report = run_batch([folder], VerifyOptions(max_nonzeros=10**9, method="lp"), store=None,
                       executor=cluster, timeout=2)
    by_name = {Path(i.source).name: i for i in report.items}
    assert by_name.pop("slow.toml").reason == "timeout: no verdict within 2 s (--timeout)"
    assert all(i.verdict == "optimal" for i in by_name.values())
    # The cluster still has two workers and still works.
    again = run_batch([folder / "p01.toml"], VerifyOptions(), store=None, executor=cluster)
    assert again.exit_status() == 0 and cluster._client is not None
