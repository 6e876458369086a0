"""The Python API in ordinary scripts (issue 17, B7): `dpverify.batch(..., jobs=2)` and
`dpverify.sweep(...)` run from a file and from standard input, with and without an
`if __name__ == "__main__":` guard, in real subprocesses. Each must finish with the right
results (the workers never re-run the script), or, for Dask's LocalCluster, which re-runs
it, stop with one clear line and a non-zero exit: never `worker died` rows and exit 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dpverify

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"
BATCH = [str(PROBLEMS / "and-3.toml"), str(PROBLEMS / "xor-2.toml")]

BODY = f"""
import json
import dpverify
report = dpverify.batch({BATCH!r}, jobs=2)
sweep = dpverify.sweep({str(PROBLEMS / "xor-2.toml")!r}, epsilon="0.5,1", jobs=2)
figure = sweep.plot()
marks = sum(len(c.get_offsets()) for ax in figure.axes for c in ax.collections)
print(json.dumps({{"batch": {{i.source: [i.verdict, i.reason] for i in report.items}},
                  "sweep": [p.category for p in sweep.points], "marks": marks,
                  "rows": len(sweep.rows()),
                  "values": [p.result["results"][0]["relaxed_optimum"] for p in sweep.points]}}))
"""


def script(guarded: bool, body: str = BODY) -> str:
    if not guarded:
        return body
    return 'if __name__ == "__main__":\n' + textwrap.indent(body.strip("\n"), "    ") + "\n"


def run(text: str, how: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if how == "file":
        path = tmp_path / "my_script.py"
        path.write_text(text)
        args, stdin = [sys.executable, str(path)], None
    else:
        args, stdin = [sys.executable, "-"], text
    return subprocess.run(args, input=stdin, capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300, check=False)


# A guarded script is the easy case (a spawned worker imports it as __mp_main__ and skips
# its body); the unguarded one, which a worker would run again, is the hard one and stays in
# the default run. Each variant is a real process with two pools: seconds each.
GUARDED = pytest.param(True, id="guarded", marks=pytest.mark.slow)


@pytest.mark.parametrize("how", ["file", "stdin"])
@pytest.mark.parametrize("guarded", [pytest.param(False, id="unguarded"), GUARDED])
def test_batch_and_sweep_in_a_script_give_the_results(tmp_path, how, guarded):
    pytest.importorskip("matplotlib")
    done = run(script(guarded), how, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "worker died" not in done.stdout
    got = json.loads(done.stdout)
    assert got["batch"] == {source: [dpverify.verify(source).verdict.value, ""]
                            for source in BATCH}
    assert got["sweep"] == ["optimal", "optimal"]
    expected = [dpverify.verify(dpverify.load(PROBLEMS / "xor-2.toml").replace(epsilon=e))
                .results[0].relaxed_optimum for e in (0.5, 1.0)]
    assert got["values"] == pytest.approx(expected, rel=1e-9)
    # a verdict marked per point and panel: XOR's average and worst case agree, one panel
    assert got["rows"] == 4 and got["marks"] == 2


DASK_BODY = f"""
import json
import dpverify
report = dpverify.batch({BATCH!r}, jobs=2, scheduler="local")
print(json.dumps({{i.source: [i.verdict, i.reason] for i in report.items}}))
"""


@pytest.mark.slow  # a control (it passed before too): a LocalCluster costs seconds
def test_dask_local_in_a_guarded_script_gives_the_results(tmp_path):
    pytest.importorskip("distributed")
    done = run(script(True, DASK_BODY), "file", tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {source: [dpverify.verify(source).verdict.value, ""]
                                       for source in BATCH}


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_dask_local_without_the_guard_stops_with_one_clear_line(tmp_path, how):
    """Dask's workers run the script again: an unguarded script stops, non-zero, with the
    guard named (in the workers' lines and the exception's); a script from standard input
    is refused before any worker starts. No rows, no `worker died`."""
    pytest.importorskip("distributed")
    done = run(script(False, DASK_BODY), how, tmp_path)
    assert done.returncode != 0 and done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("dpverify.errors.InputError: --scheduler local")
    assert 'if __name__ == "__main__":' in last
    if how == "stdin":
        assert "standard input" in last and "Nanny" not in done.stderr
    else:
        workers = [line for line in done.stderr.splitlines()
                   if line.startswith("dpverify: a worker process")]
        assert workers and all('if __name__ == "__main__":' in line for line in workers)
        assert "bootstrapping phase" not in done.stderr  # multiprocessing's own traceback
