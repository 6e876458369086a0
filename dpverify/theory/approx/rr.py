"""The four-output randomized response RR(epsilon, delta) on one bit, its product over k
parties, and the four rays of a party's factor (docs/theory.md, "Approximate privacy").

**RR(epsilon, delta)** (Kairouz, Oh, Viswanath, *The composition theorem for differential
privacy*, ICML 2015, supplementary material, eqs. (12) and (13)); outputs in the order
(reveal 0, say 0, say 1, reveal 1), lambda = e^epsilon:

    x = 0:  [delta, (1 - delta) lambda / (1 + lambda), (1 - delta) / (1 + lambda), 0]
    x = 1:  [0, (1 - delta) / (1 + lambda), (1 - delta) lambda / (1 + lambda), delta]

With probability delta it reveals the bit with a flag, otherwise it is RR at lambda. Its
privacy region is the whole (epsilon, delta) region, so every (epsilon, delta)-DP mechanism
on one bit is a post-processing of it (ibid., Theorem 2.5: dominance of privacy regions,
Blackwell 1953).

**The four rays.** A party's factor (u, v) = (u(0), u(1)) >= 0 of a transcript column splits
on the two DP corners (lambda, 1), (1, lambda) and the two reveal rays (1, 0), (0, 1), with
reveal parts exactly max(0, u - lambda v) and max(0, v - lambda u) (`ray_split`). The rays
are kept normalised to sum 1; their order is that of RR(epsilon, delta)'s outputs up to the
reveal rays: CORNER_0 = (lambda, 1) / (1 + lambda), CORNER_1 = (1, lambda) / (1 + lambda),
REVEAL_0 = (1, 0), REVEAL_1 = (0, 1). RR(epsilon, delta)'s columns are
delta REVEAL_0, (1 - delta) CORNER_0, (1 - delta) CORNER_1 and delta REVEAL_1.

Exact (Fractions) when lambda and delta are Fractions, floats otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.theory.protocols.transcripts import Transcripts, propagate

Number = Fraction | float

CORNER_0, CORNER_1, REVEAL_0, REVEAL_1 = 0, 1, 2, 3
RAY_NAMES = ("corner0", "corner1", "reveal0", "reveal1")
# RR(epsilon, delta)'s outputs, in order, as rays: reveal 0, say 0, say 1, reveal 1
RR_OUTPUT_RAYS = (REVEAL_0, CORNER_0, CORNER_1, REVEAL_1)


def _exact(*values: object) -> bool:
    return all(isinstance(v, Fraction | int) for v in values)


def rr_delta_kernel(lam: Number, delta: Number) -> list[list[Number]]:
    """RR(epsilon, delta)'s kernel rows (module docstring): rows x = 0, 1; columns (reveal
    0, say 0, say 1, reveal 1). Exact when `lam` and `delta` are Fractions."""
    if not lam >= 1 or not 0 <= delta < 1:
        raise ValueError(f"RR(epsilon, delta) needs lambda >= 1 and 0 <= delta < 1: "
                         f"{lam}, {delta}")
    if _exact(lam, delta):
        lam, delta = Fraction(lam), Fraction(delta)
        one: Number = Fraction(1)
        zero: Number = Fraction(0)
    else:
        lam, delta, one, zero = float(lam), float(delta), 1.0, 0.0
    keep = (one - delta) * lam / (one + lam)
    flip = (one - delta) / (one + lam)
    return [[delta, keep, flip, zero], [zero, flip, keep, delta]]


def rr_delta_product(lambdas: Sequence[Number], deltas: Sequence[Number]) -> Transcripts:
    """The product of the parties' RR(epsilon_i, delta_i) as a protocol (party i speaks in
    round i, 4 messages): P(t | x) on the 4^k transcripts, exactly (integers over one
    denominator) when every level is a Fraction, floats otherwise."""
    k = len(lambdas)
    if len(deltas) != k:
        raise ValueError(f"{k} lambdas and {len(deltas)} deltas")
    rows = [rr_delta_kernel(lam, d) for lam, d in zip(lambdas, deltas, strict=True)]
    exact = all(_exact(lam, d) for lam, d in zip(lambdas, deltas, strict=True))
    kernels: list[np.ndarray] = []
    den = 1
    for i, K in enumerate(rows):
        if exact:
            fr = [Fraction(v) for row in K for v in row]
            d = math.lcm(*(v.denominator for v in fr))
            array = np.array([int(v * d) for v in fr], dtype=object).reshape(1, 2, 4)
            den *= d
        else:
            array = np.array(K, dtype=np.float64).reshape(1, 2, 4)
        kernels.append(np.repeat(array, 4 ** i, axis=0))
    P = propagate((2,) * k, list(range(1, k + 1)), kernels)
    return Transcripts((2,) * k, (4,) * k, P, den if exact else 1, exact)


def four_rays(lam: Number) -> list[list[Number]]:
    """The normalised rays as a 2 x 4 matrix (rows: the bit, columns: CORNER_0, CORNER_1,
    REVEAL_0, REVEAL_1). Exact for a Fraction `lam`."""
    if _exact(lam):
        x = Fraction(lam)
        s = 1 + x
        return [[x / s, 1 / s, Fraction(1), Fraction(0)],
                [1 / s, x / s, Fraction(0), Fraction(1)]]
    y = float(lam)
    t = 1.0 + y
    return [[y / t, 1.0 / t, 1.0, 0.0], [1.0 / t, y / t, 0.0, 1.0]]


def ray_split(u: Number, v: Number, lam: Number) -> list[Number]:
    """Coefficients c >= 0 with (u, v) = sum_r c_r ray_r (the normalised rays of
    `four_rays`); the reveal coefficients are exactly max(0, u - lam v) and
    max(0, v - lam u) (issue 20, point 2). Exact for Fractions."""
    if not (u >= 0 and v >= 0 and lam >= 1):
        raise ValueError(f"a factor needs u, v >= 0 and lambda >= 1: {u}, {v}, {lam}")
    zero = Fraction(0) if _exact(u, v, lam) else 0.0
    if u >= lam * v:  # (u, v) = v (lam, 1) + (u - lam v) (1, 0)
        return [v * (1 + lam), zero, u - lam * v, zero]
    if v >= lam * u:
        return [zero, u * (1 + lam), zero, v - lam * u]
    # strictly inside the cone (then lam > 1): alpha (lam, 1) + beta (1, lam)
    alpha = (lam * u - v) / (lam * lam - 1)
    beta = (lam * v - u) / (lam * lam - 1)
    return [alpha * (1 + lam), beta * (1 + lam), zero, zero]
