"""The dense worst-case interior-point method (theory/worst_ipm.py) and the certificates it
feeds: its two bounds are real (recomputed here by brute force), they bracket the optimum of
the LP solved independently (scipy's linprog), and a worst case without symmetry beyond
the chain LP's reach is certified and checked by the independent checker."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog

from dpverify.checker import check_certificate
from dpverify.errors import SizeLimitError
from dpverify.lp import solve
from dpverify.policy import DENSE_FROM_INPUTS
from dpverify.spec import loads
from dpverify.spec.symmetric import trivial_orbits
from dpverify.theory.certificates import own_bits, rationalised_prior, rationalised_rule
from dpverify.theory.certificates.repair import DYADIC_BITS, WorstHint
from dpverify.theory.rr import rr_matrix
from dpverify.theory.worst_ipm import MAX_DENSE_INPUTS, DenseWorst, dense_worst, polish_on_ties
from dpverify.theory.worst_lp import WorstLp
from dpverify.verifiers.certifiers import certify_agent


def _instance(k: int, seed: int, labels: int = 3):
    rng = np.random.default_rng(seed)
    lambdas = np.exp(rng.uniform(0.2, 2.4, k))
    f = rng.integers(0, labels, 2 ** k)
    gain = (f[:, None] == np.arange(labels)[None, :]).astype(float)
    return lambdas, gain


def _lp_value(lambdas, gain, relevant=None) -> float:
    """max_Q min_{x relevant} acc_Q(x), written out densely for linprog (KOV eq. 6)."""
    P = rr_matrix(lambdas)
    n, m = gain.shape
    rows = np.arange(n) if relevant is None else np.flatnonzero(relevant)
    # variables: Q (n x m, row-major), then t; maximise t
    A = np.zeros((rows.size, n * m + 1))
    for i, x in enumerate(rows):
        A[i, : n * m] = -(P[x][:, None] * gain[x][None, :]).ravel()
        A[i, -1] = 1.0
    eq = np.zeros((n, n * m + 1))
    for tau in range(n):
        eq[tau, tau * m:(tau + 1) * m] = 1.0
    c = np.zeros(n * m + 1)
    c[-1] = -1.0
    bounds = [(0, None)] * (n * m) + [(None, None)]
    res = linprog(c, A_ub=A, b_ub=np.zeros(rows.size), A_eq=eq, b_eq=np.ones(n),
                  bounds=bounds, method="highs")
    assert res.status == 0
    return -res.fun


def _brute_bounds(lambdas, gain, found: DenseWorst, relevant=None) -> tuple[float, float]:
    """The two bounds of a result recomputed from P itself: min over the relevant inputs of
    the rule's accuracy, and sum_tau max_y sum_x prior[x] P[x, tau] w(x, y)."""
    P = rr_matrix(lambdas)
    n = gain.shape[0]
    rows = np.arange(n) if relevant is None else np.flatnonzero(relevant)
    acc = ((P @ found.rule) * gain).sum(axis=1)[rows]
    z = P[rows].T @ (found.prior[:, None] * gain[rows])
    return float(acc.min()), float(z.max(axis=1).sum())


@pytest.mark.parametrize("k,seed", [(3, 0), (4, 1), (5, 2), (6, 3)])
def test_dense_brackets_the_lp_optimum(k, seed):
    lambdas, gain = _instance(k, seed)
    found = dense_worst(WorstLp.over_inputs(lambdas, gain))
    value = _lp_value(lambdas, gain)
    assert found.lower <= value + 1e-9 <= found.upper + 2e-9
    assert found.width <= 1e-9
    lo, hi = _brute_bounds(lambdas, gain, found)
    assert lo == pytest.approx(found.lower, abs=1e-12)
    assert hi == pytest.approx(found.upper, abs=1e-12)
    assert found.prior.min() >= 0 and found.prior.sum() == pytest.approx(1.0)
    assert np.allclose(found.rule.sum(axis=1), 1.0) and found.rule.min() >= 0


def test_dense_on_one_own_bit_of_a_party():
    lambdas, gain = _instance(5, 7, labels=2)
    relevant = own_bits(5, 2) == 1
    found = dense_worst(WorstLp.over_inputs(lambdas, gain, relevant))
    assert found.prior.shape == (int(relevant.sum()),)
    value = _lp_value(lambdas, gain, relevant)
    assert found.lower - 1e-9 <= value <= found.upper + 1e-9
    assert found.width <= 1e-9
    lo, hi = _brute_bounds(lambdas, gain, found, relevant)
    assert (lo, hi) == pytest.approx((found.lower, found.upper), abs=1e-12)


def test_brute_bounds_catch_a_tampered_result():
    """Negative control: the recomputation is not an echo of the reported numbers."""
    lambdas, gain = _instance(4, 5)
    found = dense_worst(WorstLp.over_inputs(lambdas, gain))
    tampered = DenseWorst(found.prior, found.rule[:, ::-1].copy(), found.lower,
                          found.upper, found.iterations)
    lo, _ = _brute_bounds(lambdas, gain, tampered)
    assert lo < found.lower - 1e-3
    uniform = DenseWorst(np.full(16, 1 / 16), found.rule, found.lower, found.upper, 0)
    _, hi = _brute_bounds(lambdas, gain, uniform)
    assert hi > found.upper + 1e-6


def test_the_rule_lp_on_the_prior_s_ties_repairs_a_weak_rule():
    """polish_on_ties: a good prior with a poor rule (a constant one, 'stalled') gets the
    rule's LP on the prior's ties; the rule it returns is bounded by brute force, and
    neither end is ever worse than what it was given."""
    lambdas, gain = _instance(5, 4)
    lp = WorstLp.over_inputs(lambdas, gain)
    found = dense_worst(lp)
    weak_rule = np.zeros_like(found.rule)
    weak_rule[:, 0] = 1.0
    weak = DenseWorst(found.prior, weak_rule, *_brute_bounds(
        lambdas, gain, DenseWorst(found.prior, weak_rule, 0.0, 0.0, 0)), 0)
    assert weak.width > 1e-2  # the control: the weak pair is far from closed

    def tight(program):
        return solve(program, "highs", feasibility_tol=1e-10)

    mended = polish_on_ties(lp, weak, tight)
    lo, hi = _brute_bounds(lambdas, gain, mended)
    assert (lo, hi) == pytest.approx((mended.lower, mended.upper), abs=1e-12)
    assert mended.width < 1e-9
    assert mended.lower >= weak.lower and mended.upper <= weak.upper
    # a solver that fails leaves the pair as it was
    failed = polish_on_ties(lp, weak, lambda program: solve(program, "highs", time_limit=0.0))
    assert failed.lower == weak.lower and np.array_equal(failed.rule, weak.rule)
    # an LP with more free entries than `most_free` is not solved at all
    solved: list[int] = []

    def counted(program):
        solved.append(1)
        return tight(program)

    capped = polish_on_ties(lp, weak, counted, most_free=1)
    assert not solved and capped.lower == weak.lower
    assert polish_on_ties(lp, weak, counted, most_free=10**6).width < 1e-9 and solved


def test_constant_gain_and_the_size_limit():
    lambdas, _ = _instance(3, 0)
    found = dense_worst(WorstLp.over_inputs(lambdas, np.ones((8, 2))))
    assert found.width == 0.0 and found.iterations == 0
    with pytest.raises(SizeLimitError, match="at most"):
        dense_worst(WorstLp.over_inputs(np.full(13, 2.0), np.zeros((2 * MAX_DENSE_INPUTS, 2))))


def test_rationalised_hints_have_one_denominator_and_exact_rows():
    orbits = trivial_orbits(3)
    rule = np.array([[0.3, 0.7 + 1e-13, 0.0], [1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 1e-30],
                     [2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.2, 0.2, 0.6],
                     [np.nan, 1.0, 0.0], [0.1, 0.1, 0.8]])
    rows = rationalised_rule(orbits, rule)
    for x, r in enumerate(rows):
        assert sum(r) == 1 and min(r) >= 0
        if x == 4:  # a row without mass: uniform (theory/exact_rows.py, the one rule)
            assert r == (Fraction(1, 3),) * 3
            continue
        assert all((1 << DYADIC_BITS) % Fraction(v).denominator == 0 for v in r)
    prior = rationalised_prior(orbits, WorstHint(rule=rule, prior=np.arange(8.0),
                                                 x_orbits=np.arange(8)), 8)
    assert prior is not None and sum(prior) == 1 and prior[0] == 0
    # one common denominator (the rounded total), not an lcm of unrelated ones
    assert math.lcm(*(Fraction(p).denominator for p in prior)) < 2 ** (DYADIC_BITS + 6)


K9 = """
[problem]
name = "k9"
parties = 9
epsilon = [0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.9]
accuracy = "worst"
[observer]
function = {{ table = {table} }}
gain = {{ matrix = {matrix} }}
"""


# Gains scaled by 1e-9 check all that scale 1 checks, and that the width scales (seconds
# each): scale 1 with --runslow.
@pytest.mark.parametrize("scale", [pytest.param(1, marks=pytest.mark.slow),
                                   Fraction(1, 10**9)])
def test_a_worst_case_without_symmetry_is_bracketed_and_checked(scale):
    """k = 9, distinct epsilons, a random 3-valued table: no symmetry, so the hints come
    from the dense method (n = 512 >= DENSE_FROM_INPUTS); the certificate is a bracket of
    width at most 1e-9 of the gains' range whatever their scale, and the independent
    checker accepts it."""
    assert DENSE_FROM_INPUTS <= 2 ** 9
    table = np.random.default_rng(11).integers(0, 3, 512).tolist()
    matrix = [[str(scale * int(i == j)) for j in range(3)] for i in range(3)]
    spec = loads(K9.format(table=table, matrix=json.dumps(matrix)), source="k9.toml")
    cert = json.loads(json.dumps(certify_agent(spec, spec.agents[0], "worst")))
    assert cert["status"] == "bracket"
    width = Fraction(cert["upper"]["bound"]) - Fraction(cert["lower"]["value"])
    assert 0 <= width <= Fraction(1, 10**9) * scale
    assert any("unknowns" in note for note in cert.get("notes", []))
    result = check_certificate(spec, cert)
    assert result.ok, result.message
    # the checker is not a rubber stamp: a bound lowered by the width's worth fails
    cert["upper"]["bound"] = str(Fraction(cert["lower"]["value"]) - width)
    assert not check_certificate(spec, cert).ok


def _sum_on_orbits():
    """The observer's worst-case LP of `sum` (indicator gain, 10 outputs) on the orbits of
    classes of 3, 4 and 2 parties at three levels: 60 orbits."""
    from dpverify.theory.orbits.space import OrbitSpace

    space = OrbitSpace((3, 4, 2), (Fraction(5, 4), Fraction(2), Fraction(7, 2)))
    f = np.array([sum(space.weights(w)) for w in range(space.count)])
    return WorstLp.over_class_orbits(space, list(range(space.count)), np.eye(10)[f])


def test_z_and_acc_in_float64_agree_with_long_double():
    from dpverify.theory.worst_ipm import WORK, _Problem

    lp = _sum_on_orbits()
    prob = _Problem(lp.channel.factors, lp.channel.floats(), lp.gain, lp.rows, lp.channel.columns)
    rng = np.random.default_rng(0)
    pi, q = rng.random(prob.R).astype(WORK), rng.random((prob.n, prob.m)).astype(WORK)
    precise = (prob.z(pi), prob.acc(q))
    prob.precise = False
    rough = (prob.z(pi), prob.acc(q))
    for a, b in zip(precise, rough, strict=True):
        assert b.dtype == WORK and np.allclose(a, b, rtol=1e-13, atol=0)
        # the twins differ by float64's rounding, not more: these are two computations
        assert np.abs(a - b).max() < 1e-13 * np.abs(a).max()
    # the long double products are not float64's in disguise (where long double is wider)
    if np.finfo(WORK).eps < np.finfo(np.float64).eps:
        assert np.any(precise[0] != rough[0])


def test_float64_products_until_the_end_game_and_the_bracket_holds(monkeypatch):
    """The iterations make P's products in float64 until mu is below PRECISE_MU or the
    method stalls, then in long double; the result brackets the LP's optimum as narrowly
    as a run in long double throughout (the control, in which no iteration is in
    float64), and its ends are real (recomputed from the dense channel)."""
    from worst_bounds import dense_bounds

    from dpverify.theory import worst_ipm

    lp = _sum_on_orbits()
    seen: list[tuple[int, bool]] = []  # (the run's problem, its precision) per iteration
    iterate = worst_ipm._iterate

    def spied(prob, st, single):
        seen.append((id(prob), prob.precise))
        return iterate(prob, st, single)

    monkeypatch.setattr(worst_ipm, "_iterate", spied)
    found = dense_worst(lp)
    mixed = [precise for run, precise in seen if run == seen[0][0]]  # the first run's
    assert not mixed[0] and mixed[-1]
    first = mixed.index(True)
    assert first >= len(mixed) // 2  # most iterations in float64
    assert all(mixed[first:])  # no return to float64
    seen.clear()
    monkeypatch.setattr(worst_ipm._Problem, "precise_from", lambda self, mu, before=0: True)
    control = dense_worst(lp)
    assert all(precise for _, precise in seen)
    # as narrow as the control (within ten times its width, or the target), not merely
    # narrow: switching one iteration late once left 7e-11 against the control's 1e-13
    assert found.width <= max(10 * control.width, worst_ipm.TARGET_WIDTH)
    assert found.lower <= control.upper + 1e-12 and control.lower <= found.upper + 1e-12
    lo, hi = dense_bounds(lp, found.prior, found.rule)
    assert (lo, hi) == pytest.approx((found.lower, found.upper), abs=1e-12)


def test_the_end_of_an_iteration():
    """`_ended`: the target ends the method; so does being stuck (STUCK) in either
    precision; the end game's stall (mu below STALL_MU, STALL iterations) switches float64
    to long double with the count reset, and ends the method in long double; a stall at a
    larger mu does neither (the control)."""
    from dpverify.theory.worst_ipm import STALL, STALL_MU, STUCK, TARGET_WIDTH, _ended, _Problem

    lp = _sum_on_orbits()
    prob = _Problem(lp.channel.factors, lp.channel.floats(), lp.gain, lp.rows, lp.channel.columns)
    wide, small = 1e-6, STALL_MU / 10
    for precise in (False, True):
        prob.precise = precise
        assert _ended(prob, TARGET_WIDTH, TARGET_WIDTH, 1.0, 0) == (True, 0)
        assert _ended(prob, wide, TARGET_WIDTH, 1.0, STUCK) == (True, STUCK)
        assert _ended(prob, wide, TARGET_WIDTH, STALL_MU * 10, STALL) == (False, STALL)
        assert prob.precise is precise
    prob.precise = False
    assert _ended(prob, wide, TARGET_WIDTH, small, STALL) == (False, 0)
    assert prob.precise
    assert _ended(prob, wide, TARGET_WIDTH, small, STALL) == (True, STALL)


def test_a_falling_mu_takes_long_double_one_iteration_ahead():
    """The forecast of precise_from: mu times its last ratio below PRECISE_MU takes long
    double (mu 10 PRECISE_MU after 1,000 PRECISE_MU: headed for PRECISE_MU / 10); a slowly
    falling mu at the same value does not (the control), nor does the first iteration's
    infinite `before`."""
    from dpverify.theory.worst_ipm import PRECISE_MU, _Problem

    lp = _sum_on_orbits()
    prob = _Problem(lp.channel.factors, lp.channel.floats(), lp.gain, lp.rows, lp.channel.columns)
    prob.precise = False
    assert prob.precise_from(10 * PRECISE_MU, 1000 * PRECISE_MU)
    assert not prob.precise_from(10 * PRECISE_MU, 20 * PRECISE_MU)
    assert not prob.precise_from(10 * PRECISE_MU, np.inf)
    assert not prob.precise_from(np.inf, np.inf)


def test_a_small_mu_takes_long_double():
    """Long double from PRECISE_MU on (d = q / s grows as at the end); a larger mu does not
    (the control), whatever the bracket; once taken, long double stays."""
    from dpverify.theory.worst_ipm import PRECISE_MU, _Problem

    lp = _sum_on_orbits()
    prob = _Problem(lp.channel.factors, lp.channel.floats(), lp.gain, lp.rows, lp.channel.columns)
    prob.precise = False
    assert not prob.precise_from(PRECISE_MU * 10)
    assert prob.precise_from(PRECISE_MU / 10)
    prob.precise = True
    assert prob.precise_from(1e-6)


def test_a_stall_in_float64_goes_on_in_long_double(monkeypatch):
    """Where the method stalls in float64 (the bracket no narrower by 1%; STALL_MU and
    STALL set so that one such iteration at any mu is a stall), it does not end there: it
    goes on in long double, and ends at the next stall. PRECISE_MU = 0 leaves the stall as
    the only way into long double."""
    from dpverify.theory import worst_ipm

    lp = _sum_on_orbits()
    seen: list[bool] = []
    iterate = worst_ipm._iterate

    def spied(prob, st, single):
        seen.append(prob.precise)
        return iterate(prob, st, single)

    monkeypatch.setattr(worst_ipm, "_iterate", spied)
    monkeypatch.setattr(worst_ipm, "PRECISE_MU", 0.0)
    monkeypatch.setattr(worst_ipm, "STALL_MU", 1.0)
    monkeypatch.setattr(worst_ipm, "STALL", 1)
    found = worst_ipm.dense_worst(lp, target=0.0)
    assert not seen[0] and True in seen  # float64 first, then long double
    assert all(seen[seen.index(True):])
    assert found.width <= 1e-9
    assert found.iterations < worst_ipm.MAX_ITERATIONS  # ended by its stall in long double
    # the control: without the stall (STALL beyond the iterations), no long double
    seen.clear()
    monkeypatch.setattr(worst_ipm, "STALL", 10 ** 6)
    monkeypatch.setattr(worst_ipm, "STUCK", 10 ** 6)
    worst_ipm.dense_worst(lp, target=0.0)
    assert not any(seen)
