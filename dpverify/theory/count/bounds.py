"""A rigorous lower bound on the optimal alpha-DP mechanism's loss, from the DP chain.

The alpha-DP constraints of a count mechanism (GS Definition 2) act on each released
answer r separately: the column u = x[., r] lies in the cone
    C = {u >= 0 : alpha u[i+1] <= u[i], alpha u[i] <= u[i+1]}.
For a distribution q on the side information S (the minimax consumer's least favourable
prior, or a Bayesian consumer's prior) and multipliers nu of the row sums sum_r x[i,r] = 1,
weak duality gives, for every DP mechanism x,
    sum_i q_i sum_r l(i,r) x[i,r] >= sum_i nu_i
as soon as every column cost d_r = (q_i l(i,r) - nu_i)_i is non-negative on C. And the
minimax loss max_{i in S} sum_r l(i,r) x[i,r] is at least that weighted mean.

Non-negativity on C is decided in O(n) by a recursion along the chain: with u[j] = 1,
    a_j = d_j + min(alpha a_{j-1}, a_{j-1} / alpha)    (the best left part, a_0 = d_0)
    b_j = d_j + min(alpha b_{j+1}, b_{j+1} / alpha)    (the best right part)
    psi_j = a_j + b_j - d_j = min over u in C with u[j] = 1 of d . u,
and d >= 0 on C iff psi_j >= 0 (for any j: every u in C is positive or 0). A violated
column is repaired by lowering nu at the anchor j where the least is needed (-psi_j), which
only helps every other column. This is how float duals become a rigorous bound: the
repair and the check run in exact rational arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from flint import fmpq

from dpverify import clock


def _q(v) -> fmpq:
    v = Fraction(v)
    return fmpq(v.numerator, v.denominator)


def _fraction(v: fmpq) -> Fraction:
    return Fraction(int(v.p), int(v.q))


def chain_minima(d: Sequence, alpha) -> list:
    """psi_j = min of d . u over u in the DP cone C with u[j] = 1, for every j (exact:
    python-flint rationals in, the same out)."""
    n = len(d)
    a = list(d)
    b = list(d)
    inverse = 1 / alpha
    for j in range(1, n):  # min(alpha t, t / alpha) is alpha t for t >= 0 (alpha <= 1)
        t = a[j - 1]
        a[j] = d[j] + (alpha * t if t >= 0 else inverse * t)
    for j in range(n - 2, -1, -1):
        t = b[j + 1]
        b[j] = d[j] + (alpha * t if t >= 0 else inverse * t)
    return [a[j] + b[j] - d[j] for j in range(n)]


def chain_dual_bound(costs: Sequence[Sequence[Fraction]], nu: Sequence[Fraction],
                     alpha: Fraction) -> tuple[Fraction, list[Fraction]]:
    """(sum(nu'), nu'): nu lowered until every column cost costs[., r] - nu' is
    non-negative on the DP cone (alpha > 0), so that sum(nu') is a valid lower bound on
    sum_{i,r} costs[i][r] x[i,r] over every alpha-DP mechanism x (module docstring).

    `costs[i][r]` = q_i l(i, r). alpha = 0 (no privacy): the cone is all of R^n_+, and nu_i
    is at most min_r costs[i][r].
    """
    N = len(nu)
    if alpha == 0:
        low = [min(Fraction(v), min(Fraction(c) for c in costs[i])) for i, v in enumerate(nu)]
        return sum(low, Fraction(0)), low
    a = _q(alpha)
    q_nu = [_q(v) for v in nu]
    q_costs = [[_q(c) for c in row] for row in costs]
    for r in range(len(costs[0])):
        clock.check()  # the run's deadline, once per column (dpverify/clock.py)
        psi = chain_minima([q_costs[i][r] - q_nu[i] for i in range(N)], a)
        if psi[0] < 0:  # infeasible: every psi_j < 0; repair where the least is needed
            j = max(range(N), key=lambda i: psi[i])
            q_nu[j] += psi[j]
    out = [_fraction(v) for v in q_nu]
    return sum(out, Fraction(0)), out


def column_costs_ok(costs: Sequence[Sequence[Fraction]], nu: Sequence[Fraction],
                    alpha: Fraction) -> bool:
    """The exact check behind chain_dual_bound: every column cost non-negative on C."""
    N = len(nu)
    if alpha == 0:
        return all(costs[i][r] >= nu[i] for i in range(N) for r in range(len(costs[0])))
    a = _q(alpha)
    for r in range(len(costs[0])):
        clock.check()  # the run's deadline, once per column
        if chain_minima([_q(costs[i][r]) - _q(nu[i]) for i in range(N)], a)[0] < 0:
            return False
    return True


# -- the same bound in floating point, rigorous by directed rounding ---------------------------
# Every float below is rounded towards -inf (`_down`) or +inf (`_up`) by one ulp after each
# correctly rounded operation, so that it bounds the exact quantity from the side named;
# the recursion t -> min(alpha t, t / alpha) is increasing in t, so a lower bound of t gives
# a lower bound of it. O(n^2) float operations in place of O(n^2) rational ones whose size
# grows with n (the powers of alpha): the candidate's certificate at n = 200 in milliseconds.


def _down(x):
    return np.nextafter(x, -np.inf)


def _up(x):
    return np.nextafter(x, np.inf)


def chain_minima_below(d_lo: np.ndarray, d_hi: np.ndarray, alpha: float) -> np.ndarray:
    """psi_lo[j, r] <= psi_j of column r (chain_minima) for every cost matrix d with
    d_lo <= d <= d_hi entrywise ((N, R) arrays, column r the cost of released answer r),
    at a float 0 < alpha < 1."""
    N = d_lo.shape[0]
    a = np.empty_like(d_lo)
    b = np.empty_like(d_lo)
    a[0], b[N - 1] = d_lo[0], d_lo[N - 1]
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(1, N):
            t = a[j - 1]
            a[j] = _down(d_lo[j] + np.where(t >= 0, _down(alpha * t), _down(t / alpha)))
        for j in range(N - 2, -1, -1):
            t = b[j + 1]
            b[j] = _down(d_lo[j] + np.where(t >= 0, _down(alpha * t), _down(t / alpha)))
        return _down(_down(a + b) - d_hi)


# The repair of chain_bound_below: at most this many rounds. A change of nu at the anchor
# reaches the column's check through the chain's factors of alpha (at most 1), so the
# shortfall alone may under-correct: a minimax consumer at n = 10, alpha = 0.97, the
# indicator loss on the set {0, 3, 7}, was left 4.9e-15, 1.3e-16, then 2.5e-17 short after
# three rounds (on one machine's rounding; on another the first round checked), and the
# mechanism's own certificate failed. The first round lowers nu by the shortfall (and a
# hair); each later one by twice the one before, plus a few ulps of the problem's scale.
REPAIR_ROUNDS = 8


def chain_bound_below(cost_lo: np.ndarray, cost_hi: np.ndarray, nu: np.ndarray,
                      alpha: float) -> float:
    """chain_dual_bound in floats: a number at most sum(nu') for multipliers nu' <= nu
    under which every column cost costs[., r] - nu' is non-negative on the DP cone at every
    alpha' >= alpha, for every cost matrix within [cost_lo, cost_hi] ((N, N) arrays); so a
    lower bound on sum_{i,r} costs[i][r] x[i,r] over every alpha'-DP mechanism x. The
    repair lowers nu at each violated column's anchor (all at once: lowering nu only
    helps every column), then checks again. -inf when it does not check, or outside
    0 < alpha < 1 (chain_dual_bound decides those exactly)."""
    if not 0 < alpha < 1 or not np.isfinite(nu).all():
        return -math.inf
    nu = np.asarray(nu, dtype=np.float64).copy()
    columns = np.arange(cost_lo.shape[1])
    # lowering nu by more than needed only loosens the bound by as much, and is checked
    # again like any other nu
    ulps = 4 * float(np.finfo(np.float64).eps) * float(
        max(np.abs(cost_hi).max(initial=0.0), np.abs(nu).max(initial=0.0), 1e-300))
    factor, slack = 1 + 1e-12, 1e-300
    for _ in range(REPAIR_ROUNDS):
        psi = chain_minima_below(_down(cost_lo - nu[:, None]), _up(cost_hi - nu[:, None]),
                                 alpha)
        # every u of the cone is positive, so d . u >= 0 on the cone exactly when psi_j >= 0
        # for any one j (all psi_j have d's sign): a column passes on its best lower bound
        # (their roundings differ), not only on psi_0's
        known = np.where(np.isnan(psi), -np.inf, psi)
        bad = ~(known.max(axis=0) >= 0)
        if not bad.any():
            return float(_down(math.fsum(nu.tolist())))
        anchor = known.argmax(axis=0)
        need = -psi[anchor, columns]
        if not np.isfinite(need[bad]).all():
            return -math.inf
        lower = np.zeros_like(nu)
        np.maximum.at(lower, anchor[bad], need[bad] * factor + slack)
        nu = _down(nu - lower)
        factor, slack = 2 * factor, ulps
    return -math.inf


def interval_products(a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray,
                      b_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Floats below and above every a b with a in [a_lo, a_hi], b in [b_lo, b_hi]
    (broadcast)."""
    products = [x * y for x in (a_lo, a_hi) for y in (b_lo, b_hi)]
    return _down(np.minimum.reduce(products)), _up(np.maximum.reduce(products))


def float_bounds(values) -> tuple[np.ndarray, np.ndarray]:
    """Floats below and above each rational of `values` (any shape of Fractions)."""
    f = np.vectorize(float, otypes=[np.float64])(np.asarray(values, dtype=object))
    return _down(f), _up(f)
