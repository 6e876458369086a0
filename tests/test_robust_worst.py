"""The worst case robust at every size (issue 25, points 1 and 2): the cliffs measured beside
the benchmarks, each at a size the suite runs quickly (slower variants behind `slow`).

* the orbit LP's hints from the dense interior-point method (theory/worst_hints.py), its
  polish (theory/worst_polish.py) and its active rows: real bounds, recomputed here from
  the dense channel, against the exact optimum where it is known;
* parity in three classes at small epsilons (HiGHS spent more than 600 s on its orbit LP),
  exact lambdas on 81 orbits (the exact simplex took 72 s), extreme epsilons without
  symmetry (the float LP refused them: `error`; or the exact simplex took a minute): each
  decided, and the verdict unchanged when every gain is multiplied by 1e-9.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner
from worst_bounds import dense_bounds, verify_json

from dpverify.cli import main
from dpverify.lp import solve
from dpverify.spec import loads
from dpverify.theory import worst_hints, worst_ipm
from dpverify.theory.orbits.space import OrbitSpace
from dpverify.theory.worst_candidates import float_bracket
from dpverify.theory.worst_hints import DENSE, DENSE_CHECKED, dense_or_columns
from dpverify.theory.worst_ipm import dense_worst
from dpverify.theory.worst_lp import WorstLp, prior_bound, rule_value, solve_exact
from dpverify.theory.worst_polish import FINER_TIES, TIE, polish_prior, polish_rule


def _solve(lp):
    return solve(lp, "highs", feasibility_tol=1e-10)


def _parity_orbits(sizes, epsilons=None, lambdas=None, gain="asymmetric"):
    """The observer's worst-case LP of parity on the classes' orbits, gains in [0, 1]."""
    levels = lambdas or [Fraction(np.exp(e)).limit_denominator(10**9) for e in epsilons]
    space = OrbitSpace(tuple(sizes), tuple(Fraction(v) for v in levels))
    parity = np.array([sum(space.weights(w)) % 2 for w in range(space.count)])
    if gain == "asymmetric":  # 2 if f == y else (0 if y == 0 else -1), in [0, 1]
        table = np.array([[1.0, 0.0], [1 / 3, 1.0]])[parity]
    else:
        table = np.eye(2)[parity]
    return WorstLp.over_class_orbits(space, list(range(space.count)), table), space


# --------------------------------------------------------------------------- the hints


def test_the_parity_cliff_orbit_lp_is_bracketed_by_the_dense_method():
    # 19 parties in classes (3, 9, 7) at epsilons 0.05, 1, 2: RR's signal about parity is
    # about 2e-9, and HiGHS spent more than 600 s at feasibility 1e-10 on this LP
    lp, _ = _parity_orbits((3, 9, 7), epsilons=(0.05, 1.0, 2.0))
    hints = dense_or_columns(lp, _solve)
    assert hints.ok and hints.how == DENSE
    lower, upper = dense_bounds(lp, hints.masses, hints.rule)
    assert lower <= upper + 1e-15
    assert upper - lower < 1e-11  # the tolerance wants 1e-9 of the range
    assert lower > 0.6 + 5e-10  # the signal: above the zero-information value 0.6


def test_the_polish_closes_what_the_interior_point_leaves(monkeypatch):
    lp, _ = _parity_orbits((3, 9, 7), epsilons=(0.05, 1.0, 2.0))
    C, G = lp.channel.floats(), lp.gain
    # without an LP solver and without the finer ties the rule's polish stops at its null
    # space (t free: parity), so this is the interior point's own rule
    with monkeypatch.context() as m:
        m.setattr(worst_ipm, "FINER_TIES", ())
        found = dense_worst(lp, solve=None)
    raw_lower, raw_upper = dense_bounds(lp, found.prior, found.rule)
    assert raw_upper - raw_lower > 1e-11  # what the polish is for
    # the finer ties (worst_polish.FINER_TIES) leave no null space: closed without a solver
    fine = polish_rule(C, G, found.prior, None, (TIE, *FINER_TIES))
    assert fine is not None and raw_upper - dense_bounds(lp, found.prior, fine)[0] < 1e-11
    rule = polish_rule(C, G, found.prior, _solve)
    assert rule is not None
    lower, _ = dense_bounds(lp, found.prior, rule)
    assert lower >= raw_lower - 1e-15
    assert raw_upper - lower < 1e-11
    # negative control: the polish of a prior that is not the minimax one is no better
    # than what that prior allows (the rule cannot beat the LP's optimum)
    skewed = found.prior * np.linspace(0.5, 1.5, found.prior.size)
    other = polish_rule(C, G, skewed, _solve)
    if other is not None:
        assert dense_bounds(lp, found.prior, other)[0] <= raw_upper + 1e-13


def test_exact_lambdas_on_81_orbits_against_the_exact_simplex():
    # lambda = 3/2 and 2 in classes of 8: the exact simplex from HiGHS's basis took 72 s;
    # at 4 + 4 parties it is quick, and the dense method's polished pair is checked against
    # it exactly
    lp, space = _parity_orbits((4, 4), lambdas=(Fraction(3, 2), Fraction(2)), gain="indicator")
    gain_exact = [[Fraction(int(v)) for v in row] for row in lp.gain]
    exact_lp = WorstLp.over_class_orbits(space, list(range(space.count)), gain_exact=gain_exact)
    optimum = solve_exact(exact_lp).value
    found = dense_worst(lp, solve=_solve)
    lower, upper = float_bracket(lp, found.prior, found.rule)
    assert lower - 1e-13 <= float(optimum) <= upper + 1e-13
    assert upper - lower < 1e-11
    # the hints as exact rationals: the bounds they prove, exactly, around the optimum
    rule = [[Fraction(v).limit_denominator(10**12) for v in row] for row in found.rule]
    rule = [[v / sum(row) for v in row] for row in rule]
    prior = [Fraction(v).limit_denominator(10**12) for v in np.clip(found.prior, 0, None)]
    assert rule_value(exact_lp, rule) <= optimum <= prior_bound(exact_lp, prior)
    assert prior_bound(exact_lp, prior) - rule_value(exact_lp, rule) < Fraction(1, 10**10)


def test_active_rows_bound_the_whole_block():
    # majority in four classes, 500 orbits: the LP on active rows; its prior bounds the
    # whole block and its rule is valued on every row
    lp, space = _parity_orbits((4, 4, 4, 3), epsilons=(0.05, 1.5, 2.0, 1.0))
    majority = np.array([int(2 * sum(space.weights(w)) > space.parties)
                         for w in range(space.count)])
    table = np.array([[1.0, 0.0], [1 / 3, 1.0]])[majority]
    lp = WorstLp(lp.channel, lp.rows, lp.gain_rows, table)
    found = dense_worst(lp, solve=_solve)
    lower, upper = dense_bounds(lp, found.prior, found.rule)
    assert abs(lower - found.lower) < 1e-12 and abs(upper - found.upper) < 1e-12
    assert upper - lower < 1e-10
    # (row generation on the active rows: tests/test_symmetric_family.py)


def test_polish_prior_needs_a_consistent_rule():
    lp, _ = _parity_orbits((2, 3), epsilons=(0.5, 1.0))
    found = dense_worst(lp, solve=_solve)
    C, G = lp.channel.floats(), lp.gain
    prior = polish_prior(C, G, found.rule, _solve)
    assert prior is not None
    assert abs(prior.sum() - 1) < 1e-12 and prior.min() >= 0
    _, upper = dense_bounds(lp, prior, found.rule)
    lower, _ = dense_bounds(lp, found.prior, found.rule)
    assert upper >= lower - 1e-13  # a bound is a bound: never below a rule's value


# --------------------------------------------------------------------------- verdicts


def _parity_problem(sizes, levels, key="epsilon", scale=1):
    values = [v for n, v in zip(sizes, levels, strict=True) for _ in range(n)]
    shown = ", ".join(f'"{v}"' if key == "lambda" else str(v) for v in values)
    two, one = ("2", "1") if scale == 1 else ("2e-9", "1e-9")
    gain = f'{{ expr = "{two} if f == y else (0 if y == 0 else -{one})" }}'
    return (f'[problem]\nname = "p"\nparties = {len(values)}\n{key} = [{shown}]\n'
            f'accuracy = "worst"\n\n[observer]\nfunction = "parity"\ngain = {gain}\n')


@pytest.mark.parametrize("scale", [1, "1e-9"])
def test_parity_in_three_classes_is_decided_at_every_gain_scale(tmp_path, scale):
    # 11 parties in classes (2, 5, 4): the same shape as the 19-party cliff, quick
    found = verify_json(tmp_path, _parity_problem((2, 5, 4), (0.05, 1.0, 2.0), scale=scale))
    assert found["verdict"] == "optimal", found
    result = found["results"][0]
    assert result["method"] == "orbit"


@pytest.mark.parametrize("scale", [1, "1e-9"])
def test_exact_lambdas_on_orbits_are_decided(tmp_path, scale):
    found = verify_json(tmp_path, _parity_problem((6, 6), ("3/2", "2"), "lambda", scale))
    assert found["verdict"] == "optimal", found


@pytest.mark.slow
@pytest.mark.parametrize("sizes, levels, key", [
    ((3, 9, 7), (0.05, 1.0, 2.0), "epsilon"),
    ((3, 9, 6), (0.5, 1.0, 2.0), "epsilon"),
    ((8, 8), ("3/2", "2"), "lambda"),
    ((10, 10), ("3/2", "2"), "lambda"),
])
def test_the_measured_cliffs_are_decided(tmp_path, sizes, levels, key):
    found = verify_json(tmp_path, _parity_problem(sizes, levels, key))
    assert found["verdict"] == "optimal", found


EXTREME = ('[problem]\nname = "x"\nparties = 7\nepsilon = [30, 0.01, 1, 2, 30, 10, 0.01]\n'
           'accuracy = "worst"\n\n[[party]]\nindex = {index}\n'
           "function = {{ table = {table} }}\ngain = {gain}\n")


@pytest.mark.parametrize("index, gain", [(1, '"indicator"'), (2, '"indicator"'),
                                         (2, '{ matrix = [[1e-9, 0, 0], [0, 1e-9, 0], '
                                             '[0, 0, 1e-9]] }')])
def test_extreme_epsilons_without_symmetry_are_decided(tmp_path, index, gain):
    # the float LP refuses entries below 1e-12 and the exact simplex pivoted for a minute:
    # the dense method's hints, bracketed in floats with bounded rounding
    rng = np.random.default_rng(7)
    table = rng.integers(0, 3, 128).tolist()
    found = verify_json(tmp_path, EXTREME.format(index=index, table=table, gain=gain))
    assert found["verdict"] == "optimal", found
    assert found["results"][0]["method"] == "proof"


def test_extreme_epsilons_of_an_observer_are_decided(tmp_path):
    # levels above 25 among others: HiGHS refused the LP (`error` before)
    text = ('[problem]\nname = "x"\nparties = 6\n'
            'epsilon = [26.5, 0.03, 2.2, 28.9, 0.8, 21.7]\naccuracy = "worst"\n\n'
            '[observer]\nfunction = { table = ' + str(
                np.random.default_rng(11).integers(0, 3, 64).tolist()) + " }\n")
    found = verify_json(tmp_path, text)
    assert found["verdict"] == "optimal", found


# --------------------------------------------------------------------------- the check


def _stalled(lp, **_):
    """A dense run that 'stalled': the uniform prior and a constant rule, a wide bracket."""
    n, m = lp.channel.columns, lp.m
    prior = np.full(lp.rows.size, 1.0 / lp.rows.size)
    rule = np.zeros((n, m))
    rule[:, 0] = 1.0
    lower, upper = dense_bounds(lp, prior, rule)
    return worst_ipm.DenseWorst(prior, rule, lower, upper, 1)


def test_a_small_block_the_dense_method_leaves_open_is_checked_by_highs(monkeypatch):
    lp, _ = _parity_orbits((2, 3), epsilons=(0.5, 1.0), gain="indicator")
    monkeypatch.setattr(worst_hints, "dense_worst", _stalled)
    wide = _stalled(lp)
    assert wide.upper - wide.lower > 1e-3
    # negative control: without a check the stalled pair is all there is
    alone = dense_or_columns(lp, _solve)
    assert alone.how == DENSE
    assert np.array_equal(alone.rule, wide.rule) and np.array_equal(alone.masses, wide.prior)
    checked = dense_or_columns(lp, _solve, check=_solve)
    assert checked.ok and checked.how == DENSE_CHECKED
    lower, upper = dense_bounds(lp, checked.masses, checked.rule)
    assert upper - lower < 1e-11 and lower >= wide.lower and upper <= wide.upper
    # a check that fails (HiGHS out of its time) keeps the dense pair
    failed = dense_or_columns(lp, _solve, check=lambda program: solve(
        program, "highs", time_limit=0.0))
    assert failed.how == DENSE and np.array_equal(failed.rule, wide.rule)
    # a block over CHECK_ENTRIES is not checked
    monkeypatch.setattr(worst_hints, "CHECK_ENTRIES", 1)
    assert dense_or_columns(lp, _solve, check=_solve).how == DENSE


def test_a_party_whose_dense_block_stalled_is_decided(tmp_path):
    # issue 25's symmetric family: one own bit's block of 54 orbits and 21 outputs, where
    # the dense method stalled 7.2e-7 wide and the exact simplex ran past 600 s
    text = ('[problem]\nname = "p"\nparties = 20\nepsilon = ['
            + ", ".join(["3.0"] * 3 + ["0.25"] * 17) + ']\naccuracy = "worst"\n\n'
            '[[party]]\nindex = 1\nfunction = "sum"\ngain = "indicator"\n')
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    # a run's own time limit, so that a return of the cliff fails in seconds, not at the
    # suite's guard (without the check: `error`, timeout, after these 30 s)
    out = CliRunner().invoke(main, ["verify", str(path), "--json", "--timeout", "30"])
    assert out.exit_code == 0, out.output[-500:]
    found = json.loads(out.output)[0]
    assert found["verdict"] == "optimal", found
    assert found["results"][0]["method"] == "orbit"


def test_loads_of_the_cliff_problems():
    spec = loads(_parity_problem((3, 9, 7), (0.05, 1.0, 2.0)))
    assert spec.parties == 19
