"""Randomized response and rank-one DP points (Kairouz, Oh, Viswanath 2015, Section 3).

Input order is big-endian: x1 is the most significant bit of an input's index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def rr_channel(lam: float) -> np.ndarray:
    """S_i = [[lambda, 1], [1, lambda]] / (1 + lambda): party i's bit flipped w.p. 1/(1+lambda).

    Rows are the true bit, columns the released bit (KOV, randomized response, Thm 3.1).
    Its columns are the two extreme rays (lambda, 1) and (1, lambda) of the DP cone.
    """
    return np.array([[lam, 1.0], [1.0, lam]], dtype=np.float64) / (1.0 + lam)


def kron_apply(factors: Sequence[np.ndarray], v: np.ndarray,
               dtype: type = np.float64) -> np.ndarray:
    """(F_1 (x) ... (x) F_k) @ v in O(k * size) by k passes of small mixing (design.md).

    Each F_j is (r_j, c_j); `v` has prod(c_j) rows (big-endian multi-index, axis 1 first)
    and any number of trailing columns. Returns prod(r_j) rows, computed in `dtype`.
    """
    v = np.asarray(v, dtype=dtype)
    trailing = v.shape[1:]
    # Pass j sees the array as (rows done, c_j, the rest) and mixes its middle axis by one
    # broadcast matmul: no axis moved (numpy's tensordot and moveaxis cost 0.1 ms a pass
    # in Python, most of a pass at k = 9; measured in float64 3x faster there, 1.3-2x at
    # k = 16-20; in long double, whose arithmetic dominates, about 1.2x).
    done, rest = 1, v.size
    for f in factors:
        rows, cols = f.shape
        rest //= cols
        v = np.matmul(f, v.reshape(done, cols, rest))
        done *= rows
    return v.reshape(done, *trailing)


def rr_matrix(lambdas: Sequence[float]) -> np.ndarray:
    """P_RR = S_1 (x) ... (x) S_k, a 2^k x 2^k row-stochastic matrix (rows x, columns tau).

    Its columns are the 2^k corner points c_1 (x) ... (x) c_k, each normalised to sum 1.
    """
    out = np.ones((1, 1))
    for lam in lambdas:
        out = np.kron(out, rr_channel(lam))
    return out


def segment_grid(lam: float, m: int) -> np.ndarray:
    """m points of party i's DP segment: (a, 1-a) for a from 1/(1+lam) to lam/(1+lam).

    The normalised DP factors u = (u0, u1), u0 + u1 = 1, lambda-DP, form exactly this
    segment; its end points are the two extreme rays (m = 2 gives the corners).
    Returns a 2 x m array (columns are the points).
    """
    lo, hi = 1.0 / (1.0 + lam), lam / (1.0 + lam)
    a = np.linspace(hi, lo, m)
    return np.vstack([a, 1.0 - a])


def random_rank_one(lambdas: Sequence[float], count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` random rank-one DP tensors (2^k x count), factors uniform on each segment."""
    out = np.ones((1, count))
    for lam in lambdas:
        lo, hi = 1.0 / (1.0 + lam), lam / (1.0 + lam)
        a = rng.uniform(lo, hi, size=count)
        factor = np.vstack([a, 1.0 - a])
        out = (out[:, None, :] * factor[None, :, :]).reshape(-1, count)
    return out
