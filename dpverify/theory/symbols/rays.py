"""The DP cone of a party with m input symbols, its extreme rays, and m-ary randomized
response (docs/theory.md, section 6; KOV 2015, Section 4 "Generalization to multiple
bits"; Kairouz, Oh, Viswanath, *Extremal Mechanisms for Local Differential Privacy*,
NeurIPS 2014).

A transcript's column of an interactive protocol on independent inputs is rank-one,
`prod_i u_i(x_i)` (KOV 2015, eq. (8)), and lambda_i-DP for party i exactly when its factor
lies in the cone

    C_i = {u in R^m_+ : u_a <= lambda_i u_b for all symbols a, b}.

Its extreme rays are the vectors with entries in {1, lambda_i} that use both values:
2^m - 2 of them. (At an extreme ray, m - 1 of the constraints u_a = lambda u_b or u_a >= 0
must be tight and independent; with every entry positive and the ratios bounded by lambda
that forces each entry to be min(u) or lambda min(u), and both levels to occur.) For m = 2
they are (lambda, 1) and (1, lambda), the columns of the binary RR channel.

Ray j of an m-symbol party is the pattern of the integer j in binary, 1 <= j <= 2^m - 2,
symbol 0 the most significant bit: entry lambda where the pattern has a 1.

Input order is mixed radix with x1 the most significant symbol (dpverify.spec.alphabet).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.spec.alphabet import input_symbols


def ray_patterns(m: int) -> np.ndarray:
    """(m, 2^m - 2) array of 0/1: column j - 1 is the pattern of ray j (1 = lambda)."""
    j = np.arange(1, (1 << m) - 1, dtype=np.int64)
    shifts = np.arange(m - 1, -1, -1, dtype=np.int64)
    return ((j[None, :] >> shifts[:, None]) & 1).astype(np.int64)


def ray_count(m: int) -> int:
    return (1 << m) - 2


def ray_matrix(m: int, lam: float) -> np.ndarray:
    """The extreme rays of the lambda-DP cone on m symbols, each normalised to sum 1:
    (m, 2^m - 2) floats. They are the points of the ray-product LP (theory.md 6.2)."""
    raw = np.where(ray_patterns(m) == 1, float(lam), 1.0)
    return raw / raw.sum(axis=0, keepdims=True)


def integer_rays(m: int, lam: Fraction) -> np.ndarray:
    """The rays scaled by q for lambda = p / q: entries p (pattern 1) or q (pattern 0), as an
    object array of Python ints (exact; the inequalities of a certificate are homogeneous
    in each ray, so the scale does not matter)."""
    lam = Fraction(lam)
    p, q = lam.numerator, lam.denominator
    return np.array([[p if b else q for b in row] for row in ray_patterns(m).tolist()],
                    dtype=object)


def rr_symbols(m: int, lam: float) -> np.ndarray:
    """m-ary randomized response: keep the symbol with probability lambda / (m - 1 +
    lambda), else release one of the m - 1 others uniformly (Warner 1965; KOV 2014).
    Rows are the true symbol, columns the released one: ((lambda - 1) I + J) / (m - 1 +
    lambda). Every column is a ray (one entry lambda), so RR is a point of the LP."""
    return ((lam - 1.0) * np.eye(m) + np.ones((m, m))) / (m - 1.0 + lam)


def rr_symbols_exact(m: int, lam: Fraction) -> list[list[Fraction]]:
    """The same channel in exact rationals."""
    lam = Fraction(lam)
    den = m - 1 + lam
    return [[(lam if a == b else Fraction(1)) / den for b in range(m)] for a in range(m)]


def binary_mechanism(m: int, lam: float, subset: Sequence[int]) -> np.ndarray:
    """The binary mechanism of KOV 2014 for a set A of symbols: two outputs, output 0 with
    probability lambda / (1 + lambda) when the symbol is in A, else 1 / (1 + lambda). Both
    columns are rays (patterns 1_A and its complement): a staircase mechanism."""
    inside = np.isin(np.arange(m), list(subset))
    high, low = lam / (1.0 + lam), 1.0 / (1.0 + lam)
    first = np.where(inside, high, low)
    return np.stack([first, 1.0 - first], axis=1)


def own_symbols(alphabets: Sequence[int], party: int) -> np.ndarray:
    """x_party (1-based party) of every input."""
    return input_symbols(alphabets)[:, party - 1]


def symbol_label_gains(gain: np.ndarray, alphabets: Sequence[int], party: int
                       ) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """The gains of the merged columns of party i (theory.md 6.3): a label is a decision
    per own symbol, (y_0, ..., y_{m_i - 1}), and gain(x, label) = w(f_i(x), y_{x_i}).
    Returns (n x |Y|^m_i, the labels). For m_i = 2 these are KOV's pairs (y0, y1)."""
    n, width = gain.shape
    own = own_symbols(alphabets, party)
    m = alphabets[party - 1]
    labels = [tuple(int(v) for v in np.unravel_index(j, (width,) * m))
              for j in range(width ** m)]
    out = np.empty((n, len(labels)))
    for col, label in enumerate(labels):
        out[:, col] = gain[np.arange(n), np.asarray(label)[own]]
    return out, labels


def exact_ray_sums(int_rays: Sequence[np.ndarray], num: np.ndarray) -> np.ndarray:
    """out[s] = sum_x prod_i R_i[x_i, s_i] v[x] for every product of rays s (mixed radix
    over the rays, party 1 first), by one pass per party: exact on Python ints. `num` has
    prod m_i rows (and optionally trailing columns, transformed together)."""
    dims = [R.shape[0] for R in int_rays]
    trailing = num.shape[1:]
    t = np.asarray(num, dtype=object).reshape(*dims, -1)
    for axis, R in enumerate(int_rays):
        t = np.moveaxis(np.tensordot(R.T, t, axes=([1], [axis])), 0, axis)
    return t.reshape(-1, *trailing)
