"""The four-ray LP's dual made an exact upper bound (docs/theory.md, "Approximate privacy").

Take a prior pi on the inputs (uniform for the average; any distribution for the worst
case), mu (one number per input) and nu >= 0 (one per hockey-stick row of
theory/approx/rays.py). If, for every product of rays s and every label l,

    val[s, l] = sum_x T_s[x] (mu[x] - pi[x] gain(x, l)) + sum_rows nu[row] H_row,s >= 0  (D)

then for every feasible theta (theta >= 0, sum_l P_l[x] = 1, every hockey-stick sum at
most its delta)

    sum_x pi[x] acc(x) = sum_{s,l} theta[s,l] sum_x pi[x] gain(x,l) T_s[x]
                      <= sum_{s,l} theta[s,l] (mu . T_s + nu . H_s)
                       = sum_x mu[x] + nu . (H theta) <= sum_x mu[x] + sum_rows nu delta,

and an agent's worst-case accuracy is at most any prior's average. So
bound = sum(mu) + sum(nu delta) bounds every (epsilon_i, delta_i)-DP protocol (the LP
bounds them, rays.py). Float duals are made exact and repaired by the least uniform
shift mu + c 1 that makes (D) hold exactly: every T_s sums to 1, so the shift raises every
val[s, l] by c, and the bound by n c.

**Irrational levels.** The LP's optimum U(lambda) is non-decreasing in each lambda_i: a
product of rays at lambda splits on the rays at lambda' >= lambda with the same reveal
rays (each corner lies in the wider cone), so a feasible theta at lambda maps to one at
lambda' with the same P_l and the same hockey-stick sums. So a bound proved at the upper
rational brackets lambda_hi >= e^epsilon (theory/exact.py) holds at e^epsilon.

Everything here is exact: the rays at lambda = p / q are integer vectors over p + q, and
(D) is evaluated for every (s, l) at once by Kronecker transforms on Python integers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.records import record
from dpverify.theory.approx.rays import HockeyRow, hockey_matrix, ray_counts
from dpverify.theory.approx.rr import REVEAL_0, REVEAL_1
from dpverify.theory.decision import own_bit_mask


def exact_label_gains(gain_exact: Sequence[Sequence[Fraction]], party: int
                      ) -> list[list[Fraction]]:
    """gain(x, label) exactly, labels as theory/decision.py's party_label_gains: the
    outputs for the observer, pairs (y0, y1) (y0 major) for party i."""
    rows = [list(r) for r in gain_exact]
    if party == 0:
        return rows
    n, m = len(rows), len(rows[0])
    own = own_bit_mask(n.bit_length() - 1, party, 1)
    return [[row[b] if own[x] else row[a] for a in range(m) for b in range(m)]
            for x, row in enumerate(rows)]


def _integer_rays(lam: Fraction, rays: int) -> tuple[np.ndarray, int]:
    """A party's normalised rays as integers over p + q (lambda = p / q)."""
    p, q = lam.numerator, lam.denominator
    M = np.array([[p, q, p + q, 0], [q, p, 0, p + q]], dtype=object)[:, :rays]
    return M, p + q


def _transform(factors: Sequence[np.ndarray], V: np.ndarray) -> np.ndarray:
    """(F_1 (x) ... (x) F_k)^T V for V of shape (2^k, c): shape (prod r_j, c)."""
    k = len(factors)
    c = V.shape[1]
    t = V.reshape((2,) * k + (c,))
    for j, F in enumerate(factors):
        t = np.moveaxis(np.tensordot(F.T, t, axes=([1], [j])), 0, j)
    return t.reshape(-1, c)


def _scaled(values: Sequence[Fraction]) -> tuple[list[int], int]:
    den = math.lcm(*(Fraction(v).denominator for v in values)) if values else 1
    return [int(Fraction(v) * den) for v in values], den


def product_values(lambdas: Sequence[Fraction], deltas: Sequence[Fraction],
                   label_gains: Sequence[Sequence[Fraction]], prior: Sequence[Fraction],
                   mu: Sequence[Fraction], nu: Sequence[Fraction]) -> tuple[np.ndarray, int]:
    """val[s, l] of (D) for every product of rays s and label l, exactly: an (S, L) array
    of Python integers over the returned denominator. `nu` follows the rows of
    rays.hockey_matrix (the keys of `hockey_keys`)."""
    counts = ray_counts(deltas)
    n, L = len(label_gains), len(label_gains[0])
    k = len(counts)
    keys = hockey_keys(lambdas, deltas)
    if len(nu) != len(keys) or len(mu) != n or len(prior) != n:
        raise ValueError("mu, prior and nu do not match the LP's rows")
    base = [Fraction(mu[x]) - Fraction(prior[x]) * Fraction(label_gains[x][lab])
            for x in range(n) for lab in range(L)]
    ints, den = _scaled(base + [Fraction(v) for v in nu])
    V = np.array(ints[:n * L], dtype=object).reshape(n, L)
    factors, scales = zip(*(_integer_rays(Fraction(lam), r)
                            for lam, r in zip(lambdas, counts, strict=True)), strict=True)
    values = _transform(list(factors), V)  # (S, L) over den * prod(scales)
    shape = tuple(counts)
    cube = values.reshape(shape + (L,))
    position = n * L
    for i in range(k):
        if counts[i] < 4:
            continue
        others = [factors[j] for j in range(k) if j != i]
        for reveal in (REVEAL_0, REVEAL_1):
            size = 1 << (k - 1)
            w = np.array(ints[position:position + size], dtype=object).reshape(size, 1)
            position += size
            add = _transform(others, w).reshape(tuple(c for j, c in enumerate(counts)
                                                      if j != i))
            where = tuple(reveal if j == i else slice(None) for j in range(k))
            cube[where] = cube[where] + scales[i] * add[..., None]
    return cube.reshape(-1, L), den * math.prod(scales)


def weighted_products(lambdas: Sequence[Fraction], deltas: Sequence[Fraction],
                      weights: Sequence[Fraction]) -> list[Fraction]:
    """sum_x T_s[x] weights[x] for every product of rays s, exactly."""
    counts = ray_counts(deltas)
    ints, den = _scaled([Fraction(v) for v in weights])
    V = np.array(ints, dtype=object).reshape(len(ints), 1)
    factors, scales = zip(*(_integer_rays(Fraction(lam), r)
                            for lam, r in zip(lambdas, counts, strict=True)), strict=True)
    total = den * math.prod(scales)
    return [Fraction(int(v), total) for v in _transform(list(factors), V).ravel().tolist()]


def dual_values(lambdas: Sequence[Fraction], deltas: Sequence[Fraction],
                label_gains: Sequence[Sequence[Fraction]], prior: Sequence[Fraction],
                mu: Sequence[Fraction], nu: Sequence[Fraction]) -> tuple[Fraction, int, int]:
    """The smallest val[s, l] of (D) (module docstring) and where it is (s, l), exactly."""
    values, total = product_values(lambdas, deltas, label_gains, prior, mu, nu)
    L = values.shape[1]
    flat = values.reshape(-1)
    best = min(range(flat.size), key=lambda j: flat[j])
    return Fraction(int(flat[best]), total), best // L, best % L


def hockey_keys(lambdas: Sequence[Fraction], deltas: Sequence[Fraction]
                ) -> list[HockeyRow]:
    """The hockey-stick rows' keys, in the order of rays.hockey_matrix."""
    return hockey_matrix([float(v) for v in lambdas], ray_counts(deltas))[1]


@record
class DualBound:
    """A proved upper bound (normalised gains) on every (epsilon_i, delta_i)-DP protocol's
    accuracy for one agent: (D) holds exactly for (prior, mu, nu) at `lambdas` and
    `deltas`, and bound = sum(mu) + sum(nu delta)."""

    bound: Fraction
    prior: tuple[Fraction, ...]
    mu: tuple[Fraction, ...]
    nu: tuple[Fraction, ...]
    lambdas: tuple[Fraction, ...]
    deltas: tuple[Fraction, ...]
    shift: Fraction  # the repair added to every mu[x]


def dual_bound(lambdas: Sequence[Fraction], deltas: Sequence[Fraction],
               label_gains: Sequence[Sequence[Fraction]], prior: Sequence[Fraction],
               mu: Sequence[Fraction], nu: Sequence[Fraction]) -> DualBound:
    """(prior, mu, nu) repaired into a proved bound (module docstring). `nu` is clipped at
    0 (a negative nu proves nothing); `prior` must be a distribution."""
    prior = [Fraction(v) for v in prior]
    if any(v < 0 for v in prior) or sum(prior, Fraction(0)) != 1:
        raise ValueError("the prior must be a distribution")
    nu = [max(Fraction(v), Fraction(0)) for v in nu]
    mu = [Fraction(v) for v in mu]
    low, _, _ = dual_values(lambdas, deltas, label_gains, prior, mu, nu)
    shift = -low if low < 0 else Fraction(0)
    mu = [v + shift for v in mu]
    keys = hockey_keys(lambdas, deltas)
    bound = sum(mu, Fraction(0)) + sum((v * Fraction(deltas[key.party - 1])
                                        for v, key in zip(nu, keys, strict=True)), Fraction(0))
    return DualBound(bound, tuple(prior), tuple(mu), tuple(nu),
                     tuple(Fraction(v) for v in lambdas), tuple(Fraction(v) for v in deltas),
                     shift)


def check_dual_bound(cert: DualBound, label_gains: Sequence[Sequence[Fraction]]) -> bool:
    """Whether `cert` proves its bound: a distribution, nu >= 0, (D) for every (s, l), and
    the bound equal to sum(mu) + sum(nu delta) (recomputed)."""
    if any(v < 0 for v in cert.prior) or sum(cert.prior, Fraction(0)) != 1:
        return False
    if any(v < 0 for v in cert.nu):
        return False
    low, _, _ = dual_values(cert.lambdas, cert.deltas, label_gains, cert.prior, cert.mu,
                            cert.nu)
    keys = hockey_keys(cert.lambdas, cert.deltas)
    bound = sum(cert.mu, Fraction(0)) + sum(
        (v * cert.deltas[key.party - 1] for v, key in zip(cert.nu, keys, strict=True)),
        Fraction(0))
    return low >= 0 and bound == cert.bound
