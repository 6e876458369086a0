"""Per-axis matrices and the one transform of the checker: sums over a grid of inputs
(docs/theory.md 2.5, 2.8, 6.2, 7.4).

A certificate's inequalities and accuracies are all sums

    out[s] = sum_x prod_i F_i[x_i][s_i] v[x]

over the points x of a grid with one axis per party (its bit or symbol) or per class of
parties (the number of ones in the class), mixed radix with the first axis most
significant, for one matrix F_i per axis: RR's corners (theory.md 1.3), the extreme rays
of a party's DP cone (6.2), the four rays with delta and their hockey-stick parts (7.4), a
class's orbit transform (2.8), or, for a lower end, a protocol's channel read backwards
(F[t][x] = P(t | x)). `transform` applies the product one axis at a time. A factor holds
integers, its true entries times `scale` > 0; the interval checker's factors hold arb balls
(scale 1) and use the same transform.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from flint import fmpz_poly

T = TypeVar("T")

# A class of at most this many parties is mixed by its (n + 1) x (n + 1) matrix; a larger
# one by Horner's scheme on its polynomials, point by point (the same sums, no matrix).
SMALL_CLASS = 16


class Factor(Protocol):
    """One axis's matrix F[a][s]: `points` values of a on the input side, `size` values of s
    on the output side, integer entries `scale` times the true ones."""

    @property
    def points(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def scale(self) -> int: ...

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        """chunks[a]: the entries at point a of this axis (all other axes alike, in one
        order); returns out[s] = sum_a F[a][s] chunks[a], entry by entry."""
        ...


def transform(factors: Sequence[Factor], column: list[T]) -> list[T]:
    """out[s] = sum_x prod_i F_i[x_i][s_i] column[x] (mixed radix, axis 1 most significant;
    times the product of the scales). One pass per axis: the first axis is mixed and moved
    to the end, so after the last pass every axis is back in its place."""
    values = column
    for factor in factors:
        rest = len(values) // factor.points
        chunks = [values[a * rest:(a + 1) * rest] for a in range(factor.points)]
        out = values[:1] * (rest * factor.size)  # every entry is set below
        for s, chunk in enumerate(factor.mix(chunks)):
            out[s::factor.size] = chunk
        values = out
    return values


def weighted_sum(weights: Sequence[Any], chunks: Sequence[list[T]]) -> list[T]:
    """sum_a weights[a] chunks[a], entry by entry (zero weights skipped)."""
    out: list[T] | None = None
    for w, chunk in zip(weights, chunks, strict=True):
        if w:
            out = [w * v for v in chunk] if out is None else \
                [x + w * v for x, v in zip(out, chunk, strict=True)]
    return out if out is not None else [0 * v for v in chunks[0]]


@dataclass(frozen=True)
class Dense:
    """A matrix given by its entries: F[a][s] = matrix[a][s] / scale."""

    matrix: tuple[tuple[int, ...], ...]
    scale: int = 1

    @property
    def points(self) -> int:
        return len(self.matrix)

    @property
    def size(self) -> int:
        return len(self.matrix[0])

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        return [weighted_sum([row[s] for row in self.matrix], chunks) for s in range(self.size)]


def transposed(rows: Sequence[Sequence[int]], scale: int) -> Dense:
    """The factor F[t][x] = rows[x][t] / scale: a channel (rows per input) read backwards,
    from its outputs to its inputs."""
    return Dense(tuple(zip(*rows, strict=True)), scale)


@dataclass(frozen=True)
class ClassOrbits:
    """A class of n parties at lambda = p / q, on the number of ones 0..n (theory.md 2.8):
    F[a][t] = the coefficient of z^t in (p z + q)^a (p + q z)^(n - a), over (p + q)^n.

    On masses (values summed over an orbit) it is M, the sums of RR's corners over orbits:
    sum_t F[a][t] v_a at t is sum over the corners s of weight t of sum_x T_s[x] v[x] for v
    constant on orbits (T_s at weight a summed over the inputs of weight t, times |a|/|t|:
    |W| M[J, W] = |J| M[W, J]). For n = 1 it is [[p, q], [q, p]]: RR's corner matrix."""

    n: int
    p: int
    q: int
    rows: tuple[tuple[int, ...], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """The matrix itself for a small class (computed for this factor only)."""
        rows: tuple[tuple[int, ...], ...] = ()
        if self.n <= SMALL_CLASS:
            up, down = fmpz_poly([self.q, self.p]), fmpz_poly([self.p, self.q])
            rows = tuple(_coefficients(up ** a * down ** (self.n - a), self.n)
                         for a in range(self.n + 1))
        object.__setattr__(self, "rows", rows)

    @property
    def points(self) -> int:
        return self.n + 1

    @property
    def size(self) -> int:
        return self.n + 1

    @property
    def scale(self) -> int:
        return (self.p + self.q) ** self.n

    def mix(self, chunks: list[list[Any]]) -> list[list[Any]]:
        if self.rows:
            return Dense(self.rows).mix(chunks)
        fibers = [self.horner(list(fiber)) for fiber in zip(*chunks, strict=True)]
        return [list(column) for column in zip(*fibers, strict=True)]

    def horner(self, y: list[int]) -> list[int]:
        """The coefficients of sum_a y_a (p z + q)^a (p + q z)^(n - a): D_0 = y_0,
        D_a = (p + q z) D_(a-1) + y_a (p z + q)^a."""
        up, down = fmpz_poly([self.q, self.p]), fmpz_poly([self.p, self.q])
        total, power = fmpz_poly([y[0]]), fmpz_poly([1])
        for value in y[1:]:
            power *= up
            total = total * down + value * power
        return _coefficients(total, self.n)


def _coefficients(poly: Any, n: int) -> tuple[int, ...]:
    """The n + 1 coefficients of an integer polynomial of degree at most n, z^0 first."""
    coeffs = [int(c) for c in poly.coeffs()]
    return tuple(coeffs + [0] * (n + 1 - len(coeffs)))
