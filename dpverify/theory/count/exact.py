"""Exact witnesses for count-query gaps (Gupte-Sundararajan, PODS 2010; theory.md section 2).

A `gap` between the geometric mechanism and the optimal mechanism is claimed only when it
is proved exactly, from two witnesses:

* an upper bound on the optimal mechanism's loss: an explicit mechanism, made exactly
  row-stochastic and alpha-DP (GS Definition 2) from the LP's float solution, whose loss is
  computed exactly;
* a lower bound on what the geometric mechanism G reaches with any post-processing T:
  for a minimax consumer and any distribution q on the side information S,
      max_{i in S} sum_r l(i,r) (G T)[i,r] >= sum_i q_i sum_r l(i,r) (G T)[i,r]
                                            >= sum_k min_r sum_i q_i G[i,k] l(i,r)
  (T's rows are distributions, so the minimum over T separates per released answer k);
  for a Bayesian consumer with prior p the same expression with q = p is the geometric
  mechanism's exact optimum (GRS: a deterministic remap is optimal).

alpha = e^-epsilon is irrational: the mechanism is checked at a rational alpha_hi >= alpha
(alpha_hi-DP implies alpha-DP: more privacy), and G is bounded entrywise from below by
rationals (alpha^d >= alpha_lo^d, and the weights (1 - alpha) / (1 + alpha), 1 / (1 + alpha)
decrease in alpha); with losses >= 0 (the caller normalises them) the bound stays valid.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from dpverify.theory.exact_rows import exact_stochastic


def _mat(rows: Sequence[Sequence[Fraction]]) -> fmpq_mat:
    r, c = len(rows), len(rows[0])
    return fmpq_mat(r, c, [fmpq(v.numerator, v.denominator) for row in rows for v in row])


def _fractions(m: fmpq_mat) -> list[list[Fraction]]:
    c = m.ncols()
    flat = [Fraction(int(v.p), int(v.q)) for v in m.entries()]
    return [flat[i:i + c] for i in range(0, len(flat), c)]


def exact_dp_mechanism(x: np.ndarray, alpha: Fraction) -> list[list[Fraction]]:
    """x (floats) made an exactly row-stochastic, exactly alpha-DP mechanism.

    Negatives are clipped and rows normalised exactly (theory/exact_rows.py); then x is
    mixed with the uniform mechanism U (1-DP, slack (1 - alpha) / N in every DP
    constraint) by the least theta with (1 - theta) v <= theta (1 - alpha) / N, v the
    largest violation of alpha x[i+1, r] <= x[i, r] or alpha x[i, r] <= x[i+1, r].
    alpha = 1 asks for equal rows: the mean row, repeated.
    """
    rows = exact_stochastic(x)
    N = len(rows)
    if N == 1 or alpha == 0:
        return rows
    if alpha == 1:
        mean = [sum(col) / N for col in zip(*rows, strict=False)]
        return [list(mean) for _ in range(N)]
    v = Fraction(0)
    for a, b in itertools.pairwise(rows):
        for p, q in zip(a, b, strict=False):
            v = max(v, alpha * q - p, alpha * p - q)
    if v == 0:
        return rows
    theta = v / (v + (1 - alpha) / N)
    return [[(1 - theta) * p + theta / N for p in row] for row in rows]


def is_exactly_dp(x: Sequence[Sequence[Fraction]], alpha: Fraction) -> bool:
    """Row-stochastic, non-negative, and alpha x[i+1, r] <= x[i, r] >= ... (GS Def. 2)."""
    if any(v < 0 for row in x for v in row) or any(sum(row) != 1 for row in x):
        return False
    return all(alpha * q <= p and alpha * p <= q
               for a, b in itertools.pairwise(x) for p, q in zip(a, b, strict=False))


def mechanism_loss(x: Sequence[Sequence[Fraction]], loss: Sequence[Sequence[Fraction]],
                   side: Sequence[int], prior: Sequence[Fraction] | None) -> Fraction:
    """The consumer's exact loss: max over i in S (minimax) or the prior's mean (Bayes)."""
    per_row = [sum((w * p for w, p in zip(loss[i], x[i], strict=True)), Fraction(0))
               for i in range(len(x))]
    if prior is None:
        return max(per_row[i] for i in side)
    return sum((p * v for p, v in zip(prior, per_row, strict=False)), Fraction(0))


def geometric_lower(alpha_lo: Fraction, alpha_hi: Fraction, n: int) -> list[list[Fraction]]:
    """A rational matrix below the alpha-geometric mechanism G entrywise, for every alpha in
    [alpha_lo, alpha_hi] (GS Definition 4: G[i,k] = alpha^|i-k| w_k, w_k = (1-alpha)/(1+alpha)
    inside, 1/(1+alpha) at k = 0, n). Equal to G when alpha_lo == alpha_hi."""
    if n == 0:
        return [[Fraction(1)]]
    inner = (1 - alpha_hi) / (1 + alpha_hi)
    edge = 1 / (1 + alpha_hi)
    powers = [alpha_lo ** d for d in range(n + 1)]
    return [[powers[abs(i - k)] * (edge if k in (0, n) else inner) for k in range(n + 1)]
            for i in range(n + 1)]


def geometric_lower_bound(G_lo: Sequence[Sequence[Fraction]],
                          loss: Sequence[Sequence[Fraction]], weights: Sequence[Fraction]
                          ) -> Fraction:
    """sum_k min_r sum_i q_i G[i,k] l(i,r) exactly (the module docstring): a lower bound on
    the loss of G followed by any post-processing, for losses >= 0 on q's support."""
    N = len(G_lo)
    weighted = [[weights[i] * v for v in loss[i]] for i in range(N)]  # q_i l(i, r)
    scores = _mat(G_lo).transpose() * _mat(weighted)  # [k, r] = sum_i G[i,k] q_i l(i,r)
    return sum((min(row) for row in _fractions(scores)), Fraction(0))

