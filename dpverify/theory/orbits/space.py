"""Randomized response on orbits: exact transforms for symmetric problems, without 2^k
tables (docs/theory.md, "Symmetry").

Parties fall into classes c = 1..C of n_c parties that may be permuted freely (equal
privacy levels lambda_c = p_c / q_c, and a function and gain invariant under the
permutations: dpverify.spec.symmetric). An *orbit* of inputs (or of corners, which are
indexed like inputs: corner s releases the bits s) is a vector of weights (w_1..w_C), w_c
the number of ones among class c; there are prod_c (n_c + 1) of them, numbered in mixed
radix with the first class first.

Per class, a corner s of weight j and the inputs x of weight w (KOV 2015, randomized
response: T_s[x] = prod_i (lambda if x_i == s_i else 1) / (1 + lambda)):
    M_c[w, j] = sum_{x : |x| = w} T_s[x]
              = coeff of z^w in (p z + q)^j (p + q z)^(n - j)  /  (p + q)^n
(the generating polynomial: each party contributes (p z + q)/(p + q) when s_i = 1 and
(p + q z)/(p + q) when s_i = 0). Over all classes M[W, J] = prod_c M_c[w_c, j_c]. It gives

* corner sums: for a vector a over inputs that is constant on orbits (a_x = a_W),
      sum_x T_s[x] a_x = sum_W M[W, J] a_W           (s in orbit J)            [S^T a]
* spreads: for a vector v over corners constant on orbits,
      sum_s T_s[x] v_s = sum_J K[W, J] v_J,  K[W, J] = |J| M[W, J] / |W|         [S v]
  (double counting: |W| K[W, J] = |J| M[W, J]);
* the inverse spread, from S_i^-1 = [[p, -q], [-q, p]] / (p - q): the coefficients of
  (p z - q)^j (p - q z)^(n - j) / (p - q)^n in place of M (lambda_c = 1: the identity on
  vectors constant along the class, as in theory/exact.py).

Masses. With values written as *masses* (the total over an orbit: a^_W = |W| a_W for a
vector a over inputs that is constant on orbits, likewise for corners), all three maps are
plain products, because M[W, J] = |W| M[J, W] / |J| (S is symmetric):
    mass of S^T a  =  M a^        mass of S v  =  M v^        mass of S^-1 v  =  N v^
with N the inverse's coefficients. So only M y and N y are ever computed, class by class,
by a polynomial recurrence (class_apply): exact integers over one common denominator,
O(n_c^2) operations per class and column, and nothing of size 2^k is built.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpverify.records import record
from dpverify.theory.exact import lambda_pq

if TYPE_CHECKING:
    from flint import fmpz_mat


@record
class OrbitSpace:
    """The orbits of a partition into classes of sizes `sizes`, with the classes' exact
    privacy levels `lambdas` (one per class)."""

    sizes: tuple[int, ...]
    lambdas: tuple[Fraction, ...]

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(n + 1 for n in self.sizes)

    @property
    def count(self) -> int:
        return math.prod(self.dims)

    @property
    def parties(self) -> int:
        return sum(self.sizes)

    def weights(self, index: int) -> tuple[int, ...]:
        out = []
        for d in reversed(self.dims):
            index, w = divmod(index, d)
            out.append(w)
        return tuple(reversed(out))

    def orbit_sizes(self) -> list[int]:
        """|W| = prod_c C(n_c, w_c) for every orbit, in orbit order."""
        out = [1]
        for n in self.sizes:
            row = binomials(n)
            out = [a * c for a in out for c in row]
        return out


def without_class(space: OrbitSpace, axis: int, weight: int
                  ) -> tuple[OrbitSpace, np.ndarray, np.ndarray]:
    """The orbits of the other classes, for a class of one party whose bit is fixed at
    `weight` (a party agent's own bit, KOV eq. 4): (their space; the orbit of `space` with
    that weight for each of theirs, in their order; and each orbit of `space`'s orbit of
    theirs, dropping the class's weight). With the own bit fixed, the own party's released
    bit is independent of everyone else's, so RR's worst-case LP of that own bit on the
    other classes' orbits has the same optimum: a rule on theirs is a rule on every corner
    orbit (the same on both released own bits) and a prior on theirs one on the orbits of
    that own bit, each with the same value (K's own factor is a row summing to 1)."""
    dims = space.dims
    grid = np.arange(space.count).reshape(dims)
    rest = OrbitSpace(space.sizes[:axis] + space.sizes[axis + 1:],
                      space.lambdas[:axis] + space.lambdas[axis + 1:])
    rows = np.take(grid, weight, axis=axis).ravel()
    theirs = np.broadcast_to(np.expand_dims(np.arange(rest.count).reshape(rest.dims), axis),
                             dims).ravel()
    return rest, rows, theirs


def binomials(n: int) -> list[int]:
    """C(n, 0), ..., C(n, n), each from the last (n multiplications, not n^2)."""
    row = [1]
    for w in range(n):
        row.append(row[-1] * (n - w) // (w + 1))
    return row


@functools.lru_cache(maxsize=32)
def class_matrix_t(p: int, q: int, n: int, inverse: bool = False) -> fmpz_mat:
    """M_c transposed (rows j, columns w: row j holds the coefficients of the corner weight
    j's polynomial) as integers over (p + q)^n; with `inverse`, the coefficients of
    (p z - q)^j (p - q z)^(n - j), over (p - q)^n. Built by the recurrence
    A_(j+1) = A_j (p z + q) / (p + q z), exact division of polynomials."""
    from flint import fmpz_mat, fmpz_poly  # lazy: python-flint only for exact transforms

    sign = -1 if inverse else 1
    up = fmpz_poly([sign * q, p])  # p z + q  (or p z - q)
    down = fmpz_poly([p, sign * q])  # p + q z  (or p - q z)
    column = down ** n
    flat = []
    for j in range(n + 1):
        coeffs = column.coeffs()
        flat.extend(coeffs + [0] * (n + 1 - len(coeffs)))
        if j < n:
            column = column * up // down  # exact: a factor (p + q z) is left to divide
    return fmpz_mat(n + 1, n + 1, flat)


def denominator(p: int, q: int, n: int, inverse: bool = False) -> int:
    return (p - q) ** n if inverse else (p + q) ** n


@record(eq=False)
class OrbitArray:
    """Exact values on orbits: `num` an object array of Python ints of shape (count, cols)
    over the positive common denominator `den`."""

    num: np.ndarray
    den: int

    @staticmethod
    def of(values, den: int = 1) -> OrbitArray:
        return OrbitArray(np.array(values, dtype=object).reshape(len(values), -1), den)

    @staticmethod
    def from_fractions(rows) -> OrbitArray:
        """Rows (one per orbit) of rationals -> one common denominator."""
        flat = [Fraction(v) for row in rows for v in row]
        den = math.lcm(*(f.denominator for f in flat)) if flat else 1
        num = np.array([f.numerator * (den // f.denominator) for f in flat], dtype=object)
        return OrbitArray(num.reshape(len(rows), -1), den)

    def fractions(self) -> list[list[Fraction]]:
        return [[Fraction(int(v), self.den) for v in row] for row in self.num.tolist()]

    def column(self, j: int) -> list[Fraction]:
        return [Fraction(int(v), self.den) for v in self.num[:, j].tolist()]


def class_apply(p: int, q: int, n: int, y: list, inverse: bool = False) -> list:
    """(M_c y)_w = sum_j M_c[w, j] y_j (integers over (p + q)^n), or with the inverse's
    coefficients: the coefficients of sum_j y_j A^j B^(n - j), A = p z + q, B = p + q z
    (A = p z - q, B = p - q z for the inverse), by the recurrence
    D_0 = y_0,  D_j = B D_(j-1) + y_j A^j  (O(n^2) integer operations in python-flint)."""
    from flint import fmpz_poly  # lazy: python-flint only for exact transforms

    sign = -1 if inverse else 1
    A = fmpz_poly([sign * q, p])
    B = fmpz_poly([p, sign * q])
    D = fmpz_poly([int(y[0])])
    power = fmpz_poly([1])
    for j in range(1, n + 1):
        power = power * A
        D = D * B + int(y[j]) * power
    coeffs = [int(v) for v in D.coeffs()]
    return coeffs + [0] * (n + 1 - len(coeffs))


def _apply(space: OrbitSpace, array: OrbitArray, inverse: bool) -> tuple[np.ndarray, int]:
    """(M_1 (x) ... (x) M_C) num (or the inverses'), class by class along the axes, and
    the extra denominator (prod of the class denominators); classes with lambda = 1 under
    `inverse` use the identity (see the module docstring)."""
    dims = space.dims
    cols = array.num.shape[1]
    t = array.num.reshape(*dims, cols)
    scale = 1
    for axis, (n, lam) in enumerate(zip(space.sizes, space.lambdas, strict=True)):
        p, q = lambda_pq(lam)
        if inverse and p == q:
            continue
        moved = np.moveaxis(t, axis, 0)
        shape = moved.shape
        flat = moved.reshape(shape[0], -1)
        out = np.empty_like(flat)
        for c in range(flat.shape[1]):
            out[:, c] = class_apply(p, q, n, flat[:, c].tolist(), inverse)
        t = np.moveaxis(out.reshape(shape), 0, axis)
        scale *= denominator(p, q, n, inverse)
    return t.reshape(array.num.shape[0], cols), scale


def apply_m(space: OrbitSpace, masses: OrbitArray) -> OrbitArray:
    """M applied to masses (see the module docstring, "masses"): the masses of S^T a for
    per-input values a, and of S v for per-corner values v."""
    num, scale = _apply(space, masses, inverse=False)
    return OrbitArray(num, masses.den * scale)


def apply_n(space: OrbitSpace, masses: OrbitArray) -> OrbitArray:
    """The inverse transform on masses: the masses of S^-1 v (vectors constant along every
    lambda = 1 class)."""
    num, scale = _apply(space, masses, inverse=True)
    if scale < 0:
        num, scale = -num, -scale
    return OrbitArray(num, masses.den * scale)


def masses(values: OrbitArray, sizes: list[int]) -> OrbitArray:
    """Per-input (or per-corner) values -> masses: the total over each orbit."""
    return OrbitArray(values.num * np.array(sizes, dtype=object)[:, None], values.den)

