"""The geometric mechanism and what derives from it (dpverify.theory.count.geometric).

Exact identities (G^-1 G = I, rows summing to 1, Lemma 3's stochasticity) are checked in
rational arithmetic; derivability is tested on mechanisms known to derive (G T for a
random stochastic T) and known not to (DP mechanisms that violate the local test), and
the two independent tests must agree on all of them. Negative controls show each check
can fail.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpverify.spec.losses import named_loss
from dpverify.theory.count.geometric import (
    apply_inverse,
    as_exact_array,
    bayes_loss,
    bayes_remap,
    derive,
    dp_violations,
    exact_matmul,
    geometric_inverse,
    geometric_matrix,
    is_monotone,
    is_stochastic,
    local_margins,
    minimax_loss,
    monotonicity_violation,
    privacy_level,
)
from dpverify.theory.count.release import (
    ReleasePlan,
    all_subsets,
    check_release,
    joint_underflows,
    release_matrix,
    release_plan,
    sample_chain,
    subset_joint,
)

EXACT_ALPHAS = [Fraction(0), Fraction(1, 5), Fraction(1, 2), Fraction(2, 3), Fraction(9, 10),
                Fraction(1)]
SIZES = [0, 1, 2, 3, 6]


def random_stochastic(rng, rows, cols, exact=False, sparse=False):
    """A random row-stochastic matrix (small-denominator rationals when exact)."""
    if exact:
        w = rng.integers(0, 5, size=(rows, cols))
        if sparse:
            w *= rng.integers(0, 2, size=(rows, cols))
        w[:, 0] += (w.sum(axis=1) == 0)
        return as_exact_array([[Fraction(int(v), int(row.sum())) for v in row] for row in w])
    w = rng.random((rows, cols)) * (rng.random((rows, cols)) < 0.6 if sparse else 1)
    w[:, 0] += 1e-3
    return w / w.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------------------
# G itself (GS Definition 4)


@pytest.mark.parametrize("alpha", EXACT_ALPHAS)
@pytest.mark.parametrize("n", SIZES)
def test_rows_sum_to_one_exactly(alpha, n):
    G = geometric_matrix(alpha, n)
    assert G.shape == (n + 1, n + 1) and G.dtype == object
    assert all(s == 1 for s in G.sum(axis=1))
    assert all(v >= 0 for v in G.ravel())
    assert np.allclose(geometric_matrix(float(alpha), n), G.astype(float), atol=1e-15)


def test_definition_entries():
    G = geometric_matrix(Fraction(1, 2), 3)
    c = Fraction(1, 3)  # (1 - a) / (1 + a)
    assert G[1, 2] == c * Fraction(1, 2) and G[0, 1] == c * Fraction(1, 2)
    assert G[2, 0] == Fraction(1, 4) / Fraction(3, 2)  # alpha^i / (1 + alpha)
    assert G[1, 3] == Fraction(1, 4) / Fraction(3, 2)  # alpha^(n-i) / (1 + alpha)


@pytest.mark.parametrize("n", SIZES)
def test_alpha_zero_is_the_identity_and_alpha_one_has_identical_rows(n):
    assert np.all(geometric_matrix(Fraction(0), n) == np.eye(n + 1, dtype=int))
    G1 = geometric_matrix(Fraction(1), n)
    assert all(np.all(G1[i] == G1[0]) for i in range(n + 1))
    if n >= 1:
        assert G1[0, 0] == G1[0, n] == Fraction(1, 2) and sum(G1[0, 1:n]) == 0
    else:
        assert G1[0, 0] == 1


@pytest.mark.parametrize("alpha", EXACT_ALPHAS[1:-1])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_G_is_exactly_alpha_dp_and_no_more(alpha, n):
    G = geometric_matrix(alpha, n)
    assert dp_violations(G, alpha) == []
    assert privacy_level(G) == pytest.approx(float(alpha), abs=1e-15)
    # negative control: G is not DP at any stronger level
    assert dp_violations(G, alpha + Fraction(1, 1000)) != []


def test_privacy_level_edge_cases():
    assert privacy_level(np.eye(3)) == 0.0
    assert privacy_level(np.full((3, 3), 1 / 3)) == 1.0
    assert privacy_level(np.ones((1, 1))) == 1.0


# --------------------------------------------------------------------------------------
# G^-1 is tridiagonal


@pytest.mark.parametrize("alpha", EXACT_ALPHAS[:-1])
@pytest.mark.parametrize("n", SIZES)
def test_inverse_is_exact_and_tridiagonal(alpha, n):
    G = geometric_matrix(alpha, n)
    inv = geometric_inverse(alpha, n)
    assert np.all(exact_matmul(inv, G) == np.eye(n + 1, dtype=int))
    assert np.all(exact_matmul(G, inv) == np.eye(n + 1, dtype=int))
    i, j = np.indices(inv.shape)
    assert all(v == 0 for v in inv[np.abs(i - j) > 1])
    x = geometric_matrix(alpha / 2, n)
    assert np.all(apply_inverse(x, alpha) == exact_matmul(inv, x))


def test_inverse_of_alpha_one_is_refused():
    with pytest.raises(ValueError, match="no inverse"):
        geometric_inverse(Fraction(1), 2)
    with pytest.raises(ValueError, match="no inverse"):
        apply_inverse(np.eye(3), 1.0)
    assert geometric_inverse(Fraction(1), 0)[0, 0] == 1  # n = 0: G = [[1]]


def test_float_inverse():
    for alpha in (0.0, 0.3, 0.95):
        G = geometric_matrix(alpha, 7)
        assert np.allclose(geometric_inverse(alpha, 7) @ G, np.eye(8), atol=1e-10)


def test_alpha_out_of_range():
    with pytest.raises(ValueError):
        geometric_matrix(1.5, 3)
    with pytest.raises(ValueError):
        geometric_matrix(Fraction(-1, 2), 3)


# --------------------------------------------------------------------------------------
# Derivability (GS Theorem 2): two tests that must agree


@pytest.mark.parametrize("alpha", EXACT_ALPHAS)
@pytest.mark.parametrize("n", SIZES)
def test_G_times_a_random_stochastic_T_derives_exactly(alpha, n):
    rng = np.random.default_rng(n * 31 + int(alpha * 100))
    for sparse in (False, True):
        T = random_stochastic(rng, n + 1, n + 1, exact=True, sparse=sparse)
        x = exact_matmul(geometric_matrix(alpha, n), T)
        d = derive(x, alpha)
        assert d.exact and d.dp and d.agree and d.derivable is True
        assert d.by_solve and d.by_local
        assert np.all(exact_matmul(geometric_matrix(alpha, n), d.T) == x)
        assert is_stochastic(d.T)
        if alpha < 1:
            assert np.all(d.T == T)  # G is invertible: T is unique


def test_a_dp_mechanism_that_does_not_derive():
    # DP at alpha = 1/2 (every adjacent ratio >= 1/2), but column 0 is (1/2, 3/10, 1/2):
    # (1 + 1/4) * 3/10 < 1/2 * (1/2 + 1/2), so the local test fails at (1, 0).
    x = as_exact_array([["1/2", "1/4", "1/4"], ["3/10", "7/20", "7/20"],
                        ["1/2", "1/4", "1/4"]])
    d = derive(x, Fraction(1, 2))
    assert d.dp and d.agree and d.derivable is False and d.T is None
    assert d.local_violations == ((1, 0),) == d.solve_violations


def test_random_mechanisms_both_tests_agree_exact():
    rng = np.random.default_rng(7)
    outcomes = set()
    for _ in range(150):
        n = int(rng.integers(1, 5))
        alpha = Fraction(int(rng.integers(1, 9)), 10)
        x = random_stochastic(rng, n + 1, n + 1, exact=True)
        if rng.random() < 0.5:  # often a G T perturbed a little, near the boundary
            G = geometric_matrix(alpha, n)
            x = exact_matmul(G, random_stochastic(rng, n + 1, n + 1, exact=True, sparse=True))
            mix = random_stochastic(rng, n + 1, n + 1, exact=True)
            x = x * Fraction(19, 20) + mix * Fraction(1, 20)
        d = derive(x, alpha)
        assert d.agree
        assert set(d.solve_violations) == set(d.local_violations)  # same signs, exactly
        if d.derivable:
            assert d.dp
        outcomes.add(d.derivable)
    assert outcomes == {True, False}  # both kinds occurred


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6),
       alpha=st.floats(0.05, 0.95), derivable=st.booleans())
def test_random_mechanisms_both_tests_agree_float(seed, n, alpha, derivable):
    rng = np.random.default_rng(seed)
    if derivable:
        x = geometric_matrix(alpha, n) @ random_stochastic(rng, n + 1, n + 1)
    else:
        x = random_stochastic(rng, n + 1, n + 1)
    d = derive(x, alpha, tol=1e-9)
    assert not d.exact
    if derivable:
        assert d.derivable is True and d.agree
        assert np.allclose(geometric_matrix(alpha, n) @ d.T, x, atol=1e-9)
    else:
        # away from the boundary the two tests agree; a random matrix rarely derives
        margins = local_margins(x, alpha)
        if np.min(np.abs(margins)) > 1e-6:
            assert d.agree


@pytest.mark.parametrize("n", [1, 2, 4])
def test_alpha_one_derives_exactly_the_constant_mechanisms(n):
    rng = np.random.default_rng(n)
    row = random_stochastic(rng, 1, n + 1, exact=True)
    x = np.repeat(row, n + 1, axis=0)
    d = derive(x, Fraction(1))
    assert d.derivable is True and d.solve_T is None
    assert np.all(exact_matmul(geometric_matrix(Fraction(1), n), d.T) == x)
    # negative control: any non-constant mechanism fails both tests
    y = x.copy()
    y[0] = random_stochastic(rng, 1, n + 1, exact=True)[0]
    if not np.all(y[0] == y[1]):
        e = derive(y, Fraction(1))
        assert e.agree and e.derivable is False and not e.dp


def test_alpha_zero_derives_everything_and_n_zero_is_trivial():
    rng = np.random.default_rng(3)
    x = random_stochastic(rng, 4, 4, exact=True)
    d = derive(x, Fraction(0))
    assert d.derivable is True and np.all(x == d.T)
    d0 = derive(as_exact_array([[1]]), Fraction(1, 2))
    assert d0.derivable is True and d0.T[0, 0] == 1


def test_not_dp_means_not_derivable():
    x = as_exact_array([[1, 0], [0, 1]])
    d = derive(x, Fraction(1, 2))
    assert not d.dp and d.derivable is False and d.agree


# --------------------------------------------------------------------------------------
# Multi-level release (GS Lemma 3, Algorithm 1)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_release_matrix_is_stochastic_exactly_when_privacy_increases(n):
    for b, a in itertools.permutations(EXACT_ALPHAS, 2):
        if b == 1:
            continue  # G_1 has no inverse
        T = release_matrix(b, a, n)  # G_b^-1 G_a
        assert np.all(exact_matmul(geometric_matrix(b, n), T) == geometric_matrix(a, n))
        assert all(s == 1 for s in T.sum(axis=1))
        assert is_stochastic(T) == (a > b), (b, a)


def test_release_plan_and_exact_check():
    plan = release_plan([Fraction(0), Fraction(1, 10), Fraction(1, 2), Fraction(1)], 6)
    assert plan.ok and len(plan.transitions) == 3
    check = check_release(plan)
    assert check.exact and check.ok and all(check.marginal_ok)
    assert [s.stages for s in check.subsets] == list(all_subsets(4))
    for s in check.subsets:
        assert s.measured == pytest.approx(s.promised, abs=1e-12)


def test_release_plan_refuses_unsorted_alphas():
    with pytest.raises(ValueError, match="increasing"):
        release_plan([Fraction(1, 2), Fraction(1, 3)], 3)
    with pytest.raises(ValueError):
        release_plan([], 3)


def test_release_check_catches_a_bad_chain():
    """Negative controls: releasing stage 2 as a copy of stage 1 (T = I) is neither the
    alpha_2-geometric mechanism nor alpha_2-private."""
    a, b, n = Fraction(1, 5), Fraction(1, 2), 4
    good = release_plan([a, b], n)
    bad = ReleasePlan(n=n, alphas=(a, b), first=good.first,
                      transitions=(as_exact_array(np.eye(n + 1, dtype=int).tolist()),),
                      stochastic=(True,), min_entries=(Fraction(0),))
    check = check_release(bad)
    assert not check.ok
    assert check.marginal_ok == (True, False)
    by_stages = {s.stages: s for s in check.subsets}
    assert not by_stages[(1,)].ok and by_stages[(1,)].measured == pytest.approx(0.2)
    assert by_stages[(0, 1)].ok


def test_subset_joint_is_a_mechanism_and_marginalises():
    plan = release_plan([Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)], 3)
    first = plan.first.astype(float)
    Ts = [T.astype(float) for T in plan.transitions]
    joint = subset_joint(first, Ts, (0, 2))
    assert joint.shape == (4, 16)
    assert np.allclose(joint.sum(axis=1), 1)
    # summing out stage 1 gives stage 3's marginal: the 3/4-geometric mechanism
    assert np.allclose(joint.reshape(4, 4, 4).sum(axis=1), geometric_matrix(0.75, 3))


def test_float_release_plan():
    plan = release_plan([0.1, 0.5], 4)
    assert plan.ok and check_release(plan).ok and not check_release(plan).exact
    assert not joint_underflows(plan)
    assert joint_underflows(release_plan([1e-80, 0.5], 6))


def test_sample_chain_is_reproducible_and_follows_G():
    plan = release_plan([Fraction(1, 2), Fraction(4, 5)], 4)
    first = plan.first.astype(float)
    Ts = [T.astype(float) for T in plan.transitions]
    one = sample_chain(first, Ts, 2, np.random.default_rng(5))
    assert one == sample_chain(first, Ts, 2, np.random.default_rng(5))
    rng = np.random.default_rng(11)
    draws = np.array([sample_chain(first, Ts, 2, rng) for _ in range(4000)])
    for stage, alpha in enumerate((0.5, 0.8)):
        freq = np.bincount(draws[:, stage], minlength=5) / len(draws)
        # 4000 draws: standard error <= 0.008; 5 sigma
        assert np.allclose(freq, geometric_matrix(alpha, 4)[2], atol=0.04)


# --------------------------------------------------------------------------------------
# Consumers


def test_named_losses_are_monotone_and_parity_is_not():
    for name in ("abs", "square", "indicator"):
        assert is_monotone(named_loss(name, 6))
    parity = np.abs(np.subtract.outer(np.arange(7), np.arange(7))) % 2
    assert monotonicity_violation(parity) == (0, 2)
    assert not is_monotone(parity)


def test_asymmetric_sidewise_monotone_loss_counts_as_monotone():
    i, r = np.indices((6, 6))
    loss = np.where(r > i, 2 * (r - i), i - r) + i  # row offsets do not matter
    assert is_monotone(loss)
    loss[3, 0] = 0  # decreases as r moves away from 3 to the left
    assert monotonicity_violation(loss) == (3, 0)


def test_minimax_and_bayes_losses():
    x = np.array([[0.5, 0.5], [0.25, 0.75]])
    loss = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert minimax_loss(x, loss, [0, 1]) == 0.5
    assert minimax_loss(x, loss, [1]) == 0.25
    assert bayes_loss(x, loss, np.array([0.5, 0.5])) == pytest.approx(0.375)


@pytest.mark.parametrize("alpha", [Fraction(1, 3), Fraction(3, 4)])
def test_bayes_remap_is_the_best_deterministic_remap(alpha):
    """Brute force over all (n+1)^(n+1) deterministic remaps, exactly."""
    n = 3
    G = geometric_matrix(alpha, n)
    rng = np.random.default_rng(1)
    for loss in (named_loss("square", n), as_exact_array(rng.integers(0, 5, (4, 4)).tolist())):
        prior = as_exact_array([[Fraction(int(w), 10) for w in (1, 2, 3, 4)]])[0]
        value, remap = bayes_remap(G, loss, prior)
        best = math.inf
        for f in itertools.product(range(n + 1), repeat=n + 1):
            T = np.zeros((n + 1, n + 1), dtype=int)
            T[np.arange(n + 1), f] = 1
            best = min(best, bayes_loss(exact_matmul(G, as_exact_array(T.tolist())), loss,
                                        prior))
        assert value == best
        T = np.zeros((n + 1, n + 1), dtype=int)
        T[np.arange(n + 1), remap] = 1
        assert bayes_loss(exact_matmul(G, as_exact_array(T.tolist())), loss, prior) == value


# --------------------------------------------------------------------------------------
# The DP-chain bound in floats, rigorous by directed rounding (bounds.chain_bound_below)


def _random_costs(rng, N):
    return [[Fraction(int(rng.integers(0, 50)), int(rng.integers(1, 9))) for _ in range(N)]
            for _ in range(N)]


@pytest.mark.parametrize("seed", range(6))
def test_the_float_chain_bound_is_below_the_exact_one_and_close(seed):
    """For any costs and multipliers the float bound is at most the exact chain bound (both
    repair nu; the float one all columns at once, so it may repair more far from
    feasibility); near feasibility (the exact repair's nu, nudged up) within 1e-9 of it; a
    control: nu raised far beyond feasibility is repaired down, never taken as it is."""
    from dpverify.theory.count.bounds import (
        chain_bound_below,
        chain_dual_bound,
        float_bounds,
    )

    rng = np.random.default_rng(seed)
    N = int(rng.integers(2, 12))
    alpha = Fraction(int(rng.integers(1, 9)), 10)
    costs = _random_costs(rng, N)
    nu = rng.normal(size=N) * 3
    exact, _ = chain_dual_bound(costs, [Fraction(v) for v in nu.tolist()], alpha)
    lo, hi = float_bounds(costs)
    below = chain_bound_below(lo, hi, nu, float(np.nextafter(float(alpha), 0)))
    assert below <= exact
    _, feasible = chain_dual_bound(costs, [Fraction(v) for v in nu.tolist()], alpha)
    near = np.array([float(v) for v in feasible]) * (1 + 1e-13) + 1e-13
    exact, _ = chain_dual_bound(costs, [Fraction(v) for v in near.tolist()], alpha)
    below = chain_bound_below(lo, hi, near, float(np.nextafter(float(alpha), 0)))
    assert float(exact) - 1e-9 * max(1.0, abs(float(exact))) <= below <= exact
    big = nu + 1e6
    assert chain_bound_below(lo, hi, big, float(alpha) * (1 - 1e-15)) <= float(
        chain_dual_bound(costs, [Fraction(v) for v in big.tolist()], alpha)[0])


def test_a_column_passes_on_any_nonnegative_chain_minimum(monkeypatch):
    """psi_j of a column has the sign of min d . u on the DP cone for every j (its points
    are positive), so one rigorous lower bound psi_j >= 0 passes the column: a psi_0 a hair
    below 0 beside psi_1 = 0 keeps nu as it is; the control, every psi_j below 0, lowers
    it."""
    from dpverify.theory.count import bounds

    nu = np.array([0.5, 0.25, 0.25])
    costs = np.ones((3, 2))

    def crafted(psi):
        monkeypatch.setattr(bounds, "chain_minima_below", lambda lo, hi, alpha: psi.copy())

    crafted(np.array([[-1e-20, -1e-20], [0.0, 1e-30], [-1.0, -1.0]]))
    assert bounds.chain_bound_below(costs, costs, nu, 0.5) == float(np.nextafter(1.0, 0))
    crafted(np.array([[-1e-20, -1e-20], [-1e-21, -1e-21], [-1.0, -1.0]]))
    assert bounds.chain_bound_below(costs, costs, nu, 0.5) == -math.inf  # never passes


def test_the_float_chain_bound_of_a_feasible_nu_keeps_it_and_refuses_bad_input():
    """nu = 0 under non-negative costs needs no repair (bound 0, rounded down); alpha outside
    (0, 1) and non-finite nu give -inf (the exact route decides those)."""
    from dpverify.theory.count.bounds import chain_bound_below

    costs = np.ones((5, 5))
    assert -1e-300 < chain_bound_below(costs, costs, np.zeros(5), 0.5) <= 0.0
    for alpha in (0.0, 1.0):
        assert chain_bound_below(costs, costs, np.zeros(5), alpha) == -math.inf
    assert chain_bound_below(costs, costs, np.array([0, 0, math.nan, 0, 0]), 0.5) == -math.inf


def test_interval_products_enclose_every_product():
    from dpverify.theory.count.bounds import interval_products

    rng = np.random.default_rng(1)
    a_lo, b_lo = rng.normal(size=50), rng.normal(size=50)
    a_hi, b_hi = a_lo + rng.random(50), b_lo + rng.random(50)
    lo, hi = interval_products(a_lo, a_hi, b_lo, b_hi)
    for t in np.linspace(0, 1, 7):
        for s in np.linspace(0, 1, 7):
            p = (a_lo + t * (a_hi - a_lo)) * (b_lo + s * (b_hi - b_lo))
            assert (lo <= p).all() and (p <= hi).all()


def test_the_exact_chain_bound_stops_at_the_run_s_deadline():
    """The exact repair checks the deadline once per column (the control: no deadline)."""
    import time

    from dpverify import clock
    from dpverify.theory.count.bounds import chain_dual_bound

    costs = [[Fraction(1)] * 4 for _ in range(4)]
    assert chain_dual_bound(costs, [Fraction(0)] * 4, Fraction(1, 2))[0] == 0
    with clock.within(1e-3):
        time.sleep(0.01)
        with pytest.raises(clock.TimedOut):
            chain_dual_bound(costs, [Fraction(0)] * 4, Fraction(1, 2))
