"""Float rows made distributions: exactly (rationals summing to exactly 1) or cleanly (floats),
for the rules, priors, mechanisms and weights that solvers return (design.md: floats
propose, exact arithmetic proves).

Every function here first maps NaN, +-inf and negative entries to 0 (a solver's rounding
leaves entries a hair below 0, and a failed solve that still reports "optimal" can leave
NaN). Then:

* a row with mass is rounded entry by entry (`Rounding`: the float's exact binary value,
  the nearest small rational, or a multiple of 2^-bits) and completed to sum exactly 1
  (`SCALE`: divided by its exact total; `LARGEST`: its largest entry absorbs what the row
  lacks or has too much, which keeps one denominator; if the largest entry would go
  negative, the row becomes a point mass on it);
* **a row without mass (every entry 0 after the first step, or rounded to 0) becomes the
  uniform distribution on its support** (the whole row unless `support` is given). Any
  distribution keeps a rule, a prior, a mechanism or a post-processing feasible; only
  tightness changes, and an LP solution whose rows sum to 1 has no such row.

A caller for which "no mass" means "no hint" (a missing prior, a dropped candidate, an
infinite bound) asks `has_mass` first and decides itself: that is its decision, not a
second rule for empty rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from fractions import Fraction

import numpy as np

from dpverify.records import record


@record
class Rounding:
    """How a non-negative float becomes a rational: its exact binary value (`EXACT`), the
    nearest rational with denominator at most `denominator` (`snap`: an exact optimum such
    as 3/4 reads as itself), or a multiple of 2^-bits (`dyadic`, to nearest or `floor`:
    one denominator for a whole row, so that exact transforms of it stay small)."""

    denominator: int = 0
    bits: int = 0
    floor: bool = False

    def __call__(self, v: float) -> Fraction:
        if self.denominator:
            if v >= 0.0 and v * (4 * self.denominator) < 1.0:
                # below 1 / (2 denominator) the nearest such rational is 0 (any positive
                # one is at least 1 / denominator away): most entries of an interior
                # point's rule on many outputs
                return _ZERO
            return nearest_rational(v, self.denominator)
        if self.bits:
            scaled = math.ldexp(v, self.bits)
            return Fraction(math.floor(scaled) if self.floor else round(scaled), 1 << self.bits)
        return Fraction(v)


EXACT = Rounding()
_ZERO = Fraction(0)


def nearest_rational(v: float, max_denominator: int) -> Fraction:
    """Fraction(v).limit_denominator(max_denominator), the same value, in integers: the
    continued fraction of v's exact binary value, and the last convergent against the best
    semiconvergent compared by cross-multiplication (ties to the convergent, as there)
    where limit_denominator builds and subtracts Fractions (2.5-4x faster: 10 -> 4 us an
    entry at 10^12)."""
    if max_denominator < 1:
        raise ValueError("max_denominator should be at least 1")
    n, d = v.as_integer_ratio()
    if d <= max_denominator:
        return Fraction(n, d)
    num, den = n, d
    p0, q0, p1, q1 = 0, 1, 1, 0
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > max_denominator:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (max_denominator - q0) // q1
    semi_p, semi_q = p0 + k * p1, q0 + k * q1
    # |p1 / q1 - v| <= |semi_p / semi_q - v|, both sides times q1 semi_q den
    if abs(p1 * den - num * q1) * semi_q <= abs(semi_p * den - num * semi_q) * q1:
        return Fraction(p1, q1)
    return Fraction(semi_p, semi_q)


def snap(denominator: int) -> Rounding:
    return Rounding(denominator=denominator)


def dyadic(bits: int, floor: bool = False) -> Rounding:
    return Rounding(bits=bits, floor=floor)


class Completion(Enum):
    SCALE = "scale"  # divide by the exact total
    LARGEST = "largest"  # the largest entry absorbs the remainder


SCALE, LARGEST = Completion.SCALE, Completion.LARGEST


def finite_mass(values) -> np.ndarray:
    """The entries as floats (float64, or the floating type they have: the interior-point
    method works in extended precision), with NaN, +-inf and negatives set to 0."""
    v = np.asarray(values)
    if not np.issubdtype(v.dtype, np.floating):
        v = v.astype(np.float64)
    return np.where(np.isfinite(v) & (v > 0), v, v.dtype.type(0))


def has_mass(values, min_total: float = 0.0) -> bool:
    """Whether the entries (NaN, infinities and negatives as 0) total more than min_total."""
    return float(finite_mass(values).sum()) > min_total


def _support(width: int, support: Sequence[int] | None) -> list[int]:
    return list(range(width)) if support is None else [int(i) for i in support]


def exact_row(values, *, rounding: Rounding = EXACT, completion: Completion = SCALE,
              support: Sequence[int] | None = None) -> list[Fraction]:
    """One row as exact rationals summing to exactly 1 (module docstring); with `support`,
    entries outside it are 0."""
    floats = finite_mass(values).tolist()
    where = _support(len(floats), support)
    out = [Fraction(0)] * len(floats)
    positive = [i for i in where if floats[i] > 0]
    if len(positive) == 1 and floats[positive[0]] == 1.0:  # a deterministic row (most)
        out[positive[0]] = Fraction(1)
        return out
    # a zero rounds to 0 in every rounding: not rounded (most entries of a rule on many
    # outputs, where limit_denominator cost 18 us an entry)
    exact = {i: rounding(floats[i]) if floats[i] > 0 else _ZERO for i in where}
    total = sum((exact[i] for i in positive), _ZERO)
    if total <= 0:
        for i in where:
            out[i] = Fraction(1, len(where))
        return out
    if completion is SCALE:
        for i, v in exact.items():
            out[i] = v / total
        return out
    # the largest entry (rounded; ties to the larger float, then to the first) absorbs it
    top = max(where, key=lambda i: (exact[i], floats[i], -i))
    exact[top] += 1 - total
    if exact[top] < 0:  # the rounded row held more than 1 + its largest entry: a vertex
        exact = {i: Fraction(int(i == top)) for i in where}
    for i, v in exact.items():
        out[i] = v
    return out


def exact_stochastic(matrix, *, rounding: Rounding = EXACT,
                     completion: Completion = SCALE) -> list[list[Fraction]]:
    """Every row of a matrix made an exact distribution (exact_row)."""
    return [exact_row(row, rounding=rounding, completion=completion)
            for row in np.asarray(matrix, dtype=np.float64).reshape(len(matrix), -1)]


def exact_distribution(values, support: Sequence[int] | None = None, *,
                       rounding: Rounding = EXACT) -> list[Fraction]:
    """Weights made an exact distribution on `support` (default every entry), divided by
    their exact total, so that they sum to exactly 1."""
    return exact_row(values, rounding=rounding, support=support)


def exact_total(values) -> Fraction:
    """The exact total of the entries' binary values (NaN, infinities, negatives as 0): the
    divisor of exact_distribution, for duals that scale with the weights."""
    return sum((Fraction(v) for v in finite_mass(values).tolist()), Fraction(0))


def clean_stochastic(matrix) -> np.ndarray:
    """The float twin of exact_stochastic: each row non-negative and divided by its sum;
    a row without mass uniform."""
    x = finite_mass(matrix)
    sums = x.sum(axis=1, keepdims=True)
    return np.where(sums > 0, x / np.where(sums > 0, sums, 1.0), 1.0 / x.shape[1])


def clean_distribution(values, support: Sequence[int] | None = None) -> np.ndarray:
    """The float twin of exact_distribution: weights on `support` (default every entry; 0
    elsewhere) non-negative and summing to 1, uniform on the support without mass."""
    v = finite_mass(values)
    where = _support(v.size, support)
    out = np.zeros(v.size, dtype=v.dtype)
    total = v[where].sum()
    out[where] = v[where] / total if total > 0 else 1.0 / len(where)
    return out
