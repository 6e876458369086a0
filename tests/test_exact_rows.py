"""Float rows made distributions, exactly or in floats (dpverify/theory/exact_rows.py, the
one home of the row repair), and the verdict-safety regressions of its callers: NaN from
a solver never raises or hides in a minimum, and exact priors sum to exactly 1."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpverify.lp import LpSolution, LpStatus
from dpverify.spec import loads
from dpverify.spec.tables import tabulate
from dpverify.theory.exact_rows import (
    LARGEST,
    clean_distribution,
    clean_stochastic,
    dyadic,
    exact_distribution,
    exact_row,
    exact_stochastic,
    exact_total,
    finite_mass,
    has_mass,
    snap,
)
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict

NAN, INF = float("nan"), float("inf")
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.floats(0, 1), st.just(0.0))
ROUNDINGS = [None, snap(10**6), dyadic(60), dyadic(20, floor=True)]


@given(st.lists(floats, min_size=1, max_size=6), st.sampled_from(ROUNDINGS),
       st.booleans())
def test_every_row_becomes_an_exact_distribution(values, rounding, largest):
    kwargs = {} if rounding is None else {"rounding": rounding}
    if largest:
        kwargs["completion"] = LARGEST
    row = exact_row(values, **kwargs)
    assert sum(row) == 1 and min(row) >= 0 and len(row) == len(values)
    rounded = [] if rounding is None else [rounding(x) for x in finite_mass(values).tolist()]
    if rounding is not None and rounding.bits and largest and any(rounded):
        # one denominator: multiples of 2^-bits (unless the row had no mass left)
        assert all((1 << rounding.bits) % v.denominator == 0 for v in row)


def test_a_row_without_mass_is_uniform_on_its_support():
    """The one documented rule: NaN, infinities, negatives and zeros leave no mass."""
    for row in ([0.0, 0.0, 0.0], [NAN, -1.0, INF], [-INF, 0.0, NAN]):
        assert not has_mass(row)
        assert exact_row(row) == [Fraction(1, 3)] * 3
        assert exact_row(row, rounding=dyadic(60), completion=LARGEST) == [Fraction(1, 3)] * 3
        assert clean_stochastic(np.array([row])).tolist() == [[1 / 3] * 3]
    assert exact_distribution([0.0, NAN, 0.0, 0.0], support=[1, 3]) == [0, Fraction(1, 2), 0,
                                                                         Fraction(1, 2)]
    assert clean_distribution(np.zeros(4), support=[0, 2]).tolist() == [0.5, 0, 0.5, 0]
    # a mass that rounds to nothing is no mass either
    assert exact_row([1e-30, 0.0], rounding=snap(10**6)) == [Fraction(1, 2)] * 2


def test_rows_with_mass_keep_their_proportions():
    assert exact_row([0.25, 0.75]) == [Fraction(1, 4), Fraction(3, 4)]
    assert exact_row([1.0, NAN, -0.5, 1.0]) == [Fraction(1, 2), 0, 0, Fraction(1, 2)]
    assert exact_row([0.3, 0.7], rounding=snap(10)) == [Fraction(3, 10), Fraction(7, 10)]
    # LARGEST: the largest entry absorbs the remainder, the others keep their rounding
    row = exact_row([0.3, 0.7 + 1e-13], rounding=dyadic(60), completion=LARGEST)
    assert row[0] == dyadic(60)(0.3) and sum(row) == 1
    # ... and a row that held more than 1 + its largest entry becomes a vertex
    assert exact_row([0.9, 0.8, 0.7], rounding=snap(10), completion=LARGEST) == [1, 0, 0]
    assert exact_stochastic(np.array([[2.0, 0.0], [0.0, 1.0]])) == [[1, 0], [0, 1]]
    assert clean_stochastic(np.array([[2.0, 2.0]])).tolist() == [[0.5, 0.5]]
    assert exact_total([0.5, NAN, 0.25, -1.0]) == Fraction(3, 4)


def test_the_float_twins_keep_extended_precision():
    rule = np.array([[1.0, 2.0]], dtype=np.longdouble)
    assert clean_stochastic(rule).dtype == np.longdouble
    assert clean_distribution(np.array([1.0, 3.0], dtype=np.longdouble)).dtype == np.longdouble


# ------------------------------------------------------------------ the callers


def _nan_solution(lp, backend="highs"):
    return LpSolution(LpStatus.OPTIMAL, 0.0, np.full(lp.num_cols, np.nan),
                      np.full(lp.num_rows, np.nan), 0.0, backend, "fake NaN")


def test_a_party_rule_lp_gone_wrong_is_never_dropped_by_the_minimum():
    """Regression: RR's rule LP of one own bit "solved" to garbage (NaN or zero rows) gave a
    NaN rule, and a party's value min([bit 0, NaN]) silently kept bit 0's alone. The rows
    are distributions now, and the value is one that an explicit rule achieves."""
    from dpverify.verifiers.multiparty import corner_lp

    spec = loads('[problem]\nparties = 3\nlambda = "2"\n[[party]]\nindex = 1\n'
                 'function = "and"\n')
    agent = spec.agents[0]
    unit = tabulate(spec, agent).gain
    honest = corner_lp.rr_candidate(spec.lambdas, unit, 1, True, VerifyOptions())
    calls = []
    from dpverify.lp.solve import solve as real

    def second_bit_garbage(lp, backend="highs", **kw):
        calls.append(lp.name)
        if lp.name == "rr-worst" and calls.count("rr-worst") == 2:
            return _nan_solution(lp, backend)
        return real(lp, backend, **kw)

    value, rule = corner_lp.rr_candidate(spec.lambdas, unit, 1, True,
                                         VerifyOptions(solve_with=second_bit_garbage))
    assert calls.count("rr-worst") == 2
    assert np.isfinite(rule).all() and np.allclose(rule.sum(axis=2), 1.0)
    assert math.isfinite(value) and value <= honest[0] + 1e-12
    assert value < honest[0] - 1e-3  # the garbage bit's rule is a real, worse rule


def test_nan_duals_of_the_count_lp_are_undecided_not_an_internal_error():
    """Regression: NaN duals of the optimal-mechanism LP reached Fraction() in the exact
    chain bound and raised (an internal error); now they give no bound from the chain."""
    from dpverify.lp.solve import solve as real
    from dpverify.verifiers.count import verifier as count_module

    def nan_duals(lp, backend="highs", **kw):
        sol = real(lp, backend, **kw)
        if lp.name == "count-mechanism":
            duals = np.array(sol.row_duals, dtype=float)
            duals[0] = np.nan
            return LpSolution(sol.status, sol.objective, sol.x, duals, sol.seconds, "fake")
        return sol

    spec = loads('[problem]\nkind = "count"\nn = 4\nalpha = "1/2"\n[consumer]\nloss = "abs"\n')
    (r,) = count_module.verify_count(spec, VerifyOptions(solve_with=nan_duals)).results
    assert r.verdict in (Verdict.OPTIMAL, Verdict.ERROR), r.reason


def test_the_least_favourable_prior_sums_to_exactly_one(monkeypatch):
    """Regression: the count verifier's exact least favourable prior was divided by the
    float sum of its entries, so it summed to 1 only up to rounding; it is normalised
    exactly now (and nu by the same exact total)."""
    from dpverify.verifiers.count import verifier as count_module

    seen = []
    real = count_module.chain_dual_bound

    def spy(costs, nu, alpha):
        seen.append(costs)
        return real(costs, nu, alpha)

    monkeypatch.setattr(count_module, "chain_dual_bound", spy)
    for n, loss in ((9, "abs"), (12, "square"), (7, "indicator")):
        spec = loads(f'[problem]\nkind = "count"\nn = {n}\nalpha = "2/3"\n[consumer]\n'
                     f'loss = "{loss}"\n')
        (r,) = count_module.verify_count(spec, VerifyOptions(method="lp")).results
        assert r.verdict is Verdict.OPTIMAL, r.reason
        unit = count_module.loss_units(spec).exact
        # q_i = costs[i][r] / l'(i, r) at any r with l'(i, r) != 0
        q = [next(c / u for c, u in zip(row, unit[i], strict=True) if u)
             for i, row in enumerate(seen[-1])]
        assert sum(q) == 1, float(sum(q) - 1)


def test_nan_from_the_orbit_lp_gives_a_certificate_not_an_internal_error():
    """Regression: NaN in the float worst-case LP on orbits reached Fraction() when its rule
    and prior were rationalised, and raised. Rows without mass are uniform now: the
    certificate is built, and the exact simplex proves the optimum."""
    from dpverify.lp.solve import solve as real
    from dpverify.spec.model import Accuracy
    from dpverify.verifiers.multiparty.orbit import verify_orbit_agent

    def nan_on_orbits(lp, backend="highs", **kw):
        if lp.name == "rr-worst-on-orbits":
            return _nan_solution(lp)
        return real(lp, backend, **kw)

    spec = loads('[problem]\nparties = 5\nlambda = "2"\n[observer]\nfunction = "majority"\n'
                 '[[party]]\nindex = 1\nfunction = "majority"\n')
    options = VerifyOptions(method="orbit", solve_with=nan_on_orbits)
    for agent in spec.agents:
        r = verify_orbit_agent(spec, agent, Accuracy.WORST, options)
        assert r.verdict is Verdict.OPTIMAL, r.reason


@pytest.mark.parametrize("values", [[NAN, 0.5, 0.5], [0.2, INF, 0.8]])
def test_nan_weights_give_an_exact_distribution(values):
    out = exact_distribution(np.array(values), support=[0, 1, 2])
    assert sum(out) == 1 and all(v >= 0 for v in out)


def test_snap_is_limit_denominator_near_zero():
    """Entries below 1 / (4 d) are 0 without limit_denominator (the fast path): the same
    rational as limit_denominator's, at and around the boundary 1 / (2 d), where the
    nearest rational turns from 0 to 1 / d (the control: above it, not 0)."""
    from dpverify.theory.exact_rows import snap

    d = 10**12
    for v in (0.0, -0.0, -1e-20, 1e-30, 2.4e-13, 1 / (4 * d), 2.5000001e-13, 4.9e-13,
              5.1e-13, 1e-12, 0.3):
        assert snap(d)(v) == Fraction(v).limit_denominator(d)
    assert snap(d)(5.1e-13) == Fraction(1, d)


def test_rows_with_zeros_are_the_rows_of_every_entry_rounded():
    """exact_row leaves its zero entries unrounded (0 in every rounding): the same rows as
    rounding every entry and dividing by the exact total (the SCALE completion written out
    here), on rows with zeros, tiny entries and a support."""
    from dpverify.theory.exact_rows import EXACT, dyadic, exact_row, snap

    rng = np.random.default_rng(3)
    for rounding in (EXACT, snap(10**12), dyadic(60), dyadic(60, floor=True)):
        for _ in range(200):
            row = rng.random(12) * (rng.random(12) < 0.4)
            row[rng.integers(12)] = 1e-14
            support = sorted(rng.choice(12, size=8, replace=False).tolist())
            rounded = {i: rounding(float(row[i])) for i in support}
            total = sum(rounded.values(), Fraction(0))
            got = exact_row(row, rounding=rounding, support=support)
            if total > 0:
                assert got == [rounded[i] / total if i in rounded else 0 for i in range(12)]
            else:  # no mass: uniform on the support
                assert got == [Fraction(1, 8) if i in rounded else 0 for i in range(12)]


@given(st.floats(allow_nan=False, allow_infinity=False),
       st.sampled_from([1, 2, 7, 1000, 10 ** 9, 10 ** 12]))
def test_nearest_rational_is_limit_denominator(v, denominator):
    """The integer-only nearest rational (exact_rows.nearest_rational, what `snap` rounds
    with) against Python's own Fraction.limit_denominator, the oracle: the same value for
    any finite float (negative, huge, subnormal, exactly a small fraction) and bound."""
    from dpverify.theory.exact_rows import nearest_rational

    assert nearest_rational(v, denominator) == Fraction(v).limit_denominator(denominator)


def test_nearest_rational_on_ties_and_small_fractions():
    """Values between two candidates at equal distance go to the convergent, as in
    limit_denominator; exact small fractions read as themselves; a bound below 1 is
    refused as there."""
    from dpverify.theory.exact_rows import nearest_rational

    rng = np.random.default_rng(3)
    for v in [0.25, 1 / 3, 2 / 3, 0.1, 0.5 + 1e-13, 1 - 1e-13, 3.5, -2.75, 5e-324, 0.0,
              *rng.random(2000).tolist(), *(rng.random(2000) * 1e-11).tolist()]:
        for d in (1, 2, 3, 4, 10, 10 ** 6, 10 ** 12):
            assert nearest_rational(v, d) == Fraction(v).limit_denominator(d)
    assert nearest_rational(1 / 3, 10 ** 12) == Fraction(1, 3)
    with pytest.raises(ValueError):
        nearest_rational(0.5, 0)
