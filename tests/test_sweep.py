"""Sweeps (`dpverify sweep`, `dpverify.sweep`): ranges, points, refusals, rows, plots,
and `dpverify results` with its new columns and --plot."""

from __future__ import annotations

import concurrent.futures as cf
import csv
import io
import json
import math
import struct
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

import dpverify
from dpverify import Problem
from dpverify.cli import main
from dpverify.errors import OptionError, SpecError
from dpverify.reasons import ReasonCode
from dpverify.runner.executors.local import Executor, LocalPool, Task, error_result, run_task
from dpverify.runner.store import TIMEOUT
from dpverify.sweeps.axes import Variable, parse_levels, parse_parties
from dpverify.sweeps.points import plan_points
from dpverify.sweeps.reference import small_epsilon_expansion, xor_closed_form
from dpverify.sweeps.run import run_sweep
from dpverify.verifiers.options import VerifyOptions

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def without_seconds(obj):
    if isinstance(obj, dict):
        return {k: without_seconds(v) for k, v in obj.items() if k not in ("seconds", "source")}
    if isinstance(obj, list):
        return [without_seconds(v) for v in obj]
    return obj


# -- ranges ---------------------------------------------------------------------------------
def test_a_range_gives_the_decimals_written_not_float_steps():
    axis = parse_levels("0.1:4:40", Variable.EPSILON)
    assert len(axis.values) == 40 and axis.values[0] == 0.1 and axis.values[-1] == 4.0
    assert axis.values[2] == 0.3  # 0.1 + 2 * 0.1 computed exactly, not 0.30000000000000004
    exact = parse_levels("1/20:19/20:19", Variable.ALPHA)
    assert exact.values[0] == "1/20" and exact.values[9] == "1/2" and len(exact.values) == 19
    assert parse_levels("0.5, 1,2", Variable.EPSILON).values == (0.5, 1.0, 2.0)
    assert parse_levels([0.5, Fraction(3, 2)], Variable.LAMBDA).values == (0.5, "3/2")
    assert parse_parties("2:5").values == (2, 3, 4, 5)
    assert parse_parties("2,4,8").values == (2, 4, 8) == parse_parties([2, 4, 8]).values
    assert parse_parties(range(2, 9, 2)).values == (2, 4, 6, 8)


@pytest.mark.parametrize(("spec", "message"), [
    ("0.1:4", "start:stop:count"), ("0.1:4:0", "integer >= 1"), ("a,b", "not a number"),
    ("0:1:100000", "at most 10,000"), (",", "no values")])
def test_bad_ranges_are_refused_in_one_line(spec, message):
    with pytest.raises(OptionError, match=message):
        parse_levels(spec, Variable.EPSILON)


@pytest.mark.parametrize("spec", ["2:12:2", "0", "x", "5:2"])
def test_bad_parties_are_refused(spec):
    with pytest.raises(OptionError, match="--parties"):
        parse_parties(spec)


# -- points ---------------------------------------------------------------------------------
def test_points_replace_the_level_and_the_parties_and_drop_expect():
    problem = dpverify.load(PROBLEMS / "xor-4.toml")
    points = plan_points(problem, level=parse_levels("0.5,2", Variable.EPSILON),
                         parties=parse_parties("2:3"))
    assert [p.coords for p in points] == [
        {"parties": 2, "epsilon": 0.5}, {"parties": 2, "epsilon": 2.0},
        {"parties": 3, "epsilon": 0.5}, {"parties": 3, "epsilon": 2.0}]
    assert points[1].source.endswith("xor-4.toml@parties=2,epsilon=2.0")
    spec = points[3].problem.spec
    assert spec.parties == 3 and spec.epsilons_exact == (Fraction(2),) * 3
    assert spec.expect == () and points[0].problem.name == "xor-4"


@pytest.mark.parametrize(("source", "kwargs", "message"), [
    ("table-matrix-3.toml", {"parties": "2:4"}, "`observer.function` is a table"),
    ("parties-and-observer-4.toml", {"parties": "2:6"}, "party 4 exists only for parties >= 4"),
    ("threshold-4.toml", {"parties": "1:4"}, "'threshold:2' is defined for parties >= 2"),
    ("heterogeneous-eps.toml", {"parties": "2:4"}, "names x3, so it is defined for parties"),
    ("count/abs-10.toml", {"parties": "2:4"}, "--parties applies to multi-party problems"),
    ("count/abs-10.toml", {"lambda_": "2,3"}, "--lambda applies to multi-party problems"),
    ("xor-2.toml", {"alpha": "0.5"}, "--alpha applies to count problems"),
    ("xor-2.toml", {}, "nothing to sweep"),
])
def test_axes_that_do_not_apply_are_refused_before_anything_runs(source, kwargs, message):
    problem = dpverify.load(PROBLEMS / source)
    level = None
    for name, variable in (("epsilon", Variable.EPSILON), ("lambda_", Variable.LAMBDA),
                           ("alpha", Variable.ALPHA)):
        if name in kwargs:
            level = parse_levels(kwargs[name], variable)
    parties = parse_parties(kwargs["parties"]) if "parties" in kwargs else None
    with pytest.raises(OptionError, match=message) as caught:
        plan_points(problem, level=level, parties=parties)
    assert "\n" not in str(caught.value)


def test_a_point_that_is_not_a_valid_problem_names_itself():
    problem = dpverify.load(PROBLEMS / "xor-2.toml")
    with pytest.raises(SpecError, match=r"xor-2.toml@epsilon=-1.0: `problem.epsilon` = -1.0"):
        plan_points(problem, level=parse_levels("-1,1", Variable.EPSILON))
    different = dpverify.load(PROBLEMS / "heterogeneous-eps.toml")
    fine = Problem.multiparty(parties=3, epsilon=[0.5, 1, 2], observer="xor")
    with pytest.raises(SpecError, match="one epsilon per party"):
        plan_points(fine, parties=parse_parties("3:4"))
    assert plan_points(different, level=parse_levels("1", Variable.EPSILON))


def test_the_closed_form_and_its_expansion():
    assert xor_closed_form(6, lam=Fraction(3)) == 0.5078125  # problems/xor-6.toml
    for k in (1, 2, 5):  # the binomial sum of Corollary 3.1
        lam = math.e
        direct = sum(math.comb(k, 2 * i) * lam ** (k - 2 * i)
                     for i in range(k // 2 + 1)) / (1 + lam) ** k
        assert xor_closed_form(k, epsilon=1.0) == pytest.approx(direct, rel=1e-14)
    eps = 1e-3
    assert small_epsilon_expansion(3, eps) == pytest.approx(xor_closed_form(3, epsilon=eps),
                                                            abs=1e-12)


# -- running --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pool():
    with LocalPool(2) as executor:
        yield executor


@pytest.fixture(scope="module")
def xor_sweep(pool):
    problem = dpverify.load(PROBLEMS / "xor-4.toml")
    return run_sweep(problem, VerifyOptions(), level=parse_levels("0.5:2:4", Variable.EPSILON),
                     parties=parse_parties("2,3"), executor=pool)


def test_a_sweeps_points_equal_individual_verify_runs(tmp_path):
    problem = dpverify.load(PROBLEMS / "majority-5.toml")
    store = tmp_path / "store.sqlite"
    sweep = dpverify.sweep(problem, epsilon="0.5,1.5", parties="3,5", jobs=2, store=store)
    assert [p.coords for p in sweep.points] == [
        {"parties": k, "epsilon": e} for k in (3, 5) for e in (0.5, 1.5)]
    for point in sweep.points:
        alone = dpverify.verify(problem.replace(epsilon=point.coords["epsilon"],
                                                parties=point.coords["parties"]))
        assert without_seconds(point.to_dict()) == without_seconds(
            json.loads(json.dumps(alone.to_dict())))
        assert point.source == f"{problem.source}@parties={point.coords['parties']}," \
                               f"epsilon={point.coords['epsilon']}"
    # the store holds every point: a second run computes none of them, and says the same
    again = dpverify.sweep(problem, epsilon="0.5,1.5", parties="3,5", jobs=2, store=store)
    assert again.skipped == 4 and all(p.cached for p in again.points)
    assert without_seconds(again.rows()) == without_seconds(sweep.rows())
    assert sweep.verdict == "optimal" and sweep.exit_status() == 0


def test_rows_carry_the_level_the_bound_rr_the_closed_form_the_verdict_and_the_method(
        xor_sweep):
    rows = xor_sweep.rows()
    assert len(rows) == 8 * 2  # points x (observer average, worst)
    for row in rows:
        assert row["agent"] == "observer" and row["verdict"] == "optimal" and row["method"]
        expected = xor_closed_form(row["parties"], epsilon=row["epsilon"])
        assert row["closed_form"] == pytest.approx(expected, abs=1e-15)
        assert row["relaxed_optimum"] == pytest.approx(expected, abs=1e-9)
        assert row["rr_value"] == pytest.approx(expected, abs=1e-9)
        assert row["lambda"] == pytest.approx(math.exp(row["epsilon"]), rel=1e-15)
    parsed = list(csv.DictReader(io.StringIO(xor_sweep.to_csv())))
    assert list(parsed[0]) == list(xor_sweep.columns)
    assert [float(r["relaxed_optimum"]) for r in parsed] == [r["relaxed_optimum"]
                                                               for r in rows]
    assert xor_sweep.to_dict()["rows"][0]["epsilon"] == 0.5


def test_the_points_plotted_are_the_rows_of_the_csv(xor_sweep):
    pytest.importorskip("matplotlib")
    figure = xor_sweep.plot()
    parsed = list(csv.DictReader(io.StringIO(xor_sweep.to_csv())))
    lines = {line.get_gid(): line for ax in figure.axes for line in ax.lines if line.get_gid()}
    checked = 0
    # XOR's average and worst case are the same values (Corollary 3.1 for both): one
    # panel, drawn once, named after both; its lines are the rows of either accuracy
    assert not any("|worst|" in gid for gid in lines)
    (panel,) = [ax for ax in figure.axes if (ax.get_gid() or "").startswith("panel|")]
    assert panel.get_title().endswith("observer · average = worst accuracy")
    for kind, column in (("bound", "relaxed_optimum"), ("rr", "rr_value"),
                         ("closed_form", "closed_form")):
        for accuracy in ("average", "worst"):
            for k in ("2", "3"):
                line = lines[f"{kind}|observer|average|{k}"]
                chosen = [r for r in parsed if r["accuracy"] == accuracy and r["parties"] == k]
                assert list(line.get_xdata()) == [float(r["epsilon"]) for r in chosen]
                assert list(line.get_ydata()) == pytest.approx(
                    [float(r[column]) for r in chosen], abs=1e-9)
                checked += 1
    assert checked == 12
    assert "expansion|observer|average|2" in lines  # the small-epsilon expansion, dashed
    assert lines["expansion|observer|average|2"].get_linestyle() == "--"
    markers = [c for ax in figure.axes for c in ax.collections
               if (c.get_gid() or "").endswith("|optimal")]
    assert sum(len(c.get_offsets()) for c in markers) == len(parsed) // 2
    by_lambda = xor_sweep.plot(x="lambda")  # another column on the x axis
    line = next(line for ax in by_lambda.axes for line in ax.lines
                if line.get_gid() == "bound|observer|average|3")
    assert list(line.get_xdata()) == [float(r["lambda"]) for r in parsed
                                      if r["accuracy"] == "worst" and r["parties"] == "3"]
    with pytest.raises(dpverify.InputError, match="draw against one of"):
        xor_sweep.plot(x="parties")  # parties is the series here


def test_a_count_sweep_plots_the_gap(pool, tmp_path):
    pytest.importorskip("matplotlib")
    problem = dpverify.load(PROBLEMS / "count" / "parity-gap-6.toml")
    sweep = run_sweep(problem, VerifyOptions(), level=parse_levels("1/4,1/2,3/4",
                                                                   Variable.ALPHA),
                      executor=pool)
    rows = sweep.rows()
    assert [r["alpha"] for r in rows] == [0.25, 0.5, 0.75]
    assert [r["epsilon"] for r in rows] == pytest.approx([math.log(4), math.log(2),
                                                          math.log(4 / 3)])
    assert all(r["verdict"] == "gap" and r["gap"] > 0 for r in rows)
    assert rows[1]["mechanism_optimum"] == pytest.approx(1 / 3)  # the shipped value
    figure = sweep.plot(tmp_path / "gap.pdf")
    gaps = [line for ax in figure.axes for line in ax.lines
            if line.get_gid() == "gap|consumer|minimax|"]
    assert list(gaps[0].get_ydata()) == [r["gap"] for r in rows]
    assert (tmp_path / "gap.pdf").read_bytes().startswith(b"%PDF-")
    assert sweep.exit_status() == 1


# -- the command line --------------------------------------------------------------------------
def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_cli_sweep_writes_csv_and_a_png_and_results_shows_the_columns(tmp_path):
    pytest.importorskip("matplotlib")
    store, png = tmp_path / "s.sqlite", tmp_path / "xor.png"
    done = invoke("sweep", str(PROBLEMS / "xor-2.toml"), "--epsilon", "0.5:2:4", "--csv",
                  "--plot", str(png), "--jobs", "2", "--store", str(store))
    assert done.exit_code == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) == 4 * 2 and {r["verdict"] for r in rows} == {"optimal"}
    assert [r["epsilon"] for r in rows[::2]] == ["0.5", "1.0", "1.5", "2.0"]
    assert all(r["parties"] == "2" and r["method"] and r["closed_form"] for r in rows)
    assert f"wrote {png}" in done.stderr
    data = png.read_bytes()
    width, height = png_size(data)
    assert len(data) > 20_000 and width >= 800 and height >= 500

    table = invoke("results", "--store", str(store), "--format", "csv")
    stored = list(csv.DictReader(io.StringIO(table.stdout)))
    assert len(stored) == 8
    assert {"epsilon", "lambda", "parties", "method"} <= set(stored[0])
    assert sorted({r["epsilon"] for r in stored}) == ["0.5", "1.0", "1.5", "2.0"]
    objects = json.loads(invoke("results", "--store", str(store), "--json").stdout)
    assert all(o["epsilons"] == [o["epsilons"][0]] * 2 for o in objects)
    plotted = invoke("results", "--store", str(store), "--plot", str(tmp_path / "r.png"))
    assert plotted.exit_code == 0 and png_size((tmp_path / "r.png").read_bytes())
    assert "4 stored results of xor-2" in plotted.stdout


    # the same points again, as JSON rows: read from the store, nothing recomputed
    again = invoke("sweep", str(PROBLEMS / "xor-2.toml"), "--epsilon", "1,2", "--json",
                   "--store", str(store))
    objects = json.loads(again.stdout)
    assert again.exit_code == 0 and "2 from the store" in again.stderr
    assert [(o["epsilon"], o["accuracy"]) for o in objects] == [
        (1.0, "average"), (1.0, "worst"), (2.0, "average"), (2.0, "worst")]
    assert [o["relaxed_optimum"] for o in objects] == [float(r["relaxed_optimum"])
                                                       for r in rows[2:4] + rows[6:8]]


def test_cli_sweep_refusals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a refused sweep must not leave a store in the checkout
    refused = invoke("sweep", str(PROBLEMS / "table-matrix-3.toml"), "--parties", "2:4")
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1
    assert "is a table" in refused.stderr
    both = invoke("sweep", str(PROBLEMS / "xor-2.toml"), "--epsilon", "1", "--csv", "--json")
    assert both.exit_code == 2
    suffix = invoke("sweep", str(PROBLEMS / "xor-2.toml"), "--epsilon", "1", "--plot", "x.gif")
    assert suffix.exit_code == 2 and ".png, .svg or .pdf" in suffix.stderr
    lam = plan_points(dpverify.load(PROBLEMS / "bit-1.toml"),
                      level=parse_levels("2,3/2", Variable.LAMBDA))
    assert [p.problem.spec.lambdas_exact for p in lam] == [(Fraction(2),), (Fraction(3, 2),)]


def test_without_matplotlib_the_message_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    done = invoke("sweep", str(PROBLEMS / "xor-2.toml"), "--epsilon", "1", "--plot", "x.png")
    assert done.exit_code == 2
    assert done.stderr.strip() == ("dpverify: plotting needs matplotlib, an optional extra: "
                                   ".venv/bin/pip install -e '.[plot]'")
    from dpverify.plotting import require_matplotlib

    with pytest.raises(dpverify.InputError, match=r"-e '\.\[plot\]'"):
        require_matplotlib()


# -- points that errored, on the plot (issue 17, B8) ----------------------------------------------
class FailingPoints(Executor):
    """Runs each task in this process; the tasks named in `fail` come back as timeouts (as
    the executor loop reports them), the others verified."""

    name = "inline"

    def __init__(self, fail) -> None:
        self.fail = set(fail)

    def _submit(self, task: Task):
        fut: cf.Future = cf.Future()
        if task.id in self.fail:
            fut.set_result({"status": TIMEOUT,
                            "result": error_result(task.source, "timeout",
                                                   code=ReasonCode.TIMEOUT),
                            "values": [], "expect": [], "seconds": 0.01, "worker": "test"})
        else:
            fut.set_result(run_task(task))
        return fut, None

    def _kill(self, late, flights):
        return []


def error_markers(ax):
    return [c for c in ax.collections if (c.get_gid() or "").endswith("|error|no-value")]


def test_a_sweep_whose_first_point_errored_plots_with_error_markers(tmp_path):
    """`sweep problems/xor-6.toml --epsilon 0.5,1,2 --plot` with the first point timed out:
    the rows keep the point's place, the figure marks it with a triangle on each panel,
    inside the axes, and the curves join the points that have values."""
    pytest.importorskip("matplotlib")
    problem = dpverify.load(PROBLEMS / "xor-6.toml")
    sweep = run_sweep(problem, VerifyOptions(), level=parse_levels("0.5,1,2", Variable.EPSILON),
                      executor=FailingPoints({0}))
    assert [p.category for p in sweep.points] == ["error", "optimal", "optimal"]
    first = sweep.rows()[0]
    assert first["verdict"] == "error" and first["reason"] == "timeout"
    assert first["problem"] == "xor-6" and first["kind"] == "multiparty"
    assert first["parties"] == 6 and first["lambda"] == pytest.approx(math.exp(0.5))
    figure = sweep.plot(tmp_path / "t.png")  # KeyError: 'parties' before
    panels = [ax for ax in figure.axes if (ax.get_gid() or "").startswith("panel|")]
    assert len(panels) == 1  # the average and the worst case agree: drawn once
    for ax in panels:
        (errors,) = error_markers(ax)
        assert [x for x, _ in errors.get_offsets()] == [0.5]  # the errored point's epsilon
        assert errors.get_facecolor()[0][:3] == pytest.approx((1.0, 0x7f / 255, 0x0e / 255))
        assert ax.get_xlim()[0] < 0.5 < ax.get_xlim()[1]  # on its own panel, in view
        optimal = [c for c in ax.collections if (c.get_gid() or "").endswith("|optimal")]
        assert sum(len(c.get_offsets()) for c in optimal) == 2
        bound = next(line for line in ax.lines if (line.get_gid() or "").startswith("bound|"))
        assert list(bound.get_xdata()) == [1.0, 2.0]  # a line, not two lone points
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert "verdict: error" in legend
    assert (tmp_path / "t.png").read_bytes().startswith(PNG_SIGNATURE)


def test_a_sweep_whose_points_all_errored_still_marks_them():
    pytest.importorskip("matplotlib")
    problem = dpverify.load(PROBLEMS / "xor-2.toml")
    sweep = run_sweep(problem, VerifyOptions(), level=parse_levels("0.5,1,2", Variable.EPSILON),
                      executor=FailingPoints({0, 1, 2}))
    figure = sweep.plot()
    (ax,) = [ax for ax in figure.axes if (ax.get_gid() or "").startswith("panel|")]
    assert ax.get_title() == "xor-2: no point has results"
    (errors,) = error_markers(ax)
    assert [x for x, _ in errors.get_offsets()] == [0.5, 1.0, 2.0]
    assert sweep.exit_status() == 3


def test_results_plot_prints_only_where_the_figure_went(tmp_path):
    pytest.importorskip("matplotlib")
    store, png = tmp_path / "s.sqlite", tmp_path / "r.png"
    dpverify.sweep(PROBLEMS / "xor-2.toml", epsilon="0.5,1", jobs=1, store=store)
    done = invoke("results", "--store", str(store), "--plot", str(png))
    assert done.exit_code == 0, done.stderr
    assert done.stdout == f"wrote {png} (2 stored results of xor-2)\n"
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    table = invoke("results", "--store", str(store), "--plot", str(png), "--format", "table")
    assert "2 stored results\n" in table.stdout and table.stdout.endswith(
        f"wrote {png} (2 stored results of xor-2)\n")  # the rows when asked for
    as_json = invoke("results", "--store", str(store), "--plot", str(png), "--json")
    assert len(json.loads(as_json.stdout)) == 2 and f"wrote {png}" in as_json.stderr
