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

from collections.abc import Sequence
from fractions import Fraction

from flint import fmpq


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
    return all(chain_minima([_q(costs[i][r]) - _q(nu[i]) for i in range(N)], a)[0] >= 0
               for r in range(len(costs[0])))
