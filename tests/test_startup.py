"""Start-up (issue 19, point 4; issue 25, point 5): `dpverify --help`, `--version` and a
command's `--help` import nothing heavy, so they answer in a blink; a command that works
imports what its route needs and nothing more (with controls that show the probes see
what a route loads); `verify` ends at once with all its output and its status; the
commands' modules are loaded lazily from a complete table. The timings are in
benchmarks/bench_startup.py, not here."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("numpy", "scipy", "highspy", "cvxpy", "flint", "rich", "matplotlib", "tomlkit",
         "distributed", "dask")
PROBE = """
import json, sys
from click.testing import CliRunner
from dpverify.cli import main
result = CliRunner().invoke(main, json.loads(sys.argv[1]))
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(heavy))))
"""


def loaded(args: list[str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
                          capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["verify", "--help"],
                                  ["batch", "--help"], ["audit", "--help"]])
def test_help_and_version_import_nothing_heavy(args):
    assert loaded(args) == []


def test_a_real_command_does_import_them(tmp_path):
    """Control: the probe sees the modules a real verification loads."""
    path = tmp_path / "xor.toml"
    path.write_text('[problem]\nparties = 2\nepsilon = 1\n[observer]\nfunction = "xor"\n')
    assert {"numpy", "rich"} <= set(loaded(["verify", str(path)]))


def test_a_small_verification_imports_no_scipy(tmp_path):
    """Issue 25 (start-up): the LP route of a one-party problem needs numpy and highspy,
    not scipy (lp/model.py keeps the matrix in its own compressed columns) nor cvxpy."""
    path = tmp_path / "bit.toml"
    path.write_text('[problem]\nparties = 1\nlambda = "3"\n[observer]\nfunction = "bit:1"\n')
    modules = set(loaded(["verify", str(path)]))
    assert {"numpy", "highspy"} <= modules
    assert not modules & {"scipy", "cvxpy", "matplotlib"}, modules


def test_a_route_that_needs_scipy_still_loads_it(tmp_path):
    """Control: the dense interior-point method (theory/worst_ipm.py) imports scipy's
    BLAS when it runs (a worst case without symmetry on 2^9 inputs; at a small k with an
    extreme level the sub-cubes of theory/worst_candidates.py now decide without it)."""
    path = tmp_path / "x.toml"
    table = [(7 * i + i // 3 + i // 17) % 3 for i in range(512)]
    path.write_text('[problem]\nparties = 9\nepsilon = [0.5, 0.7, 0.9, 1.1, 1.3, 0.6, 0.8, 1.0, '
                    f'1.2]\naccuracy = "worst"\n[observer]\nfunction = {{ table = {table} }}\n')
    assert "scipy" in set(loaded(["verify", str(path)]))


# -- issue 25, point 5: the modules a small verification does not need -------------------
# What other routes, kinds and formats need, imported where they are used (each with a
# route that does load it: test_each_lazy_module_is_loaded_by_the_route_that_needs_it):
# 10 modules and 13 frozen dataclasses fewer for a one-party problem (docs/benchmarks.md).
LAZY = ("dpverify.spec.count_model", "dpverify.spec.losses", "dpverify.theory.orbits",
        "dpverify.theory.exact_lp", "dpverify.theory.worst_ipm", "dpverify.theory.worst_polish",
        "dpverify.runner.exclude", "dpverify.runner.notes", "dpverify.console.views")
NOT_NEEDED = ("scipy", "flint", "cvxpy", "rich", "matplotlib", "pandas", "dask", "sqlite3",
              "multiprocessing", "dpverify.runner.batch", "dpverify.runner.store",
              "dpverify.runner.executors", "dpverify.cli.audit", "dpverify.cli.batch",
              "dpverify.cli.certify", "dpverify.spec.count_loader",
              "dpverify.spec.protocol_loader", "dpverify.checker.intervals",
              "dpverify.verifiers.multiparty.corner_lp", "dpverify.verifiers.multiparty.lps",
              "dpverify.verifiers.multiparty.settle", "dpverify.verifiers.multiparty.orbit",
              "dpverify.verifiers.multiparty.orbit_worst", "rich._emoji_codes",
              *LAZY)
MODULES = """
import json, sys
from click.testing import CliRunner
from dpverify.cli import main
result = CliRunner().invoke(main, json.loads(sys.argv[1]))
assert result.exit_code in (0, 1), (result.exit_code, result.output)
wanted = json.loads(sys.argv[2])
print(json.dumps(sorted(w for w in wanted if any(m == w or m.startswith(w + ".")
                                                 for m in sys.modules))))
"""


def loaded_of(args: list[str], wanted=NOT_NEEDED) -> list[str]:
    done = subprocess.run([sys.executable, "-c", MODULES, json.dumps(args), json.dumps(wanted)],
                          capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout)


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return str(path)


ONE = '[problem]\nparties = 1\nlambda = "3"\n[observer]\nfunction = "bit:1"\n'
THREE_AVERAGE = ('[problem]\nparties = 3\nlambda = "2"\naccuracy = "average"\n'
                 '[observer]\nfunction = "majority"\n')
THREE = THREE_AVERAGE.replace('accuracy = "average"\n', "")


@pytest.mark.parametrize("text", [ONE, THREE_AVERAGE, THREE],
                         ids=["one-party", "three-average", "three"])
def test_a_small_verification_loads_only_its_route(tmp_path, text):
    """`verify --json` of a one-party problem (and of three parties, both accuracies)
    proves its verdicts exactly (the exact certificate and the independent checker) by
    the route `proof` without the other routes' code (the corner LP, the orbit method:
    the planner names them lazily), scipy, python-flint (lambda is rational, and the
    worst case's one system of 6 entries is solved in Fractions: policy.
    FLINT_RREF_ENTRIES), rich (JSON output: the tables' control is
    test_a_real_command_does_import_them), the batch runner, the other commands, the other
    kinds' parsers or the interval checker."""
    assert loaded_of(["verify", write(tmp_path, "p", text), "--json"]) == []


WORST_ONLY = ("dpverify.verifiers.multiparty.hints", "dpverify.theory.certificates.worst",
              "dpverify.theory.certificates.repair", "dpverify.theory.worst_lp",
              "dpverify.theory.worst_channels", "dpverify.lp")


def test_an_average_case_loads_no_worst_case_code(tmp_path):
    """The average accuracy alone needs the memo of the routes (verifiers/multiparty/
    memo.py), not the worst case's hints, certificate, repair and LP (nor lp/: the average
    case's certificate is a closed form); the control, the same problem with both
    accuracies, loads them all (theory/certificates/__init__.py names the worst case's
    lazily, all_inputs.py imports them in the worst case's branch)."""
    assert loaded_of(["verify", write(tmp_path, "a", THREE_AVERAGE), "--json"], WORST_ONLY) == []
    assert loaded_of(["verify", write(tmp_path, "w", THREE), "--json"],
                     WORST_ONLY) == sorted(WORST_ONLY)


SYMMETRIC = ('[problem]\nparties = 12\nlambda = "2"\n'  # the orbit route (beyond 8 parties)
             '[observer]\nfunction = "majority"\n')


@pytest.mark.parametrize(("args", "needed"), [
    (["verify", "problems/count/abs-10.toml"], {"dpverify.spec.count_model",
                                                 "dpverify.spec.losses"}),
    (["verify", "SYMMETRIC"],
     {"dpverify.theory.orbits", "dpverify.theory.exact_lp", "dpverify.theory.worst_ipm",
      "dpverify.theory.worst_polish"}),
    (["verify", "problems/approximate/bit-1-delta.toml"], {"dpverify.theory.exact_lp"}),
    (["verify", "ONE", "--exclude", "*.tmp"], {"dpverify.runner.exclude"}),
    (["verify", "ONE", "--seed", "1"], {"dpverify.runner.notes"})],
    ids=["count", "orbits", "delta", "exclude", "notes"])
def test_each_lazy_module_is_loaded_by_the_route_that_needs_it(tmp_path, args, needed):
    """The negative control of test_a_small_verification_loads_only_its_route: each
    module of LAZY is imported by a run that uses it (a count problem its model and
    losses; the orbit route its space, exact simplex and dense method; delta > 0 the exact
    simplex; --exclude and a note their modules), so the probe sees one imported where it
    is needed, and would see it imported eagerly again."""
    files = {"ONE": write(tmp_path, "one", ONE), "SYMMETRIC": write(tmp_path, "sym", SYMMETRIC)}
    args = [files.get(a, a if not a.startswith("problems/") else str(ROOT / a)) for a in args]
    assert needed <= set(loaded_of([*args, "--json"], LAZY)), args


def test_the_table_loads_only_its_view(tmp_path):
    """`verify`'s table (rich) of a bits problem loads its view's module, not the views of
    delta > 0 or protocols (console/approximate.py, console/protocols.py); a delta problem's
    table loads its own (the control)."""
    views = ("dpverify.console.views", "dpverify.console.approximate",
             "dpverify.console.protocols")
    assert set(loaded_of(["verify", write(tmp_path, "one", ONE)], views)) == {views[0]}
    delta = str(ROOT / "problems" / "approximate" / "bit-1-delta.toml")
    assert set(loaded_of(["verify", delta], views)) == set(views[:2])


def test_the_table_prints_emoji_codes_as_written(tmp_path):
    """The tables' console has rich's emoji codes off (console/__init__.py make_console):
    a problem named `a:smile:b` prints as written, and rich's emoji table (7 ms) is not
    imported; the control, a rich console with emoji codes on, replaces the code."""
    from rich.console import Console

    path = write(tmp_path, "p", ONE.replace("[problem]", '[problem]\nname = "a:smile:b"'))
    done = subprocess.run([sys.executable, "-m", "dpverify", "verify", path],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "a:smile:b" in done.stdout, done.stdout
    assert "rich._emoji_codes" not in loaded_of(["verify", path], ("rich._emoji_codes",))
    control = Console(file=io.StringIO(), emoji=True, markup=False, highlight=False)
    control.print("a:smile:b")
    assert "a:smile:b" not in control.file.getvalue()


def test_the_planner_names_its_routes_without_importing_them():
    """Importing the planner imports none of the routes' code; asking a route whether it
    fits (the control) imports its module and no other route's."""
    routes = ["dpverify.verifiers.multiparty.all_inputs", "dpverify.verifiers.multiparty.orbit",
              "dpverify.verifiers.multiparty.corner_lp"]
    code = ("import json, sys\nfrom dpverify.verifiers.multiparty import planner\n"
            "seen = lambda: [r for r in json.loads(sys.argv[1]) if r in sys.modules]\n"
            "before = seen()\nplanner.PROOF.route\nprint(json.dumps([before, seen()]))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(routes)],
                          capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(done.stdout) == [[], routes[:1]]


def test_the_probe_sees_what_a_route_needs(tmp_path):
    """Negative controls: `--method lp` runs the corner LP's code (and settles by the
    certificate makers: settle.py); a worst case whose complementary-slackness systems are
    large (six parties, a function mod 3: systems of up to 870 entries) solves them with
    python-flint; an epsilon's e^eps is bracketed by arb balls in the checker, and `batch`
    runs the batch machinery; the probe reports them."""
    lp = loaded_of(["verify", write(tmp_path, "one", ONE), "--json", "--method", "lp"])
    assert {"dpverify.verifiers.multiparty.corner_lp",
            "dpverify.verifiers.multiparty.settle"} <= set(lp)
    assert "dpverify.verifiers.multiparty.orbit" not in lp
    large = loaded_of(["verify", str(ROOT / "problems" / "count-mod3-6.toml"), "--json"])
    assert "flint" in large
    eps = write(tmp_path, "eps", ONE.replace('lambda = "3"', "epsilon = 1"))
    assert "flint" in loaded_of(["verify", eps, "--json"])
    batch = loaded_of(["batch", write(tmp_path, "one", ONE), "--no-store", "--jobs", "1"])
    assert {"dpverify.runner.batch", "dpverify.cli.batch", "multiprocessing"} <= set(batch)


def test_every_command_s_module_is_in_the_lazy_table():
    """cli/app.py COMMANDS names each command's module (the commands are imported when
    used): importing every module of dpverify/cli registers exactly those commands, each
    from the module the table names."""
    import importlib
    import pkgutil

    import dpverify.cli
    from dpverify.cli.app import COMMANDS, main

    for info in pkgutil.iter_modules(dpverify.cli.__path__):
        importlib.import_module(f"dpverify.cli.{info.name}")
    assert sorted(main.commands) == sorted(COMMANDS)
    for name, command in main.commands.items():
        assert command.callback is not None
        assert command.callback.__module__ == f"dpverify.cli.{COMMANDS[name]}", name


# -- the end of a verification: at once, after atexit and the flush ----------------------
ENDING = r"""
import atexit, os, sys, threading
from pathlib import Path
marker = Path(sys.argv[2])
atexit.register(lambda: print("atexit ran", file=sys.stderr))


class TornDown:  # its __del__ runs when the interpreter tears __main__ down
    def __del__(self, write=os.write):
        write(2, b"torn down\n")


witness = TornDown()
if sys.argv[3] == "thread":  # a non-daemon thread that works on until the main thread ends
    threading.Thread(target=lambda: (threading.main_thread().join(),
                                     marker.write_text("done"))).start()
sys.argv = ["dpverify", "verify", sys.argv[1], "--json"]
from dpverify.cli import main
main(prog_name="dpverify")
"""


@pytest.mark.parametrize("mode", ["alone", "thread"])
def test_verify_ends_with_all_its_output_and_status(tmp_path, mode):
    """`verify` run as the program ends by os._exit (no module-by-module teardown) after
    the atexit functions and the flush: the JSON is complete, the atexit function ran, the
    status is the verdict's, and __main__ is not torn down; with a non-daemon thread alive
    it exits as usual (the control: the thread finishes, writing its marker file, and the
    teardown runs)."""
    problems = [write(tmp_path, f"p{i}", ONE.replace("[problem]", f'[problem]\nname = "p{i}"'))
                for i in range(30)]
    marker = tmp_path / "marker"
    done = subprocess.run([sys.executable, "-c", ENDING, str(tmp_path), str(marker), mode],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert len(results) == len(problems) and {r["verdict"] for r in results} == {"optimal"}
    assert "atexit ran" in done.stderr
    assert ("torn down" in done.stderr) == (mode == "thread")  # the teardown skipped alone
    assert marker.exists() == (mode == "thread")


def test_a_finding_keeps_its_status_at_the_quick_end():
    """The status of a gap (1) survives the quick end as a success's 0 does."""
    path = ROOT / "problems" / "count" / "parity-gap-6.toml"
    done = subprocess.run([sys.executable, "-m", "dpverify", "verify", str(path), "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert json.loads(done.stdout)[0]["verdict"] == "gap" and done.returncode == 1


# -- batch: how many workers by default --------------------------------------------------
@pytest.mark.parametrize(("cpus", "load", "tasks", "workers"), [
    (2, 0.0, 40, 2), (2, 0.4, 40, 2), (2, 0.6, 40, 1), (2, 3.6, 40, 1), (2, 0.0, 1, 1),
    (8, 2.2, 40, 6), (8, 0.0, 3, 3), (1, 0.0, 40, 1)])
def test_the_default_is_a_worker_per_idle_cpu(monkeypatch, cpus, load, tasks, workers):
    """runner/executors/base.py default_workers: one worker per idle CPU (the CPUs less
    the 1-minute load average, rounded), at most one per task, at least one: on the 2-core
    machine with a core busy a second worker made a batch slower (docs/benchmarks.md)."""
    import os

    from dpverify.runner.executors import base

    monkeypatch.setattr(base, "usable_cpus", lambda: cpus)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert base.default_workers(tasks) == workers


def test_a_batch_without_jobs_runs_on_the_default(tmp_path, monkeypatch):
    """The default reaches the pool: with the machine's load above its CPUs, one worker."""
    import os

    from dpverify.runner import run_batch
    from dpverify.verifiers.options import VerifyOptions

    for i in range(3):
        write(tmp_path, f"p{i}", ONE.replace("[problem]", f'[problem]\nname = "p{i}"'))
    monkeypatch.setattr(os, "getloadavg", lambda: (99.0, 99.0, 99.0))
    report = run_batch([tmp_path], VerifyOptions(), store=None)
    assert report.workers == 1 and len(report.items) == 3
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    from dpverify.runner.executors.base import usable_cpus

    assert run_batch([tmp_path], VerifyOptions(), store=None).workers == min(3, usable_cpus())


def test_a_survey_without_jobs_takes_the_batch_default(monkeypatch):
    """`survey` without --jobs leaves the choice to batch's default (one worker per idle
    CPU), as batch, check and sweep do; --jobs given is passed on (the control)."""
    import dpverify
    import dpverify.runner.batch as batch_runner

    seen = []

    def spy(files, options, *, jobs=None, **kwargs):
        seen.append(jobs)

    monkeypatch.setattr(batch_runner, "run_problems", spy)
    common = dict(alphabet=3, parties=1, epsilon="1", functions="random:1", save_dir=None)
    dpverify.survey(**common)
    dpverify.survey(**common, jobs=2)
    assert seen == [None, 2]


def test_a_profiled_verify_ends_as_usual_so_its_report_is_written(tmp_path):
    """Under cProfile (or a tracer, or -X importtime) the quick end (os._exit) would drop
    the report written at the interpreter's exit; there `verify` ends as usual and
    cProfile's file is written. The control: the same run unmeasured skips the teardown
    (test_verify_ends_with_all_its_output_and_status)."""
    prof = tmp_path / "verify.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof),
                           str(ROOT / "dpverify" / "__main__.py"), "verify",
                           str(ROOT / "problems" / "xor-2.toml"), "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["verdict"] == "optimal"
    assert prof.exists() and prof.stat().st_size > 0


GC_PROBE = """
import gc, sys
before = gc.get_threshold()
import dpverify.cli
print(before[0], gc.get_threshold()[0], gc.get_threshold()[1:] == before[1:])
"""


def test_the_command_line_raises_only_the_young_generation_s_threshold():
    from dpverify.cli import YOUNG_THRESHOLD

    out = subprocess.run([sys.executable, "-c", GC_PROBE], capture_output=True, text=True,
                         check=True).stdout.split()
    # control: a plain interpreter has the default threshold, below the command line's
    assert int(out[0]) < YOUNG_THRESHOLD
    assert out[1:] == [str(YOUNG_THRESHOLD), "True"]


def test_the_symmetric_worst_case_solves_its_game_without_scipy_optimize(tmp_path):
    """The orbit route's zero-information game is one small LP, solved by HiGHS through
    the run's solver: scipy.optimize (0.11 s to import) stays out of a symmetric worst
    case, while the dense method's scipy.linalg is loaded (the control: the probe sees
    scipy where it is used)."""
    lambdas = ", ".join(['"3"'] * 3 + ['"3/2"'] * 7 + ['"5/4"'] * 2)
    path = write(tmp_path, "sym", f'[problem]\nparties = 12\nlambda = [{lambdas}]\n'
                 'accuracy = "worst"\n[observer]\nfunction = "majority"\n')
    loaded = loaded_of(["verify", path, "--json"], ["scipy.optimize", "scipy.linalg"])
    assert loaded == ["scipy.linalg"]
