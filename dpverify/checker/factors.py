"""Per-axis matrices and the one transform of the checker (docs/theory.md 2.5, 2.8, 6.2,
7.4): every inequality and accuracy of a certificate is a sum

    out[s] = sum_x prod_i F_i[x_i][s_i] v[x]

over the points x of a grid with one axis per party (its bit or symbol) or per class of
parties (the number of ones in the class), mixed radix with the first axis most
significant, for one matrix F_i per axis: RR's corners (theory.md 1.3), a class's orbit
transform (2.8), the extreme rays of a party's DP cone (6.2), the four rays with delta and
their hockey-stick parts (7.4), or a protocol's channel read backwards (F[t][x] = P(t | x)).
A factor holds integers, its true entries times `scale` > 0 (the interval checker's hold
arb balls, scale 1, and use the same transform).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from math import comb
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

# A class of at most this many parties is mixed by its (n + 1) x (n + 1) matrix; a larger
# one by Horner's scheme on its polynomials, point by point (the same sums, no matrix).
SMALL_CLASS = 16


class Factor(Protocol):
    """One axis's matrix F[a][s]: `points` values of a (the input side), `size` values of s,
    integer entries `scale` times the true ones."""

    points: int
    size: int
    scale: int

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        """chunks[a]: the entries at point a of this axis (the other axes alike, in one
        order); returns out[s] = sum_a F[a][s] chunks[a], entry by entry."""
        ...


def transform(factors: Sequence[Factor], column: list[T]) -> list[T]:
    """out[s] = sum_x prod_i F_i[x_i][s_i] column[x] (times the product of the scales),
    one pass per axis: the first axis is mixed and moved to the end, so that after the
    last pass every axis is back in its place."""
    values = column
    for factor in factors:
        rest = len(values) // factor.points
        chunks = [values[a * rest:(a + 1) * rest] for a in range(factor.points)]
        out = values[:1] * (rest * factor.size)  # every entry is set below
        for s, chunk in enumerate(factor.mix(chunks)):
            out[s::factor.size] = chunk
        values = out
    return values


def weighted_sum(weights: Sequence[Any], chunks: Sequence[list[Any]]) -> list[Any]:
    """sum_a weights[a] chunks[a], entry by entry (zero weights skipped)."""
    out: list[Any] | None = None
    for w, chunk in zip(weights, chunks, strict=True):
        if w:
            out = [w * v for v in chunk] if out is None else \
                [x + w * v for x, v in zip(out, chunk, strict=True)]
    return out if out is not None else [0 * v for v in chunks[0]]


class Dense:
    """A matrix given by its entries: F[a][s] = matrix[a][s] / scale."""

    def __init__(self, matrix: Sequence[Sequence[int]], scale: int = 1):
        self.matrix = [list(row) for row in matrix]
        self.points, self.size, self.scale = len(self.matrix), len(self.matrix[0]), scale

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        return [weighted_sum([row[s] for row in self.matrix], chunks) for s in range(self.size)]


def transposed(rows: Sequence[Sequence[int]], scale: int) -> Dense:
    """F[t][x] = rows[x][t] / scale: a channel (one row per input) read backwards."""
    return Dense(list(zip(*rows, strict=True)), scale)


class ClassOrbits:
    """A class of n parties at lambda = p / q, on the number of ones 0..n (theory.md 2.8):
    F[a][t] = the coefficient of z^t in (p z + q)^a (p + q z)^(n - a), over (p + q)^n, so
    F[a][t] = M[t, a], the sum over the inputs of weight t of RR's corner T_s, s of weight
    a. On masses (an orbit's value times its size) both directions are F: sum_W F[W][J]
    |W| v_W = |J| sum_x T_s[x] v[x] for the corners s of weight J, and sum_J F[J][W] |J| Q_J
    = |W| sum_s P_RR(s | x) Q_s for the inputs x of weight W, as |W| M[J, W] = |J| M[W, J].
    For n = 1, F = [[p, q], [q, p]]: RR's corners on one bit."""

    def __init__(self, n: int, lam: Fraction):
        self.n, self.p, self.q = n, lam.numerator, lam.denominator
        self.points = self.size = n + 1
        self.scale, p, q = (self.p + self.q) ** n, self.p, self.q
        # [z^t]: sum_j C(a, j) p^j q^(a-j) C(n-a, t-j) q^(t-j) p^(n-a-t+j), binomial theorem
        self.rows = [[sum(comb(a, j) * comb(n - a, t - j) * p ** (n - a - t + 2 * j)
                          * q ** (a + t - 2 * j) for j in range(max(0, t + a - n), min(a, t) + 1))
                      for t in range(n + 1)] for a in range(n + 1)] if n <= SMALL_CLASS else []

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        if self.rows:
            return Dense(self.rows).mix(chunks)
        fibers = [self.horner(list(fiber)) for fiber in zip(*chunks, strict=True)]
        return [list(column) for column in zip(*fibers, strict=True)]

    def horner(self, y: list[int]) -> list[int]:
        """The coefficients of sum_a y_a (p z + q)^a (p + q z)^(n - a): D_0 = y_0,
        D_a = (p + q z) D_(a-1) + y_a (p z + q)^a (python-flint's polynomials)."""
        from flint import fmpz_poly

        up, down = fmpz_poly([self.q, self.p]), fmpz_poly([self.p, self.q])
        total, power = fmpz_poly([y[0]]), fmpz_poly([1])
        for value in y[1:]:
            power *= up
            total = total * down + value * power
        return coefficients(total, self.n)


def coefficients(poly: Any, n: int) -> list[int]:
    """The n + 1 coefficients of an integer polynomial of degree at most n, z^0 first."""
    coeffs = [int(c) for c in poly.coeffs()]
    return coeffs + [0] * (n + 1 - len(coeffs))
