"""`dpverify batch`: same values as `verify`, skipping what is stored, resuming after
SIGKILL and Ctrl-C, timeouts, dead workers, invalid files, clean `--json` output.

Spawned process pools cost a second or two each, so the expensive runs are shared
(module-scoped fixtures) and the runner's logic is also tested with an in-process executor.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from inline import InlineExecutor

from dpverify.cli import every_command, main
from dpverify.errors import InputError
from dpverify.reasons import ReasonCode
from dpverify.runner import Store, run_batch
from dpverify.runner.batch import BatchItem, BatchReport
from dpverify.runner.executors.dask import import_distributed
from dpverify.runner.executors.local import LocalPool, Task, run_task
from dpverify.runner.fingerprint import build_id
from dpverify.runner.store import INVALID, TIMEOUT, options_key
from dpverify.verifiers.dispatch import verify_file
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict

DPVERIFY = [sys.executable, "-m", "dpverify"]
ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ["xor", "and", "or", "majority", "sum", "threshold:2", "bit:1"]
GAINS = {"sum": "-square"}


def small_problem(i: int) -> str:
    """The i-th of a family of small, varied problems (k = 2..4)."""
    k = 2 + i % 3
    f = FUNCTIONS[i % len(FUNCTIONS)]
    g = FUNCTIONS[(i + 3) % len(FUNCTIONS)]
    privacy = (f'lambda = ["{2 + i % 4}/2", "3/2"{", 2" * (k - 2)}]' if i % 5 == 0
               else f"epsilon = {0.25 + 0.25 * (i % 6)}")
    accuracy = ['"average"', '"worst"', '["average", "worst"]'][i % 3]
    text = f"""# problem {i}
[problem]
name = "p{i:02d}"
parties = {k}
{privacy}
accuracy = {accuracy}

[observer]
function = "{f}"
gain = "{GAINS.get(f, 'indicator')}"
"""
    if i % 2 == 0:
        text += f"""
[[party]]
index = {1 + i % k}
function = "{g}"
gain = "{GAINS.get(g, 'indicator')}"
"""
    return text


def write_problems(folder: Path, n: int, start: int = 0) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(start, start + n):
        sub = folder / ("deep" if i % 4 == 0 else "")
        sub.mkdir(exist_ok=True)
        path = sub / f"p{i:02d}.toml"
        path.write_text(small_problem(i), encoding="utf-8")
        paths.append(path)
    return paths


# Slow by the corner LP (--method lp: XOR at k = 12, worst case), not by the default proof
SLOW = """[problem]
name = "slow"
parties = 12
epsilon = 1.0
accuracy = "worst"

[observer]
function = "xor"
gain = "indicator"
"""


def comparable(obj: dict) -> dict:
    """A result object without timings."""
    out = {k: v for k, v in obj.items() if k != "seconds"}
    out["results"] = [{k: v for k, v in r.items() if k != "seconds"} for r in obj["results"]]
    return out


def crash_on_b(task: Task):
    """A worker target that kills its own process for files named b*.toml (a crash)."""
    if Path(task.source).name.startswith("b"):
        os.kill(os.getpid(), signal.SIGKILL)
    return run_task(task)


# -- one real batch over 30 problems, shared ---------------------------------------------------
@pytest.fixture(scope="module")
def thirty(tmp_path_factory):
    root = tmp_path_factory.mktemp("thirty")
    paths = write_problems(root / "problems", 30)
    store = root / "store.sqlite"
    res = subprocess.run([*DPVERIFY, "batch", str(root / "problems"), "--store", str(store),
                          "--jobs", "2", "--json"], check=False, capture_output=True,
                         text=True, timeout=120)
    return root, paths, store, res


def test_batch_json_lines_match_verify(thirty) -> None:
    _, paths, _, res = thirty
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 30
    objs = [json.loads(line) for line in lines]  # nothing but JSON on stdout
    by_source = {o["source"]: o for o in objs}
    assert set(by_source) == {str(p) for p in paths}
    for path in paths:
        expected = verify_file(path, VerifyOptions()).to_json()
        got = by_source[str(path)]
        assert got["verdict"] == expected["verdict"] == "optimal"
        assert comparable(got).keys() == comparable(expected).keys()
        for a, b in zip(got["results"], expected["results"], strict=True):
            assert (a["agent"], a["accuracy"], a["verdict"]) == (b["agent"], b["accuracy"],
                                                                 b["verdict"])
            assert a["relaxed_optimum"] == pytest.approx(b["relaxed_optimum"], abs=1e-12)
            assert a["rr_value"] == pytest.approx(b["rr_value"], abs=1e-12)


def test_store_holds_each_problem_once(thirty) -> None:
    _, _, store, _ = thirty
    db = sqlite3.connect(store)
    rows = db.execute("SELECT content_hash, status, verdict FROM results").fetchall()
    assert len(rows) == len({r[0] for r in rows}) == 30
    assert {r[1] for r in rows} == {"done"} and {r[2] for r in rows} == {"optimal"}


def test_second_run_skips_everything(thirty) -> None:
    root, paths, store, first = thirty
    runner = CliRunner()
    t = time.perf_counter()
    res = runner.invoke(main, ["batch", str(root / "problems"), "--store", str(store), "--json"])
    assert time.perf_counter() - t < 5
    assert res.exit_code == 0
    again = {json.loads(line)["source"]: json.loads(line) for line in res.stdout.splitlines()}
    before = {json.loads(line)["source"]: json.loads(line) for line in first.stdout.splitlines()}
    assert again == before  # the stored objects, printed again, identical
    with Store(store) as s:
        report = run_batch([root / "problems"], VerifyOptions(), store=s)
    assert report.skipped == 30 and report.workers == 0 and report.exit_status() == 0
    assert all(item.cached for item in report.items)
    # Other options are another key: nothing is skipped (InlineExecutor: no pool needed).
    with Store(store) as s:
        inline = InlineExecutor()
        report = run_batch([paths[0], paths[1]], VerifyOptions(tol=1e-7), store=s,
                           executor=inline)
    assert report.skipped == 0 and len(inline.submitted) == 2


def test_force_recomputes(tmp_path: Path) -> None:
    paths = write_problems(tmp_path / "p", 3)
    with Store(tmp_path / "s.sqlite") as store:
        run_batch([tmp_path / "p"], VerifyOptions(), store=store, executor=InlineExecutor())
        inline = InlineExecutor()
        report = run_batch([tmp_path / "p"], VerifyOptions(), store=store, executor=inline,
                           force=True)
        assert report.skipped == 0 and len(inline.submitted) == len(paths)
        assert store.count() == 3


def test_plain_output_and_summary(tmp_path: Path) -> None:
    write_problems(tmp_path / "p", 3)
    runner = CliRunner()
    store = str(tmp_path / "s.sqlite")
    res = runner.invoke(main, ["batch", str(tmp_path / "p"), "--store", store, "--jobs", "1"])
    assert res.exit_code == 0, res.output
    assert "[1/3] optimal" in res.output and "slowest" in res.output
    assert "3 problems: 3 optimal, 0 gap, 0 error" in res.output
    res = runner.invoke(main, ["batch", str(tmp_path / "p"), "--store", store, "-q"])
    assert "3 from the store" in res.output and "[1/3]" not in res.output


def test_invalid_file_is_reported_and_exit_2(tmp_path: Path) -> None:
    write_problems(tmp_path / "p", 2)
    (tmp_path / "p" / "bad.toml").write_text(small_problem(1).replace("parties", "partys"))
    (tmp_path / "p" / "binary.toml").write_bytes(b"\xff\xfe not utf-8")
    with Store(tmp_path / "s.sqlite") as store:
        report = run_batch([tmp_path / "p"], VerifyOptions(), store=store,
                           executor=InlineExecutor())
    assert report.exit_status() == 2
    bad = {Path(i.source).name: i for i in report.items if i.invalid}
    assert set(bad) == {"bad.toml", "binary.toml"}
    assert "partys" in bad["bad.toml"].reason and "\n" not in bad["bad.toml"].reason
    assert bad["bad.toml"].verdict is Verdict.ERROR and bad["bad.toml"].result.invalid
    assert bad["bad.toml"].to_dict()["invalid"] is True
    assert bad["bad.toml"].result.code is ReasonCode.INVALID
    assert "not UTF-8" in bad["binary.toml"].reason
    assert sum(i.verdict == "optimal" for i in report.items) == 2
    # Stored as invalid, and still exit 2 when read back from the store.
    with Store(tmp_path / "s.sqlite") as store:
        again = run_batch([tmp_path / "p"], VerifyOptions(), store=store,
                          executor=InlineExecutor())
    assert again.exit_status() == 2 and again.skipped == 3  # the unreadable file is re-read


def test_verify_and_batch_report_an_invalid_file_alike(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(small_problem(1).replace("parties", "partys"))
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe not utf-8")  # read by the parent in a batch, not a worker
    res = CliRunner().invoke(main, ["verify", "--json", str(bad), str(binary)])
    assert res.exit_code == 2
    from_verify = {o["source"]: o for o in json.loads(res.stdout)}
    report = run_batch([bad, binary], VerifyOptions(), store=None, executor=InlineExecutor())
    from_batch = {i.source: i.to_dict() for i in report.items}
    assert from_verify == from_batch
    assert all(o["invalid"] is True and o["results"] == [] for o in from_batch.values())


def test_identical_files_run_once_and_keep_their_names(tmp_path: Path) -> None:
    text = small_problem(3).replace('name = "p03"\n', "")
    (tmp_path / "one.toml").write_text(text)
    (tmp_path / "two.toml").write_text(text)
    inline = InlineExecutor()
    with Store(tmp_path / "s.sqlite") as store:
        report = run_batch([tmp_path, tmp_path / "one.toml"], VerifyOptions(), store=store,
                           executor=inline)
        assert len(inline.submitted) == 1 and store.count() == 1
    names = sorted((i.problem, Path(i.source).name) for i in report.items)
    assert names == [("one", "one.toml"), ("two", "two.toml")]  # each file listed once


def test_identical_files_python_cannot_parse_are_invalid_under_both_names(tmp_path: Path
                                                                        ) -> None:
    """The result of identical bytes is relabelled for the second path by reading its
    name from the TOML: a file nested deeper than the parser recurses made that an
    internal error (RecursionError); both copies are invalid, exit 2."""
    deep = "x = " + "[" * 5000 + "]" * 5000 + "\n"
    for name in ("a", "b"):
        (tmp_path / f"{name}.toml").write_text(deep)
    (tmp_path / "c.toml").write_text(small_problem(1))  # control: a valid problem runs
    report = run_batch([tmp_path], VerifyOptions(), store=None, executor=InlineExecutor())
    categories = sorted((Path(i.source).name, i.category) for i in report.items)
    assert categories == [("a.toml", "invalid"), ("b.toml", "invalid"), ("c.toml", "optimal")]
    assert all("nested too deeply" in i.reason for i in report.items if i.invalid)
    assert report.exit_status() == 2


def test_exit_codes() -> None:
    def item(verdict: str, status: str = "done") -> BatchItem:
        # a count problem's result of that verdict (the problem's verdict is its results')
        result = {"problem": "x", "source": "x.toml", "kind": "count", "n": 1, "alpha": 0.5,
                  "verdict": verdict, "results": [{
                      "agent": "consumer", "accuracy": "minimax", "mechanism_optimum": 0.5,
                      "geometric_value": 0.5, "gap": 0.0, "verdict": verdict,
                      "hypothesis": "monotone", "method": "lp", "seconds": 0.0}]}
        return BatchItem("x.toml", "h", status, result)

    def exit_code(*items: BatchItem, interrupted: bool = False) -> int:
        return BatchReport(items=list(items), interrupted=interrupted).exit_status()

    assert exit_code(item("optimal")) == 0
    assert exit_code(item("optimal"), item("gap")) == 1
    assert exit_code(item("gap"), item("error")) == 3
    assert exit_code(item("error", INVALID), item("error")) == 2
    assert exit_code(item("error", INVALID), interrupted=True) == 130
    assert exit_code(item("error", INVALID), item("error", "internal")) == 4


@pytest.mark.parametrize("raised, status, exit_code", [
    (RuntimeError("boom: a bug"), "internal", 4),
    (MemoryError(), "failed", 3),  # control: out of memory is undecided, not a bug
    (ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the "
                "maximum possible size."), "failed", 3),  # numpy's, for a raised limit
])
def test_a_bug_in_a_worker_is_an_internal_error_exit_4(tmp_path: Path, monkeypatch,
                                                       raised, status, exit_code) -> None:
    """An exception inside a batch worker was reported as `error` (exit 3, undecided);
    it is a bug, as it is for `verify` (exit 4), and the next run retries it."""
    import dpverify.runner.files as files
    from dpverify.runner.check import check_report

    paths = write_problems(tmp_path / "p", 2)

    def verify_source(text, source, options, **kw):
        if source == str(paths[0]):
            raise raised
        return original(text, source, options, **kw)

    original = files.verify_source
    monkeypatch.setattr(files, "verify_source", verify_source)
    with Store(tmp_path / "s.sqlite") as store:
        report = run_batch([tmp_path / "p"], VerifyOptions(), store=store,
                           executor=InlineExecutor())
        item = next(i for i in report.items if i.source == str(paths[0]))
        row = store.get(item.content_hash, options_key(VerifyOptions().key()), build_id())
    assert item.status == status and item.verdict == "error"
    assert item.category == ("internal" if exit_code == 4 else "error")
    assert report.exit_status() == exit_code
    assert check_report(report).exit_status() == exit_code
    assert row is not None and not row.final  # retried by the next run
    if exit_code == 4:
        assert item.reason.startswith("internal error: RuntimeError: boom")


def test_transient_failures_are_retried(tmp_path: Path) -> None:
    """A stored timeout is shown by `results` but not skipped by the next run."""
    paths = write_problems(tmp_path / "p", 2)
    import hashlib

    from dpverify.runner.executors.local import error_result
    from dpverify.runner.store import StoredResult

    h = hashlib.sha256(paths[0].read_bytes()).hexdigest()
    with Store(tmp_path / "s.sqlite") as store:
        store.put(StoredResult(h, options_key(VerifyOptions().key()), build_id(), str(paths[0]),
                               "p00", "unknown", TIMEOUT, "error", "timeout",
                               error_result(str(paths[0]), "timeout", code=ReasonCode.TIMEOUT),
                               (), (), 600.0, "w"))
        inline = InlineExecutor()
        report = run_batch([tmp_path / "p"], VerifyOptions(), store=store, executor=inline)
        assert report.skipped == 0 and len(inline.submitted) == 2
        assert store.get(h, options_key(VerifyOptions().key()), build_id()).status == "done"


def test_no_problem_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no \\*.toml"):
        run_batch([tmp_path], VerifyOptions(), store=None)
    res = CliRunner().invoke(main, ["batch", str(tmp_path), "--store",
                                    str(tmp_path / "s.sqlite")])
    assert res.exit_code == 2


def test_dask_missing_is_a_clear_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(InputError, match=r"pip install -e '\.\[dask\]'"):
        import_distributed()
    write_problems(tmp_path / "p", 1)
    res = CliRunner().invoke(main, ["batch", str(tmp_path / "p"), "--scheduler", "local",
                                    "--store", str(tmp_path / "s.sqlite")])
    assert res.exit_code == 2 and "-e '.[dask]'" in res.output
    assert "Traceback" not in res.output


def test_commands_have_help() -> None:
    runner = CliRunner()
    for name in ("batch", "results", "check"):
        res = runner.invoke(main, [name, "--help"])
        assert res.exit_code == 0 and len(every_command()[name].help or "") > 40
        for param in every_command()[name].params:
            if isinstance(param, __import__("click").Option):
                assert param.help, f"{name} {param.name} has no help"


@pytest.mark.parametrize("address", ["foo", "tcp://host", "host:99999", "http://host:8786",
                                     "tcp://:8786", "host:port"])
def test_a_malformed_scheduler_fails_at_once(tmp_path: Path, address: str) -> None:
    """`--scheduler foo` once printed a line, hung 20 s and printed a Dask traceback."""
    write_problems(tmp_path / "p", 1)
    start = time.perf_counter()
    res = CliRunner().invoke(main, ["batch", str(tmp_path / "p"), "--scheduler", address,
                                    "--store", str(tmp_path / "s.sqlite")])
    assert time.perf_counter() - start < 3
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "tcp://HOST:PORT" in res.output and "[1/1]" not in res.output
    with pytest.raises(InputError, match="not a scheduler address"):
        run_batch([tmp_path / "p"], VerifyOptions(), store=None, scheduler=address)


@pytest.mark.parametrize("address", ["local", "tcp://127.0.0.1:8786", "localhost:8786",
                                     "tls://dask.example.org:443", "[::1]:8786"])
def test_well_formed_scheduler_addresses(address: str) -> None:
    from dpverify.runner.executors.local import check_scheduler

    assert check_scheduler(address) == address


def test_a_closed_stdout_stops_the_batch_and_keeps_what_finished(tmp_path: Path) -> None:
    """`batch --json | head -1`: no "internal error", and what finished is stored."""
    write_problems(tmp_path / "p", 6)
    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen([*DPVERIFY, "batch", str(tmp_path / "p"), "--json", "-j", "1",
                             "--store", str(store)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""
    assert 1 <= _stored(store) < 6  # stored before it was printed; then the batch stopped
    res = CliRunner().invoke(main, ["batch", str(tmp_path / "p"), "--store", str(store),
                                    "-q", "-j", "1"])
    assert res.exit_code == 0 and "from the store" in res.output  # and it resumes


def test_batch_takes_the_interior_and_certificate_options(tmp_path: Path) -> None:
    """--grid, --samples, --seed and --certify reach the workers (VerifyOptions fields)."""
    paths = write_problems(tmp_path / "p", 1)
    store = tmp_path / "s.sqlite"
    res = CliRunner().invoke(main, ["batch", str(paths[0]), "--grid", "2", "--samples", "3",
                                    "--seed", "5", "--certify", "--json", "-j", "1",
                                    "--store", str(store)])
    assert res.exit_code == 0, res.output
    (obj,) = [json.loads(line) for line in res.stdout.splitlines()]
    for r in obj["results"]:
        assert r["interior_points"] == {"grid": 2, "samples": 3, "seed": 5}
        assert r["proof"]["status"] in ("proved-optimal", "bracket")
    with Store(store) as s:
        (row,) = s.all()
    assert json.loads(row.options_key)["certify"] is True
    # check takes them too, and finds the result in the store under the same options
    res = CliRunner().invoke(main, ["check", str(paths[0]), "--grid", "2", "--samples", "3",
                                    "--seed", "5", "--certify", "--store", str(store)])
    assert res.exit_code == 0 and "1 from the store" in res.output


# -- limits: timeout, a dead worker ------------------------------------------------------------
@pytest.mark.fresh_pool  # a pool's own timeouts: its workers killed and replaced
def test_timeout_replaces_the_worker_and_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    write_problems(folder, 3)
    (folder / "slow.toml").write_text(SLOW)
    options = VerifyOptions(max_nonzeros=10**9, method="lp")  # the LP route is the slow one
    start = time.perf_counter()
    with Store(tmp_path / "s.sqlite") as store:
        report = run_batch([folder], options, store=store, jobs=2, timeout=1.5)
        rows = {r.source: r for r in store.all()}
    elapsed = time.perf_counter() - start
    by_name = {Path(i.source).name: i for i in report.items}
    slow = by_name.pop("slow.toml")
    assert slow.status == TIMEOUT and slow.verdict == "error"
    assert slow.reason == "timeout: no verdict within 1.5 s (--timeout)"  # the limit, the option
    assert slow.to_dict()["reason_code"] == "timeout"
    assert 1.5 <= slow.seconds < 5
    assert all(i.verdict == "optimal" for i in by_name.values()) and len(by_name) == 3
    assert report.exit_status() == 3
    assert rows[str(folder / "slow.toml")].status == TIMEOUT  # stored, to be retried
    assert elapsed < 25


WARMED = """
import json, sys
from dpverify.runner import worker
from dpverify.verifiers.options import VerifyOptions
if sys.argv[1] == "warm":
    worker.warm_up()
else:
    import dpverify.runner.files  # what warm_up imported before (the control)
before = set(sys.modules)
for i, path in enumerate(sys.argv[2:]):
    with open(path, encoding="utf-8") as handle:
        task = worker.Task(i, path, handle.read(), VerifyOptions(threads=1))
    out = worker.run_task(task)
    assert out["status"] == "done", (path, out)
heavy = sorted(m for m in set(sys.modules) - before
               if m.split(".")[0] in ("dpverify", "scipy", "highspy", "numpy"))
print(json.dumps(heavy))
"""


@pytest.mark.parametrize("warm", [True, False], ids=["warmed", "control"])
def test_a_workers_first_task_does_not_pay_for_imports(warm: bool) -> None:
    """The cause of a flaky timeout test: a worker's clock for a task starts in run_task,
    and the first task on each fresh worker imported the verifiers (1-3 s on a loaded
    machine), so a trivial problem could exceed a 1.5 s timeout. After warm_up (the
    pool's initializer), a problem of every kind and setting imports nothing heavy; the
    control (the old warm-up, runner.files alone) shows the check catches it."""
    problems = ROOT / "problems"
    paths = [problems / name for name in (
        "xor-2.toml", "count/abs-10.toml", "approximate/xor-2-delta.toml",
        "multisymbol/xor-3x2.toml", "protocols/rr-and-3.toml")]
    out = subprocess.run([sys.executable, "-c", WARMED, "warm" if warm else "cold",
                          *map(str, paths if warm else paths[:1])], capture_output=True,
                         text=True, timeout=240, check=True)
    imported = json.loads(out.stdout.strip().splitlines()[-1])
    if warm:
        assert imported == [], imported
    else:
        assert "dpverify.verifiers.multiparty.planner" in imported and \
            "dpverify.checker" in imported, imported


def test_dead_worker_is_an_error_and_the_batch_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    paths = write_problems(folder, 5)
    (folder / "b-crash.toml").write_text(small_problem(7))
    pool = LocalPool(2, target=crash_on_b)
    try:
        report = run_batch([folder], VerifyOptions(), store=None, executor=pool, timeout=60)
    finally:
        pool.close()
    by_name = {Path(i.source).name: i for i in report.items}
    crashed = by_name.pop("b-crash.toml")
    assert crashed.status == "crashed" and crashed.verdict == "error"
    # The cause is read from the dead worker's exit code, even when the pool's own thread
    # reaps the process first (the race that once made this "worker died" alone).
    assert crashed.reason == "worker died: killed by SIGKILL (out of memory?)"
    assert crashed.to_dict()["reason_code"] == "worker-failed"
    assert len(by_name) == len(paths) and all(i.verdict == "optimal" for i in by_name.values())
    assert report.exit_status() == 3


# -- killed and interrupted runs ----------------------------------------------------------------
def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _stored(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        return sqlite3.connect(store).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _wait_for_rows(store: Path, proc: subprocess.Popen, n: int, limit: float = 60) -> int:
    deadline = time.time() + limit
    while time.time() < deadline and proc.poll() is None:
        count = _stored(store)
        if count >= n:
            return count
        time.sleep(0.05)
    pytest.fail(f"the batch stored fewer than {n} results in time (exit {proc.poll()})")


N_KILL = 80  # 30 small problems took 1.9 s in all: on a loaded machine the kill came late


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sigkill_then_resume(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    write_problems(folder, N_KILL)  # enough that the kill comes first
    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen([*DPVERIFY, "batch", str(folder), "--store", str(store), "-j", "2",
                             "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_rows(store, proc, 4)
        workers = _children(proc.pid)
        proc.kill()  # SIGKILL: no clean-up at all
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = _stored(store)
    assert 4 <= before < N_KILL, "the batch finished before it could be killed"
    # The orphaned workers notice that their parent is gone and exit.
    deadline = time.time() + 10
    while time.time() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.1)
    alive = [w for w in workers if Path(f"/proc/{w}").exists()
             and "multiprocessing" in Path(f"/proc/{w}/cmdline").read_text(errors="replace")
             and "spawn_main" in Path(f"/proc/{w}/cmdline").read_text(errors="replace")]
    assert not alive, f"orphaned workers still running: {alive}"
    res = subprocess.run([*DPVERIFY, "batch", str(folder), "--store", str(store), "-j", "2",
                          "--json"], check=False, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.splitlines()) == N_KILL
    db = sqlite3.connect(store)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = db.execute("SELECT content_hash FROM results").fetchall()
    assert len(rows) == len(set(rows)) == N_KILL  # every problem stored exactly once
    with Store(store) as s:
        report = run_batch([folder], VerifyOptions(), store=s)
    assert report.skipped == N_KILL


def test_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    # enough problems that the batch is still running when the signal comes (30 took
    # 1.9 s in all, and lost the race on a loaded machine)
    write_problems(folder, 300)
    store = tmp_path / "s.sqlite"
    # The child starts with Ctrl-C's default action: under pytest-xdist the test runs in a
    # worker that ignores SIGINT, and an ignored signal stays ignored across exec.
    proc = subprocess.Popen([*DPVERIFY, "batch", str(folder), "--store", str(store), "-j", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for_rows(store, proc, 3)
        assert proc.poll() is None, "the batch finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    import re

    saved = _stored(store)
    # the resume hint is a message, on stderr; stdout holds the report alone (issue 26)
    match = re.search(r"interrupted: (\d+) of 300 problems finished and saved", err)
    assert match, err
    assert "interrupted" not in out and "[" not in out.partition("slowest")[0], out
    # Each result is committed before it is counted: Ctrl-C between the two can only
    # leave one more stored than counted.
    assert int(match.group(1)) <= saved <= int(match.group(1)) + 1 and saved < 300


def test_a_result_computed_past_the_limit_is_a_timeout_however_fast_it_arrives(tmp_path):
    """The time limit is the worker's own clock: a result that took longer than --timeout
    is `timeout` even when it reached the runner before its next look at the deadlines
    (a warm pool answers a small problem within one poll; this used to keep the result,
    so a 1e-6 s limit bit only while the workers were starting)."""
    from dpverify.runner.executors.base import within_limit
    from dpverify.runner.worker import Outcome

    done = Outcome(1, "done", {"problem": "p", "source": "p.toml", "verdict": "optimal"},
                   values=(("observer", "average", 0.5),), seconds=0.2)
    late = within_limit(done, 0.1)
    assert late.status == TIMEOUT and late.result["verdict"] == "error"
    assert late.result["reason_code"] == "timeout" and late.result["problem"] == "p"
    assert late.values == ()
    assert within_limit(done, 0.3) is done  # control: within the limit, kept as it is
    assert within_limit(done, None) is done
    folder = tmp_path / "p"
    write_problems(folder, 4)
    for _ in range(2):  # the second run on warm workers too
        report = run_batch([folder], VerifyOptions(), store=None, jobs=1, timeout=1e-6)
        assert {i.status for i in report.items} == {TIMEOUT}, report.items
