"""Rigorous brackets in floating point: randomized response's transforms with outward-
rounded error bounds (docs/theory.md, "Interval brackets").

An exact certificate costs integers of thousands of digits at large k; the same bracket
[value, bound] is proved by floating-point arithmetic whose rounding errors are bounded.
Two arithmetics, each an enclosure of the exact number:

* numpy floats for the Kronecker transform S v on all 2^k inputs (KOV 2015, eq. (9):
  S = S_1 (x) ... (x) S_k, S_i = [[p, q], [q, p]] / (p + q)), on vectors with no negative
  entry. Each pass computes new0 = a lo + b hi and new1 = b lo + a hi with the weights
  a = fl(p / (p + q)), b = fl(q / (p + q)) correctly rounded. In IEEE double precision
  (u = 2^-53, round to nearest, no fused operation in numpy's ufuncs), every product and
  sum is (exact)(1 + d), |d| <= u, plus, for a product in the subnormal range, an absolute
  error below 2^-1074 (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
  2.1 and 2.2). Nothing is negative, so nothing cancels: with the weight, the product and
  the sum, every term of an entry of S v carries at most 3 factors (1 + d) per pass, and
  since the exact weights of a row sum to 1,
      (1 - u)^(3k) c - 2k 2^-1074  <=  c_computed  <=  (1 + u)^(3k) c + 2k 2^-1074
  for every entry c of S v (`KRON_ROUNDINGS`). `upper_end` and `lower_end` invert this for
  a computed number, with the count of roundings along its way (`Budget`).
* python-flint's arb balls (midpoint and radius, every operation outward rounded) for the
  orbit transforms: the generating polynomials of theory/orbits/space.py, their products
  as a class's matrix applied to every fiber at once by arb_mat (`class_matrix`), or for a
  large class multiplied by a divide-and-conquer per fiber (`class_transform`); arb's
  exponents never under- or overflow (coefficients such as 3^-10000 keep their relative
  precision).

Only brackets come out of here: the caller declares an upper end of the bound and a lower
end of the value, and the independent checker (dpverify/checker/intervals.py) encloses
them again by its own arithmetic.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpverify.records import record
from dpverify.theory.exact import lambda_pq

if TYPE_CHECKING:
    from flint import arb, arb_mat, arb_poly

UNIT = Fraction(1, 1 << 53)  # the unit roundoff of IEEE double precision
TINY = Fraction(1, 1 << 1074)  # bounds the absolute error of a product that underflows
KRON_ROUNDINGS = 3  # per pass of the Kronecker transform: the weight, the product, the sum
# Declared ends are rounded outward to multiples of 2^-ROUND_BITS (times the gains' span).
ROUND_BITS = 96


# --------------------------------------------------------------------------- floats


def rr_weights(lam: Fraction) -> tuple[float, float]:
    """(p / (p + q), q / (p + q)) for lambda = p / q, each correctly rounded (float of a
    Fraction rounds correctly)."""
    p, q = lambda_pq(lam)
    return float(Fraction(p, p + q)), float(Fraction(q, p + q))


def kron_floats(lambdas: Sequence[Fraction], v: np.ndarray) -> np.ndarray:
    """S v in floats, S = S_1 (x) ... (x) S_k at exact rational lambdas (v: (2^k,) or
    (2^k, c), no negative entry). Big-endian: axis 0 of the reshaped array is party 1.
    Exactly the operations the error bound of the module docstring counts."""
    k = len(lambdas)
    shape = v.shape
    t = np.asarray(v, dtype=np.float64).reshape((2,) * k + (-1,))
    for axis, lam in enumerate(lambdas):
        a, b = rr_weights(lam)
        lo = np.take(t, 0, axis=axis)
        hi = np.take(t, 1, axis=axis)
        t = np.stack([a * lo + b * hi, b * lo + a * hi], axis=axis)
    return t.reshape(shape)


@record
class Budget:
    """The error of a computed non-negative number against the exact one: `roundings`
    factors (1 + d), |d| <= u, along the way of every term, and an absolute error of at
    most `absolute` (underflow), so that
        (1 - u)^r c - absolute <= computed <= (1 + u)^r c + absolute."""

    roundings: int
    absolute: Fraction = Fraction(0)

    def then(self, roundings: int = 0, absolute: Fraction = Fraction(0)) -> Budget:
        return Budget(self.roundings + roundings, self.absolute + absolute)

    def times(self, count: int) -> Budget:
        """The budget of a sum of `count` such numbers (its exact sum, not yet rounded)."""
        return Budget(self.roundings, self.absolute * count)


def kron_budget(k: int) -> Budget:
    """The error of every entry of kron_floats on exact inputs (module docstring)."""
    return Budget(KRON_ROUNDINGS * k, 2 * k * TINY)


@functools.lru_cache(maxsize=256)
def _factor(roundings: int, up: bool) -> Fraction:
    """1 / (1 - u)^r (up) or 1 / (1 + u)^r (down), exactly."""
    return 1 / (1 - UNIT) ** roundings if up else 1 / (1 + UNIT) ** roundings


def upper_end(computed: float | Fraction, budget: Budget) -> Fraction:
    """An upper end of the exact number: (computed + absolute) / (1 - u)^r."""
    return (Fraction(computed) + budget.absolute) * _factor(budget.roundings, True)


def lower_end(computed: float | Fraction, budget: Budget) -> Fraction:
    """A lower end of the exact (non-negative) number: (computed - absolute) / (1 + u)^r,
    or 0."""
    return max(Fraction(0), Fraction(computed) - budget.absolute) * _factor(budget.roundings,
                                                                          False)


def exact_sum(values: np.ndarray) -> Fraction:
    """The exact sum of finite floats (math.fsum's correctly rounded sum, whose error is
    at most u of it, is not needed: floats are dyadic rationals, summed here exactly by
    their integer significands)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if flat.size == 0:
        return Fraction(0)
    mantissa, exponent = np.frexp(flat)
    ints = np.ldexp(mantissa, 53).astype(np.int64)  # exact: |m| < 1, 53 bits
    low = int(exponent.min()) - 53
    total = 0
    for e in np.unique(exponent).tolist():
        chunk = ints[exponent == e]
        # sum int64 significands in pieces that cannot overflow (2^53 * 2^9 < 2^63)
        part = sum(int(chunk[i:i + 512].sum()) for i in range(0, chunk.size, 512))
        total += part << (int(e) - 53 - low)
    return Fraction(total) * Fraction(2) ** low


def ceil_to(x: Fraction, bits: int = ROUND_BITS) -> Fraction:
    """The smallest multiple of 2^-bits that is >= x."""
    return Fraction(-((-x.numerator << bits) // x.denominator), 1 << bits)


def floor_to(x: Fraction, bits: int = ROUND_BITS) -> Fraction:
    """The largest multiple of 2^-bits that is <= x."""
    return Fraction((x.numerator << bits) // x.denominator, 1 << bits)


# --------------------------------------------------------------------------- arb balls

PRECISION = 80  # bits of arb's midpoints: brackets near 1e-20 of their values


def ball(x: Fraction | int) -> arb:
    """An exact rational as an arb ball (exact when it has a short binary expansion, else
    enclosing it)."""
    from flint import arb, fmpq  # lazy: python-flint when used

    x = Fraction(x)
    return arb(fmpq(x.numerator, x.denominator))


def upper_of(b: arb) -> Fraction:
    """The upper end of a ball, exactly (arb's upper end is a binary floating point)."""
    return _arf_fraction(b.upper())


def lower_of(b: arb) -> Fraction:
    return _arf_fraction(b.lower())


def _arf_fraction(x) -> Fraction:
    man, exp = x.man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


class ArbPowers:
    """Powers of the normalised generating polynomials A = (p z + q) / (p + q) and
    B = (p + q z) / (p + q) of one class (theory/orbits/space.py), as arb polynomials,
    each computed once."""

    def __init__(self, p: int, q: int):
        from flint import arb_poly  # lazy: python-flint when used

        s = ball(p + q)
        self.A = {1: arb_poly([ball(q) / s, ball(p) / s])}
        self.B = {1: arb_poly([ball(p) / s, ball(q) / s])}

    def power(self, which: dict, t: int) -> arb_poly:
        if t == 0:
            from flint import arb_poly  # lazy: python-flint when used

            return arb_poly([1])
        if t not in which:
            half = t // 2
            which[t] = self.power(which, half) * self.power(which, t - half)
        return which[t]


def class_transform(p: int, q: int, n: int, y: Sequence[arb],
                    powers: ArbPowers | None = None) -> list[arb]:
    """sum_j y_j A^j B^(n - j) (A, B of ArbPowers), coefficient by coefficient: the masses
    M y of one class (theory/orbits/space.py, `class_apply`, with the normalised
    polynomials), by divide and conquer:
        T(l, r) = sum_(l <= j < r) y_j A^(j - l) B^(r - 1 - j)
                = T(l, m) B^(r - m) + A^(m - l) T(m, r),
    O(M(n) log n) operations on arb polynomials instead of n^2 on integers."""
    from flint import arb, arb_poly  # lazy: python-flint when used

    pw = powers or ArbPowers(p, q)

    def rec(lo: int, hi: int) -> arb_poly:
        if hi - lo == 1:
            return arb_poly([y[lo]])
        mid = (lo + hi) // 2
        return rec(lo, mid) * pw.power(pw.B, hi - mid) + pw.power(pw.A, mid - lo) * rec(mid, hi)

    coeffs = rec(0, n + 1).coeffs()
    return list(coeffs) + [arb(0)] * (n + 1 - len(coeffs))


# A class of at most this many parties is mixed by its (n + 1) x (n + 1) matrix in one
# arb_mat product over all fibers of a column; a larger one fiber by fiber by
# class_transform (no matrix of (n + 1)^2 balls). Measured: at 128 parties the matrix
# costs 17-25 ms to build and is 3x faster than the recursion from 50 fibers on; at
# 600 parties it costs 1.3-1.8 s, where one fiber's recursion takes 10 ms.
MATRIX_PARTIES = 128


def class_matrix(p: int, q: int, n: int) -> arb_mat:
    """The matrix of class_transform: column j holds the coefficients of A^j B^(n - j)
    (A, B of ArbPowers), so that class_matrix(...) * y = class_transform(..., y)."""
    from flint import arb, arb_mat, arb_poly  # lazy: python-flint when used

    pw = ArbPowers(p, q)
    a_pows, b_pows = [arb_poly([1])], [arb_poly([1])]
    for _ in range(n):
        a_pows.append(a_pows[-1] * pw.A[1])
        b_pows.append(b_pows[-1] * pw.B[1])
    columns = []
    for j in range(n + 1):
        coeffs = list((a_pows[j] * b_pows[n - j]).coeffs())
        columns.append(coeffs + [arb(0)] * (n + 1 - len(coeffs)))
    return arb_mat(columns).transpose()


def orbit_transform(sizes: Sequence[int], lambdas: Sequence[Fraction],
                    columns: list[list[arb]]) -> list[list[arb]]:
    """M applied to masses on orbits (mixed radix, first class first), class by class
    along the axes of the orbit grid, for each column (a list of arb per orbit): the
    column as an array of balls (numpy objects, one axis per class), each class's axis
    brought to the front and its fibers mixed at once (class_matrix), or fiber by fiber
    (class_transform) for a class above MATRIX_PARTIES. Column by column: one product of
    every column at once was slower (measured: 0.39 s against 0.31 s for 41 columns on
    4,536 orbits; its matrices leave the cache)."""
    from flint import arb_mat  # lazy: python-flint when used

    with precision(PRECISION):
        mixers = []
        for n, lam in zip(sizes, lambdas, strict=True):
            p, q = lambda_pq(lam)
            mixers.append((n, p, q, class_matrix(p, q, n) if n <= MATRIX_PARTIES else None,
                           ArbPowers(p, q)))
        out = []
        for column in columns:
            data = np.empty(len(column), dtype=object)
            data[:] = column
            data = data.reshape([n + 1 for n in sizes])
            for axis, (n, p, q, matrix, powers) in enumerate(mixers):
                front = np.moveaxis(data, axis, 0)
                fibers = front.reshape(n + 1, -1)
                if matrix is not None:
                    mixed = np.array((matrix * arb_mat(fibers.tolist())).tolist(), dtype=object)
                else:
                    mixed = fibers.copy()
                    for f in range(fibers.shape[1]):
                        if not all(v == 0 for v in fibers[:, f]):
                            mixed[:, f] = class_transform(p, q, n, list(fibers[:, f]), powers)
                data = np.moveaxis(mixed.reshape(front.shape), 0, axis)
            out.append(list(data.reshape(-1)))
        return out


class precision:
    """arb's working precision for a block (restored afterwards)."""

    def __init__(self, bits: int):
        self.bits = bits

    def __enter__(self):
        from flint import ctx  # lazy: python-flint when used

        self.old = ctx.prec
        ctx.prec = self.bits
        return self

    def __exit__(self, *exc):
        from flint import ctx  # lazy: python-flint when used

        ctx.prec = self.old
        return False


__all__ = ["KRON_ROUNDINGS", "MATRIX_PARTIES", "PRECISION", "TINY", "UNIT", "ArbPowers",
           "Budget", "ball", "ceil_to", "class_matrix", "class_transform", "exact_sum",
           "floor_to", "kron_budget", "kron_floats", "lower_end", "lower_of",
           "orbit_transform", "precision", "rr_weights", "upper_end", "upper_of"]
