"""Approximate privacy for count queries (docs/theory.md, "Approximate privacy", count
queries): a mechanism x[i, r] (rows: true answers 0..n, columns: released answers) is
(epsilon, delta)-DP when for every pair of adjacent answers i, j = i +- 1 and every set T
of released answers, x[i, T] <= lambda x[j, T] + delta (lambda = e^epsilon = 1/alpha;
KOV 2015, eq. (12), with one individual's count as the input). As for protocols
(hockey.py) the worst set is {r : x[i, r] > lambda x[j, r]}, so the condition is that
every ordered adjacent pair's hockey-stick sum

    HS(i -> j) = sum_r max(0, x[i, r] - lambda x[j, r])

is at most delta. Multiplied by alpha it is linear with one slack per ordered pair and
released answer (`s[i -> j, r] >= alpha x[i, r] - x[j, r]`, `s >= 0`,
`sum_r s[i -> j, r] <= alpha delta`): the LPs of verifiers/count/approximate.py.

**Binary tests** (`derive` with delta). For two adjacent answers, a mechanism's two rows
are a binary experiment; its tradeoff function f(a) is the least type-II error
P_j(accept) of a (randomised) test of H0 = i with type-I error P_i(reject) <= a
(Neyman-Pearson: reject on the released answers by decreasing ratio x[j, r] / x[i, r]).
RR(epsilon, delta) on one bit has f_RR(a) = max(0, 1 - delta - lambda a,
(1 - delta - a) / lambda) and dominates every (epsilon, delta)-DP pair of rows (KOV-C 2015,
Theorem 2.5): a mechanism serves every consumer of the two answers {i, j} (whatever its
loss, minimax or Bayes) exactly when its f is at most f_RR, which for a convex f and a
piecewise linear f_RR is a check at f_RR's three kinks 0, (1 - delta)/(1 + lambda) and
1 - delta.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

Number = Fraction | float
MIX_BITS = 1 << 40


def adjacent_pairs(n: int) -> list[tuple[int, int]]:
    """The ordered pairs (i, j) of adjacent answers 0..n: (0, 1), (1, 0), (1, 2), ..."""
    return [p for i in range(n) for p in ((i, i + 1), (i + 1, i))]


def pair_hockey(x: Sequence[Sequence[Number]], i: int, j: int, lam: Number) -> Number:
    """HS(i -> j) = sum_r max(0, x[i][r] - lam x[j][r]) (module docstring): exact for
    Fractions and a rational lam, a float otherwise."""
    if isinstance(lam, Fraction) and all(isinstance(v, Fraction) for v in x[i]):
        total = Fraction(0)
        for a, b in zip(x[i], x[j], strict=True):
            d = Fraction(a) - lam * Fraction(b)
            if d > 0:
                total += d
        return total
    return math.fsum(max(0.0, float(a) - float(lam) * float(b))
                     for a, b in zip(x[i], x[j], strict=True))


def mechanism_delta(x: Sequence[Sequence[Number]], lam: Number) -> Number:
    """The smallest delta for which x is (ln lam, delta)-DP: the largest HS over ordered
    adjacent pairs (0 for n = 0)."""
    sums = [pair_hockey(x, i, j, lam) for i, j in adjacent_pairs(len(x) - 1)]
    return max(sums, default=Fraction(0) if isinstance(lam, Fraction) else 0.0)


def _dyadic_up(t: Fraction) -> Fraction:
    return min(Fraction(math.ceil(t * MIX_BITS), MIX_BITS), Fraction(1))


def mix_to_delta(x: Sequence[Sequence[Fraction]], lam: Fraction, delta: Fraction
                 ) -> tuple[list[list[Fraction]], Fraction]:
    """Exact rows made exactly (ln lam, delta)-DP by mixing with the uniform mechanism U
    (equal rows: every HS 0): HS((1 - t) x + t U) <= (1 - t) HS(x) by convexity, so the
    least dyadic t >= 1 - delta / HS(x) suffices (t = 1 when delta = 0 and x is not
    pure: then U itself). Returns the mechanism and t."""
    rows = [[Fraction(v) for v in row] for row in x]
    spent = Fraction(mechanism_delta(rows, lam))
    if spent <= delta:
        return rows, Fraction(0)
    t = Fraction(1) if delta == 0 else _dyadic_up(1 - delta / spent)
    u = Fraction(1, len(rows[0]))
    mixed = [[(1 - t) * v + t * u for v in row] for row in rows]
    if Fraction(mechanism_delta(mixed, lam)) > delta:  # convexity says never
        raise ArithmeticError("mixing with the uniform mechanism did not make it private")
    return mixed, t


def tradeoff(null: Sequence[Fraction], alternative: Sequence[Fraction], a: Fraction
             ) -> Fraction:
    """f(a): the least type-II error alternative(accept) of a randomised test of `null`
    with type-I error null(reject) <= a, exactly (Neyman-Pearson; module docstring)."""
    order = sorted((r for r in range(len(null)) if alternative[r] > 0),
                   key=lambda r: (null[r] > 0, null[r] / alternative[r]))
    budget, power = Fraction(a), Fraction(0)
    for r in order:
        p, q = Fraction(null[r]), Fraction(alternative[r])
        if p <= budget:
            budget -= p
            power += q
        else:
            power += q * budget / p
            break
    return 1 - power


def rr_tradeoff(lam: Fraction, delta: Fraction, a: Fraction) -> Fraction:
    """f_RR(a) = max(0, 1 - delta - lam a, (1 - delta - a) / lam): RR(epsilon, delta)'s
    tradeoff function (KOV-C 2015)."""
    return max(Fraction(0), 1 - delta - lam * a, (1 - delta - a) / lam)


def rr_kinks(lam: Fraction, delta: Fraction) -> tuple[Fraction, ...]:
    """Where f_RR bends: 0, (1 - delta) / (1 + lam), 1 - delta."""
    return Fraction(0), (1 - delta) / (1 + lam), 1 - delta


def pair_serves(x: Sequence[Sequence[Fraction]], i: int, j: int, lam: Fraction,
                delta: Fraction) -> tuple[bool, Fraction, Fraction, Fraction]:
    """Whether the rows i, j of x dominate RR(ln lam, delta) (module docstring): (ok, the
    first kink a where they do not, f(a), f_RR(a)) (the last kink when ok)."""
    for a in rr_kinks(lam, delta):
        got, bound = tradeoff(x[i], x[j], a), rr_tradeoff(lam, delta, a)
        if got > bound:
            return False, a, got, bound
    return True, a, got, bound
