"""The protocol's matrix C[a, c] in RR's worst-case decision LP (theory/worst_lp.py), in the
four descriptions of its rows and columns: C = P_RR on the inputs (`KronChannel`), its sums
over orbits of outputs at representative inputs (`OrbitSumChannel`), the spread K of the
classes' orbits (`ClassChannel`, theory/orbits/space.py), or an explicit protocol's P(t | x)
(`TranscriptChannel`). Each gives C exactly (integers over a denominator per row) and as
floats, computed on demand; only exact solves of small LPs ask for the exact C.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpverify.theory.exact import Scaled, lambda_pq, rr_apply
from dpverify.theory.rr import kron_apply, rr_channel

if TYPE_CHECKING:  # the classes' channels: imported by those that build them
    from dpverify.theory.orbits.space import OrbitSpace


class Channel:
    """C[a, c] for the rows of one block: exact (integers over a positive denominator per
    row) or as floats, computed on demand."""

    columns: int
    factors: tuple[np.ndarray, ...] | None = None  # Kronecker factors (over_inputs only)

    def exact(self) -> tuple[np.ndarray, np.ndarray]:
        """(num, den): C[a, c] = num[a, c] / den[a], Python integers (object arrays)."""
        raise NotImplementedError

    def floats(self) -> np.ndarray:
        raise NotImplementedError

    def live(self, exact: bool) -> np.ndarray:
        """The columns in the LP (every one, unless some row never reaches it)."""
        return np.arange(self.columns)

    def restricted(self, rows: np.ndarray) -> Channel:
        """The same channel on other rows (row indices of the same space)."""
        raise NotImplementedError


def kron_rows(factors: Sequence[np.ndarray], dims: Sequence[int], rows: np.ndarray
              ) -> np.ndarray:
    """Rows of F_1 (x) ... (x) F_k without the product: row r (mixed radix over `dims`,
    the first factor most significant) is the outer product of the factors' rows."""
    out = np.ones((rows.size, 1))
    rest = np.asarray(rows, dtype=np.int64)
    digits = []
    for d in reversed(dims):
        rest, digit = np.divmod(rest, d)
        digits.append(digit)
    for f, digit in zip(factors, reversed(digits), strict=True):
        out = (out[:, :, None] * np.asarray(f)[digit][:, None, :]).reshape(rows.size, -1)
    return out


class KronChannel(Channel):
    def __init__(self, lambdas: Sequence, rows: np.ndarray):
        self.lambdas, self.rows = tuple(lambdas), rows
        self.columns = 1 << len(self.lambdas)
        self.kron = tuple(rr_channel(float(lam)) for lam in self.lambdas)
        self.factors = self.kron

    @functools.cached_property
    def _exact(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.columns
        P = rr_apply(self.lambdas, Scaled(np.eye(n, dtype=np.int64).astype(object), 1))
        return P.num[self.rows], np.full(self.rows.size, P.den, dtype=object)

    def exact(self):
        return self._exact

    def floats(self) -> np.ndarray:
        return kron_rows(self.kron, [2] * len(self.kron), self.rows)

    def restricted(self, rows: np.ndarray) -> KronChannel:
        return KronChannel(self.lambdas, rows)


class OrbitSumChannel(Channel):
    def __init__(self, lambdas: Sequence, ids: np.ndarray, count: int, reps: np.ndarray):
        self.lambdas, self.ids, self.columns, self.reps = tuple(lambdas), ids, count, reps

    def _indicator(self, dtype):
        ind = np.zeros((self.ids.size, self.columns), dtype=dtype)
        ind[np.arange(self.ids.size), self.ids] = 1
        return ind

    @functools.cached_property
    def _exact(self) -> tuple[np.ndarray, np.ndarray]:
        A = rr_apply(self.lambdas, Scaled(self._indicator(object), 1))
        return A.num[self.reps], np.full(self.reps.size, A.den, dtype=object)

    def exact(self):
        return self._exact

    def floats(self) -> np.ndarray:
        SP = kron_apply([rr_channel(float(lam)) for lam in self.lambdas],
                        self._indicator(np.float64))
        return SP[self.reps]


@functools.lru_cache(maxsize=8)
def spread_exact(space: OrbitSpace) -> tuple[np.ndarray, np.ndarray]:
    """K[W, J] = num[W, J] / den[W] exactly: a Kronecker product of the classes' blocks
    comb(n, j) M_c[w, j] / comb(n, w) (theory/orbits/space.py)."""
    from dpverify.theory.orbits.space import class_matrix_t, denominator

    num = np.ones((1, 1), dtype=object)
    den = np.ones(1, dtype=object)
    for n, lam in zip(space.sizes, space.lambdas, strict=True):
        p, q = lambda_pq(lam)
        rows = class_matrix_t(p, q, n).entries()  # row j, column w
        block = np.array([[math.comb(n, j) * int(rows[j * (n + 1) + w]) for j in range(n + 1)]
                          for w in range(n + 1)], dtype=object)
        num = np.kron(num, block)
        den = np.kron(den, np.array([math.comb(n, w) * denominator(p, q, n)
                                     for w in range(n + 1)], dtype=object))
    return num, den


@functools.lru_cache(maxsize=8)
def class_blocks(space: OrbitSpace) -> tuple[np.ndarray, ...]:
    """The classes' blocks K_c in floats (hints only: the certificates are exact or
    enclosed), K = K_1 (x) ... (x) K_C. A class's row w is the law of the released ones
    given w ones: K_c[w, .] = coefficients of ((1 - a) + a z)^w ((1 - b) + b z)^(n - w),
    a = p / (p + q), b = q / (p + q) (K[W, J] = M[J, W], theory/orbits/space.py), built
    from the powers by products of non-negative polynomials: stable, and entries below the
    float range become 0. (The exact integers of class_matrix_t, divided, took minutes at
    n = 1000.)"""
    out = []
    for n, lam in zip(space.sizes, space.lambdas, strict=True):
        p, q = lambda_pq(Fraction(lam))
        a, b = float(Fraction(p, p + q)), float(Fraction(q, p + q))
        ones, zeros = [np.ones(1)], [np.ones(1)]
        for _ in range(n):
            ones.append(np.convolve(ones[-1], [1.0 - a, a]))
            zeros.append(np.convolve(zeros[-1], [1.0 - b, b]))
        block = np.array([np.convolve(ones[w], zeros[n - w]) for w in range(n + 1)])
        block.setflags(write=False)
        out.append(block)
    return tuple(out)


@functools.lru_cache(maxsize=8)
def spread_floats(space: OrbitSpace) -> np.ndarray:
    """K[W, J] in floats: the Kronecker product of the classes' blocks (class_blocks)."""
    out: np.ndarray = np.ones((1, 1))
    for block in class_blocks(space):
        out = np.kron(out, block)
    return out


class ClassChannel(Channel):
    def __init__(self, space: OrbitSpace, rows: np.ndarray):
        self.space, self.rows, self.columns = space, rows, space.count
        self.blocks = class_blocks(space)
        self.factors = self.blocks

    def exact(self):
        num, den = spread_exact(self.space)
        return num[self.rows], den[self.rows]

    def floats(self) -> np.ndarray:
        return kron_rows(self.blocks, self.space.dims, self.rows)

    def restricted(self, rows: np.ndarray) -> ClassChannel:
        return ClassChannel(self.space, rows)


class TranscriptChannel(Channel):
    def __init__(self, tr, mask: np.ndarray):
        self.tr, self.mask, self.columns = tr, mask, int(tr.num.shape[1])

    def exact(self):
        if not self.tr.exact:
            raise ValueError("a float protocol has no exact coefficients")
        num = self.tr.num[self.mask]
        return num, np.full(num.shape[0], self.tr.den, dtype=object)

    def floats(self) -> np.ndarray:
        return self.tr.floats()[self.mask]

    def live(self, exact: bool) -> np.ndarray:
        if exact:
            return np.flatnonzero(np.any(self.exact()[0] != 0, axis=0))
        return np.flatnonzero(np.any(self.floats() > 0, axis=0))
