"""The solving context and the run's deadline (verifiers/solving.py, dpverify/clock.py;
issue 24 point 3, issue 25 point 3): one solve callable with one time policy, every LP
within the run's time, exact loops stopped at the deadline, `--timeout` on every command
that runs a computation, and the options made from one description."""

from __future__ import annotations

import json
import math
import time
import typing

import numpy as np
import pytest
from click.testing import CliRunner

from dpverify import clock
from dpverify.cli import every_command, main
from dpverify.errors import OptionError
from dpverify.lp import LpSolution, LpStatus
from dpverify.lp.builder import LpBuilder
from dpverify.lp.solve import solve as highs
from dpverify.policy import FLOAT_LP_SECONDS
from dpverify.spec import loads
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import (
    Key,
    VerifyOptions,
    described_options,
    make_options,
)
from dpverify.verifiers.solving import Solver

XOR4 = '[problem]\nname = "x"\nparties = 4\nepsilon = 1.0\n[observer]\nfunction = "xor"\n'


def tiny_lp():
    b = LpBuilder()
    x = b.add_cols(2, cost=np.array([1.0, 2.0]))
    rows = b.add_rows(1, 1.0, 1.0)
    b.add(rows, x, 1.0)
    return b.build(maximize=True, name="tiny")


def spy(calls: list):
    def engine(lp, backend="highs", **kw):
        calls.append((lp.name, kw))
        return highs(lp, backend, **kw)

    return engine


# -- the time policy ---------------------------------------------------------------------------
def test_an_lp_gets_the_time_left_in_the_run():
    calls: list = []
    solver = VerifyOptions(solve_with=spy(calls)).solver()
    assert solver(tiny_lp()).objective == pytest.approx(2.0)
    assert calls[-1][1]["time_limit"] is None  # no run deadline, no policy cap
    with clock.within(30.0):
        solver(tiny_lp())
    assert 0 < calls[-1][1]["time_limit"] <= 30.0
    with clock.within(30.0):  # the corner LP's cap is below the time left
        solver.settled_exactly()(tiny_lp())
    assert calls[-1][1]["time_limit"] == FLOAT_LP_SECONDS
    with clock.within(5.0):  # the time left is below the cap
        solver.settled_exactly()(tiny_lp())
    assert calls[-1][1]["time_limit"] <= 5.0
    capped = VerifyOptions(solve_with=spy(calls), time_limit=7.0, threads=1).solver()
    capped.tight(1e-10)(tiny_lp())
    assert calls[-1][1] == {"time_limit": 7.0, "threads": 1, "feasibility_tol": 1e-10}


def test_past_the_deadline_an_lp_raises_timed_out_not_a_status():
    calls: list = []
    solver = VerifyOptions(solve_with=spy(calls)).solver()
    with clock.within(1e-3):
        time.sleep(0.01)
        with pytest.raises(clock.TimedOut):
            solver(tiny_lp())
    assert calls == []  # never started

    def out_of_time(lp, backend="highs", **kw):
        return LpSolution(LpStatus.TIME_LIMIT, math.nan, np.zeros(0), np.zeros(0), 0.0,
                          backend, "time limit")

    late = Solver(engine=out_of_time)
    assert late(tiny_lp()).status is LpStatus.TIME_LIMIT  # its own limit: a status

    def slow_out_of_time(lp, backend="highs", **kw):
        time.sleep(0.1)  # the run's end passes during the solve
        return out_of_time(lp, backend, **kw)

    late = Solver(engine=slow_out_of_time)
    with clock.within(0.05), pytest.raises(clock.TimedOut):  # started in time, ends late
        late(tiny_lp())


def test_the_exact_simplex_stops_at_the_deadline():
    """Control: the same LP solves without a deadline; with an expired one the pivot loop
    raises TimedOut."""
    from dpverify.theory.exact_lp import simplex_from_basis

    rows, rhs, cost = [[1, 1, 1]], [1], [1, 2, 3]
    assert simplex_from_basis(rows, rhs, cost, [0]).value == 3
    with clock.within(1e-3):
        time.sleep(0.01)
        with pytest.raises(clock.TimedOut):
            simplex_from_basis(rows, rhs, cost, [0])


def test_nested_runs_keep_the_earlier_end():
    with clock.within(100.0) as outer:
        with clock.within(1000.0) as inner:
            assert inner == outer
        with clock.within(1.0) as shorter:
            assert shorter.end < outer.end
    assert clock.current().end is None


def test_the_deadline_reaches_every_lp_of_a_verification():
    """`verify_source` within a timeout: every LP of the run (the corner LP's and the
    certificates') gets at most the time left."""
    from dpverify.runner.files import verify_source

    calls: list = []
    options = VerifyOptions(method="lp", solve_with=spy(calls), tol=1e-14)
    outcome = verify_source(XOR4, "x.toml", options, timeout=60.0)
    assert outcome.status.value == "done" and calls
    assert all(kw["time_limit"] is not None and kw["time_limit"] <= 60.0 for _, kw in calls)


def test_a_batch_task_past_its_deadline_is_a_timeout():
    """The worker's own deadline: status `timeout`, reason `timeout`, as when the runner
    stops the worker; a control with time enough is `done`."""
    from dpverify.runner.worker import Task, run_task

    slow = Task(0, "x.toml", XOR4, VerifyOptions(), timeout=1e-4)
    payload = run_task(slow)
    assert payload["status"] == "timeout" and payload["result"]["reason_code"] == "timeout"
    assert run_task(Task(0, "x.toml", XOR4, VerifyOptions(), timeout=60))["status"] == "done"


# -- --timeout on every command -----------------------------------------------------------------
@pytest.fixture
def xor_file(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(XOR4, encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["verify", "audit-protocol", "certify", "derive",
                                     "falsify", "verify-count"])
def test_every_command_takes_a_timeout_and_says_it_ran_out(command, xor_file, tmp_path):
    """A run past --timeout is undecided (exit 3) and names the limit and the option; the
    same command with time enough succeeds (the control)."""
    protocol = tmp_path / "p.toml"
    protocol.write_text('[problem]\nkind = "protocol"\nparties = 1\nlambda = "3"\n'
                        '[[round]]\nparty = 1\nmessages = 2\nkernel = [["3/4", "1/4"], '
                        '["1/4", "3/4"]]\n[observer]\nfunction = "xor"\n', encoding="utf-8")
    mechanism = tmp_path / "m.toml"
    mechanism.write_text('[mechanism]\nalpha = "1/2"\nmatrix = [["2/3", "1/3"], '
                         '["1/3", "2/3"]]\n', encoding="utf-8")
    count = tmp_path / "count.toml"
    count.write_text('[problem]\nkind = "count"\nn = 30\nepsilon = 0.2\n[consumer]\n'
                     'loss = "abs"\n', encoding="utf-8")
    args = {"verify": ["verify", str(xor_file)],
            "audit-protocol": ["audit", str(protocol)],
            "certify": ["certify", str(xor_file), "-o", str(tmp_path / "c")],
            "derive": ["derive", str(mechanism)],
            "falsify": ["falsify", str(xor_file), "--protocols", "3", "--climb", "2",
                        "--counterexamples", str(tmp_path)],
            "verify-count": ["verify", str(count)]}[command]
    ok = CliRunner().invoke(main, [*args, "--timeout", "600"])
    assert ok.exit_code in (0, 1), ok.output
    late = CliRunner().invoke(main, [*args, "--timeout", "1e-6"])
    assert late.exit_code == 3, late.output
    assert "timeout" in late.output and "--timeout" in late.output


def test_a_survey_takes_a_timeout_per_instance(tmp_path):
    """Every instance past --timeout is `error`, reason `timeout` naming the option (exit
    3); the control with time enough decides them all."""
    args = ["survey", "--alphabet", "3", "--parties", "2", "--epsilon", "1", "--functions",
            "random:2", "--no-store", "--save", str(tmp_path), "-j", "1", "--json"]
    ok = CliRunner().invoke(main, [*args, "--timeout", "600"])
    assert ok.exit_code in (0, 1), ok.output
    late = CliRunner().invoke(main, [*args, "--timeout", "1e-6"])
    assert late.exit_code == 3, late.output
    assert "--timeout" in late.stdout


LONG_RUNNING = {"verify", "certify", "audit", "check-cert", "derive", "batch", "check",
                "sweep", "survey", "falsify"}


def test_every_command_that_can_run_long_has_the_one_timeout_option():
    """--timeout is made from one description (verifiers/options.py, TIMEOUT): the same
    default, type and check everywhere; the commands without it run bounded by their sizes
    (release, new, examples, results, figures)."""
    import click

    from dpverify.verifiers.options import RUN_LIMITS

    option, default = RUN_LIMITS["timeout"]
    having = set()
    for command in every_command().values():  # every module imported (lazy commands)
        for param in command.params:
            if isinstance(param, click.Option) and param.name == "timeout":
                having.add(command.name)
                assert param.default == default == 600.0, command.name
                assert param.help.endswith("0: no limit."), command.name
                assert param.opts == [option.flag]
    assert having == LONG_RUNNING
    bad = CliRunner().invoke(main, ["survey", "--alphabet", "3", "--parties", "2", "--epsilon",
                                    "1", "--timeout", "-1"])
    assert bad.exit_code == 2 and "must be a finite number >= 0" in bad.output


def test_check_cert_takes_a_timeout(xor_file, tmp_path):
    certify = CliRunner().invoke(main, ["certify", str(xor_file), "-o", str(tmp_path)])
    assert certify.exit_code == 0, certify.output
    certs = sorted(str(p) for p in tmp_path.glob("*.cert.json"))
    ok = CliRunner().invoke(main, ["check-cert", str(xor_file), *certs, "--json"])
    assert ok.exit_code == 0 and all(c["ok"] for c in json.loads(ok.stdout))
    late = CliRunner().invoke(main, ["check-cert", str(xor_file), *certs, "--json",
                                     "--timeout", "1e-6"])
    assert late.exit_code == 3, late.output
    assert all("--timeout" in c["message"] for c in json.loads(late.stdout))


# -- the options, described once ----------------------------------------------------------------
def test_options_validate_when_built_and_enums_are_typed():
    from dpverify.defaults import Backend, LpForm, Method

    options = VerifyOptions(method="lp", form="dense", backend="cvxpy")
    assert options.method is Method.LP and options.form is LpForm.DENSE
    assert options.backend is Backend.CVXPY
    for bad in ({"method": "simplex"}, {"tol": -1.0}, {"grid": 1}, {"max_nonzeros": 0},
                {"certify": "yes"}, {"backend": "gurobi"}, {"tol": math.inf}):
        with pytest.raises(OptionError):
            VerifyOptions(**bad)
    with pytest.raises(OptionError, match="unknown option 'lp_shape'"):
        make_options(lp_shape="dense")
    assert make_options(lp_form="chain").form is LpForm.CHAIN


def test_the_store_key_is_what_it_was():
    """The key of results stored before the options were described once is unchanged
    (so a store keeps serving them): three option sets, keys written out by hand."""
    from dpverify.runner.store import options_key

    assert options_key(VerifyOptions().key()) == (
        '{"backend":"highs","certify":false,"form":"auto","grid":0,"max_nonzeros":70000,'
        '"max_orbit_work":50000000,"method":"auto","samples":0,"seed":0,"tol":1e-09}')
    assert options_key(VerifyOptions(method="lp", form="dense", backend="cvxpy").key()) == (
        '{"backend":"cvxpy","certify":false,"form":"dense","grid":0,"max_nonzeros":70000,'
        '"max_orbit_work":50000000,"method":"lp","samples":0,"seed":0,"tol":1e-09}')
    many = VerifyOptions(restarts=3, witness_dir="w", cross_check=True, grid=3, samples=2,
                         seed=1, certify=True, tol=1e-6, max_nonzeros=5, max_orbit_work=7,
                         threads=2, time_limit=3.0, solve_with=highs)
    assert options_key(many.key()) == (
        '{"backend":"highs","certify":true,"cross_check":true,"form":"auto","grid":3,'
        '"max_nonzeros":5,"max_orbit_work":7,"method":"auto","restarts":3,"samples":2,'
        '"seed":1,"tol":1e-06,"witness_dir":"w"}')


def test_the_click_options_are_made_from_the_descriptions():
    """Every command's flag of a described option has its help, default and type from
    the description; a control: a changed help would show."""
    import click

    described = described_options()
    seen = set()
    # the commands that verify take the verifiers' options; `falsify` and `survey` take
    # --tol only (their --seed seeds their own searches, `derive --tol` compares floats)
    verifying = {"verify", "batch", "check", "sweep", "certify", "audit"}
    for command in every_command().values():
        for param in command.params:
            if not isinstance(param, click.Option) or param.name not in described:
                continue
            if command.name not in verifying and not (
                    command.name in ("falsify", "survey") and param.name == "tol"):
                continue
            option, default = described[param.name]
            if option.flag not in param.opts:
                continue
            seen.add(param.name)
            assert param.help.startswith(option.help), (command.name, param.name)
            if option.values.value == "path":
                assert param.default is None
            elif option.values.value == "flag":
                assert param.is_flag and not default
            else:
                assert param.default == default, (command.name, param.name)
            if option.values.value == "choice":
                assert tuple(param.type.choices) == option.choices
    assert seen == {name for name, (o, _) in described.items() if o.flag is not None}


def test_the_apis_keyword_types_match_the_descriptions():
    from dpverify.api import VerifyKwargs

    hints = typing.get_type_hints(VerifyKwargs)
    described = described_options()
    assert set(hints) == set(described)
    plain = {"number": float, "count": int, "flag": bool, "path": str}
    for name, (option, _) in described.items():
        expected = plain.get(option.values.value)
        hint = hints[name]
        if option.values.value == "choice":
            assert set(typing.get_args(hint)) == set(option.choices), name
        elif option.optional:
            assert set(typing.get_args(hint)) == {expected, type(None)}, name
        else:
            assert hint is expected, name
    assert {n for n, (o, _) in described.items() if o.key is Key.NEVER} == {
        "threads", "time_limit"}


def test_a_fake_solver_is_injected_not_patched():
    """The options carry the backend as a function for tests: every LP of a run goes
    through it (the control: without it, HiGHS)."""
    calls: list = []
    result = verify_spec(loads(XOR4), VerifyOptions(method="lp", solve_with=spy(calls)))
    assert result.verdict.value == "optimal" and {name for name, _ in calls} >= {
        "relaxed-average", "relaxed-worst"}
    before = len(calls)
    verify_spec(loads(XOR4), VerifyOptions(method="lp"))
    assert len(calls) == before
